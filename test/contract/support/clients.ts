/**
 * Clients of the three areas as a partner or merchant writes them from payment-services-interface.md and the platform
 * decisions alone: the documented headers and body fields, nothing the platform added (no `timestamp`, no `nonce`,
 * no `request_id`, no `Idempotency-Key`, no `X-Client-Address`). Signing is ./spec-signing.ts's.
 */
import type { MerchantCredentials as PrintedMerchantCredentials } from '../../../src/onboarding';
import { areaACanonical, rsa2Verify, signAreaA, signAreaC } from './spec-signing';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  /** The body read with JSON.parse (undefined when it is no JSON). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

/** One HTTP request; the body is sent as given (a string) or as JSON. */
export async function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Reply> {
  const body = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  const response = await fetch(url, {
    method: options.method ?? 'POST',
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
    body,
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

// ---- Area A ----

/** What a partner receives at registration (platform decisions §2 `partner create`), and its own private key. */
export interface PartnerCredentials {
  partner_id: string;
  partner_secret_key: string;
  user_name: string;
  password: string;
  platform_public_key: string;
  private_key: string;
}

export class AreaAPartner {
  accessToken = '';

  constructor(
    readonly baseUrl: string,
    readonly credentials: PartnerCredentials,
  ) {}

  /** A1 with the documented headers and body; keeps the token on success. */
  async token(overrides: { headers?: Record<string, string>; body?: unknown } = {}): Promise<Reply> {
    const reply = await send(`${this.baseUrl}/partnerapi/v1/token`, {
      headers: { 'partner-id': this.credentials.partner_id, 'partner-secret-key': this.credentials.partner_secret_key, ...overrides.headers },
      body: overrides.body ?? { user_name: this.credentials.user_name, password: this.credentials.password },
    });
    if (reply.status === 200) this.accessToken = reply.json.data.access_token;
    return reply;
  }

  /** A2: `body` signed with the partner's key (unless `signed` is given as is), the bearer token. */
  gateway(body: Record<string, unknown>, options: { signed?: Record<string, unknown>; token?: string } = {}): Promise<Reply> {
    return send(`${this.baseUrl}/partnerapi/v1/gateway`, {
      headers: { authorization: `Bearer ${options.token ?? this.accessToken}` },
      body: options.signed ?? signAreaA(body, this.credentials.private_key),
    });
  }

  /** True when a gateway answer's `sign` verifies with the platform public key over its canonical JSON. */
  responseSignatureValid(reply: Reply): boolean {
    return rsa2Verify(areaACanonical(reply.json), reply.json.sign, this.credentials.platform_public_key);
  }
}

// ---- Area B ----

export class AreaBMerchant {
  constructor(
    readonly baseUrl: string,
    readonly apiKey: string,
  ) {}

  payin(body: unknown, headers: Record<string, string> = { 'X-API-Key': this.apiKey }): Promise<Reply> {
    return send(`${this.baseUrl}/api/v1/payins`, { headers, body });
  }

  status(body: unknown, headers: Record<string, string> = { 'X-API-Key': this.apiKey }): Promise<Reply> {
    return send(`${this.baseUrl}/api/v1/payins/status`, { headers, body });
  }

  balance(headers: Record<string, string> = { 'X-API-Key': this.apiKey }): Promise<Reply> {
    return send(`${this.baseUrl}/api/v1/balance`, { method: 'GET', headers });
  }
}

// ---- Area C ----

/**
 * What a merchant receives at registration: the fields platform decisions §2 list for `merchant create` (the printed
 * JSON is checked field by field by ./onboarding.ts), `private_key` included since the platform generated the pair.
 */
export type MerchantCredentials = Pick<
  PrintedMerchantCredentials,
  'merchant_id' | 'merchant_secret_key' | 'api_user_name' | 'api_password' | 'api_key' | 'hmac_secret' | 'signature_header' | 'platform_public_key'
> & { private_key: string };

export class AreaCMerchant {
  token = '';

  constructor(
    readonly baseUrl: string,
    readonly credentials: MerchantCredentials,
  ) {}

  private headers(): Record<string, string> {
    return {
      'merchant-id': this.credentials.merchant_id,
      'merchant-secret-key': this.credentials.merchant_secret_key,
      ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
    };
  }

  /** POSTs `body` signed with the merchant's private key. */
  post(path: string, body: Record<string, unknown>, options: { headers?: Record<string, string> } = {}): Promise<Reply> {
    return send(`${this.baseUrl}${path}`, { headers: { ...this.headers(), ...options.headers }, body: signAreaC(body, this.credentials.private_key) });
  }

  /** C1 with exactly the documented body; keeps the token on success. */
  async login(body: Record<string, unknown> = { user_name: this.credentials.api_user_name, password: this.credentials.api_password }): Promise<Reply> {
    const reply = await this.post('/login', body);
    if (reply.status === 200) this.token = reply.json.data.token;
    return reply;
  }

  /** C2: one signed /do-action call. */
  action(service: string, fields: Record<string, unknown> = {}, options: { headers?: Record<string, string> } = {}): Promise<Reply> {
    return this.post('/do-action', { service, ...fields }, options);
  }
}
