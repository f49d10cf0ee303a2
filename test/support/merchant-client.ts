/**
 * A merchant's client of Area C for tests and benchmarks: signs every POST per platform decisions §7 (canonical
 * query string, RSA2 with the merchant's private key), sends the merchant headers and the bearer session token.
 *
 * As a merchant's own client should: every login body carries the current `timestamp` and a fresh `nonce` (a signed
 * login is accepted once), and every money-moving action a fresh `request_id` unless the test gives one (the same
 * signed body answers its first answer: a test that means to repeat a request sends the same `request_id`, or the
 * same raw body).
 */
import { createPrivateKey, randomUUID, type KeyObject } from 'node:crypto';
import { request } from 'undici';
import { signRequestParameters } from '../../src/crypto/rsa2';
import { parseJsonLossless } from '../../src/money';
import { createMerchant, type Merchant, type MerchantCredentials } from '../../src/onboarding';
import type { PlatformDeps } from '../../src/platform-deps';

/** The Area C actions that move or hold money: each call is one movement, named by its `request_id`. */
export const MONEY_MOVING_SERVICES: ReadonlySet<string> = new Set([
  'transfer', 'pay_by_token', 'block_money', 'cancel_block_money',
  'deposit_by_local_card', 'deposit_by_bank_account', 'deposit_by_visa_master', 'confirm_payments', 'refund_deposit', 'payout_to_bank',
]);

/** `body` with the current Unix `timestamp` and a fresh `nonce` where it has none: what a signed login needs. */
export function freshLogin(body: Record<string, unknown>): Record<string, unknown> {
  return { timestamp: Math.floor(Date.now() / 1000), nonce: randomUUID(), ...body };
}

export interface MerchantClientOptions {
  baseUrl: string;
  merchantId: string;
  merchantSecretKey: string;
  privateKeyPem: string;
  userName: string;
  password: string;
}

export interface AreaCResponse {
  status: number;
  /** Parsed with JSON.parse (numbers as JS numbers), for equality checks. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** The raw text, for exact amount checks. */
  text: string;
  headers: Headers;
}

export class MerchantClient {
  token = '';

  private readonly privateKey: KeyObject;

  constructor(readonly options: MerchantClientOptions) {
    this.privateKey = createPrivateKey(options.privateKeyPem);
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      'content-type': 'application/json',
      'merchant-id': this.options.merchantId,
      'merchant-secret-key': this.options.merchantSecretKey,
      ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
      ...extra,
    };
  }

  /** POSTs `body` signed (unless `raw` text is given). */
  async post(
    path: string,
    body: Record<string, unknown>,
    options: { headers?: Record<string, string>; sign?: boolean; raw?: string } = {},
  ): Promise<AreaCResponse> {
    const sent = path === '/login' ? freshLogin(body) : body;
    const payload = options.raw ?? JSON.stringify(options.sign === false ? sent : signRequestParameters(sent, this.privateKey));
    // undici's request (not fetch): benchmarks run this client beside the platform on the same cores.
    const response = await request(`${this.options.baseUrl}${path}`, { method: 'POST', headers: this.headers(options.headers), body: payload });
    const text = await response.body.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, item);
    }
    return { status: response.statusCode, body: parsed, text, headers };
  }

  /** Logs in and keeps the token. */
  async login(): Promise<AreaCResponse> {
    const response = await this.post('/login', { user_name: this.options.userName, password: this.options.password });
    if (response.status === 200) this.token = response.body.data.token;
    return response;
  }

  /** One signed /do-action call; a money-moving one gets a fresh `request_id` unless `fields` has one. */
  action(service: string, fields: Record<string, unknown> = {}, options: { headers?: Record<string, string>; sign?: boolean } = {}) {
    const requestId = MONEY_MOVING_SERVICES.has(service) && !('request_id' in fields) ? { request_id: randomUUID() } : {};
    return this.post('/do-action', { service, ...requestId, ...fields }, options);
  }

  /** `data` of a successful action parsed losslessly (exact amounts). */
  static lossless(response: AreaCResponse): unknown {
    return parseJsonLossless(response.text);
  }
}

/**
 * Onboards a merchant (as `payments admin merchants create` does) and returns a client for it against the façade at
 * `facadeUrl`, not yet logged in.
 */
export async function onboardMerchantClient(
  deps: PlatformDeps,
  facadeUrl: string,
  name: string,
): Promise<{ client: MerchantClient; merchant: Merchant; credentials: MerchantCredentials }> {
  const { merchant, credentials } = await createMerchant(deps, { name, callback_url: 'https://merchant.example/callback' });
  const client = new MerchantClient({
    baseUrl: facadeUrl,
    merchantId: merchant.id,
    merchantSecretKey: credentials.merchant_secret_key,
    privateKeyPem: credentials.private_key!,
    userName: credentials.api_user_name,
    password: credentials.api_password,
  });
  return { client, merchant, credentials };
}
