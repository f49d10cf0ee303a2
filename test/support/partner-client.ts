/**
 * An Area A partner as a test would be one: gets a token, signs gateway requests with its private key (RSA2 over
 * the canonical JSON of platform decisions §6) and verifies every signed response with the platform public key.
 */
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { request } from 'undici';
import { canonicalJson, signRsa2, verifyRsa2 } from '../../src/crypto/rsa2';
import { parseJsonLossless } from '../../src/money';

export interface PartnerKeys {
  privateKey: KeyObject;
  publicKeyPem: string;
}

/** A fresh RSA-2048 key pair for a test partner. */
export function generatePartnerKeys(): PartnerKeys {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { privateKey: pair.privateKey, publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }) as string };
}

export interface GatewayReply {
  status: number;
  /** Parsed losslessly: numbers are LosslessNumber (compare with `String(x)`). */
  body: Record<string, unknown>;
  text: string;
  /** true when `sign` verifies with the platform public key; false when present and wrong; undefined if absent. */
  signValid: boolean | undefined;
}

export class PartnerClient {
  accessToken?: string;
  /** Parsed once, as a partner keeps it: parsing the PEM on every reply cost the bench client 2 % of its CPU. */
  private readonly platformPublicKey: KeyObject;

  constructor(
    readonly baseUrl: string,
    readonly credentials: { partner_id: string; partner_secret_key: string; user_name: string; password: string },
    readonly keys: PartnerKeys,
    readonly platformPublicKeyPem: string,
  ) {
    this.platformPublicKey = createPublicKey(platformPublicKeyPem);
  }

  /** A1. Returns the HTTP status and JSON body. */
  async token(overrides: { headers?: Record<string, string>; body?: unknown } = {}): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await fetch(`${this.baseUrl}/partnerapi/v1/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'partner-id': this.credentials.partner_id,
        'partner-secret-key': this.credentials.partner_secret_key,
        ...overrides.headers,
      },
      body: JSON.stringify(overrides.body ?? { user_name: this.credentials.user_name, password: this.credentials.password }),
    });
    const body = (await response.json()) as Record<string, unknown>;
    if (response.status === 200) this.accessToken = (body.data as { access_token: string }).access_token;
    return { status: response.status, body };
  }

  /** Signs `body` (adds sign_type and sign) unless `sign` is already given. */
  sign(body: Record<string, unknown>): Record<string, unknown> {
    if ('sign' in body) return body;
    return { ...body, sign_type: 'RSA2', sign: signRsa2(canonicalJson(body), this.keys.privateKey) };
  }

  /**
   * A2. `body` is signed unless it carries `sign`; `rawBody` sends text as is. `token` overrides the bearer token
   * (null: no Authorization header).
   */
  async gateway(
    body: Record<string, unknown>,
    options: { token?: string | null; rawBody?: string; tamper?: (signed: Record<string, unknown>) => Record<string, unknown> } = {},
  ): Promise<GatewayReply> {
    const token = options.token === undefined ? this.accessToken : options.token;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token !== null && token !== undefined) headers.authorization = `Bearer ${token}`;
    let signed = this.sign(body);
    if (options.tamper) signed = options.tamper(signed);
    // undici's request (not fetch): benchmarks run this client beside the platform on the same cores.
    const response = await request(`${this.baseUrl}/partnerapi/v1/gateway`, {
      method: 'POST',
      headers,
      body: options.rawBody ?? JSON.stringify(signed),
    });
    const text = await response.body.text();
    const parsed = parseJsonLossless(text) as Record<string, unknown>;
    let signValid: boolean | undefined;
    if ('sign' in parsed) signValid = verifyRsa2(canonicalJson(parsed), parsed.sign, this.platformPublicKey);
    return { status: response.statusCode, body: parsed, text, signValid };
  }
}
