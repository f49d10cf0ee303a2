/**
 * Area A sample client: a partner moving funds from its customer to a platform user's wallet.
 *
 * Written from `payment-services-interface.md` (Area A) and platform decisions §6 only: it uses Node's own
 * `node:crypto` and the global `fetch`, nothing of the platform's code and no npm package.
 *
 *   POST {partner_base_url}/partnerapi/v1/token     headers partner-id, partner-secret-key; body user_name, password
 *   POST {partner_base_url}/partnerapi/v1/gateway   Authorization: Bearer <access_token>; RSA2-signed JSON body
 *     create.unified.fundTransfer → confirm.fundTransfer → query.fundTransfer
 *
 * RSA2 (§6): drop `sign` and `sign_type`, sort keys ascending at every depth, `JSON.stringify` (no spaces), sign the
 * UTF-8 bytes with RSASSA-PKCS1-v1_5 + SHA-256 under the partner's private key, base64 → `sign`. Every gateway
 * response except UNAUTHENTICATED is signed the same way by the platform; verify it with `platform_public_key`.
 *
 * Run alone against `npm start`:
 *   node examples/partner-client.mjs [.data/demo-credentials.json]
 * or with PARTNER_ID, PARTNER_SECRET_KEY, PARTNER_USER_NAME, PARTNER_PASSWORD, PARTNER_PRIVATE_KEY_FILE,
 * PLATFORM_PUBLIC_KEY_FILE and RECEIVER_ID in the environment. PARTNER_BASE_URL defaults to http://127.0.0.1:3000.
 */
/* global fetch */
import { Buffer } from 'node:buffer';
import { createPrivateKey, createPublicKey, randomBytes, sign, verify } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/** Sorts object keys ascending at every depth (arrays keep their order). */
function sortKeysDeep(value) {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (value !== null && typeof value === 'object') {
    const sorted = Object.create(null); // a "__proto__" key stays an ordinary key
    for (const key of Object.keys(value).sort()) sorted[key] = sortKeysDeep(value[key]);
    return sorted;
  }
  return value;
}

/**
 * The §6 canonical string of a request or response object: top-level `sign` and `sign_type` dropped, keys sorted
 * at every depth, ECMAScript `JSON.stringify` (so `12.50` is written `12.5`, `/` and non-ASCII as they are).
 * @param {Record<string, unknown>} body
 * @returns {string}
 */
export function canonicalJson(body) {
  const { sign: _sign, sign_type: _signType, ...fields } = body;
  return JSON.stringify(sortKeysDeep(fields));
}

/**
 * Signs a gateway request: returns a copy with `sign_type` "RSA2" and `sign` (base64 RSASSA-PKCS1-v1_5/SHA-256).
 * @param {Record<string, unknown>} body
 * @param {string | import('node:crypto').KeyObject} privateKey the partner's private key (PEM or KeyObject)
 */
export function signRequest(body, privateKey) {
  const signature = sign('sha256', Buffer.from(canonicalJson(body), 'utf8'), privateKey);
  return { ...body, sign_type: 'RSA2', sign: signature.toString('base64') };
}

/**
 * Verifies the `sign` of a gateway response (or of any signed body) with the platform public key.
 * @returns {boolean} false for a missing, malformed or wrong signature
 */
export function verifyResponse(body, platformPublicKey) {
  if (!body || typeof body.sign !== 'string' || body.sign.length === 0) return false;
  try {
    return verify('sha256', Buffer.from(canonicalJson(body), 'utf8'), platformPublicKey, Buffer.from(body.sign, 'base64'));
  } catch {
    return false;
  }
}

/**
 * A partner's client of Area A. Every method answers `{ status, body, verified }`: the HTTP status, the parsed JSON
 * body, and whether the response signature checked out (`null` for the unsigned token and UNAUTHENTICATED answers).
 */
export class PartnerClient {
  /**
   * @param {object} options
   * @param {string} options.baseUrl `{partner_base_url}`, e.g. http://127.0.0.1:3000
   * @param {string} options.partnerId `partner-id` header
   * @param {string} options.partnerSecretKey `partner-secret-key` header
   * @param {string} options.userName token request `user_name`
   * @param {string} options.password token request `password`
   * @param {string} options.privateKeyPem the partner's RSA private key (signs requests)
   * @param {string} options.platformPublicKeyPem the platform public key from onboarding (verifies responses)
   * @param {(event: object) => void} [options.onExchange] called with every request/response (for transcripts)
   */
  constructor(options) {
    this.options = options;
    this.privateKey = createPrivateKey(options.privateKeyPem);
    this.platformPublicKey = createPublicKey(options.platformPublicKeyPem);
    this.accessToken = '';
    this.tokenExpiresAt = 0;
  }

  async #post(path, headers, body, { rawBody } = {}) {
    const url = `${this.options.baseUrl}${path}`;
    const payload = rawBody ?? JSON.stringify(body);
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });
    const text = await response.text();
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    const signed = parsed && typeof parsed === 'object' && 'sign' in parsed;
    const result = { status: response.status, body: parsed, verified: signed ? verifyResponse(parsed, this.platformPublicKey) : null };
    this.options.onExchange?.({ area: 'A', method: 'POST', path, request: body, response: result });
    return result;
  }

  /** A1: asks for an access token and keeps it for the gateway calls. */
  async requestToken({ userName = this.options.userName, password = this.options.password } = {}) {
    const result = await this.#post(
      '/partnerapi/v1/token',
      { 'partner-id': this.options.partnerId, 'partner-secret-key': this.options.partnerSecretKey },
      { user_name: userName, password },
    );
    if (result.status === 200 && result.body?.success) {
      this.accessToken = result.body.data.access_token;
      this.tokenExpiresAt = Date.now() + result.body.data.expire_in * 1000;
    }
    return result;
  }

  /**
   * A2: one signed gateway call. Fetches a token first when there is none or it is about to expire.
   * @param {string} service e.g. create.unified.fundTransfer
   * @param {Record<string, unknown>} fields the service's other fields
   * @param {{ tamper?: (signed: object) => object }} [options] `tamper` edits the signed body before sending
   *   (to show what a wrong signature gets)
   */
  async gateway(service, fields, { tamper } = {}) {
    if (!this.accessToken || Date.now() > this.tokenExpiresAt - 30_000) {
      const token = await this.requestToken();
      if (token.status !== 200) return token;
    }
    let body = signRequest({ service, ...fields }, this.privateKey);
    if (tamper) body = tamper(body);
    return this.#post('/partnerapi/v1/gateway', { authorization: `Bearer ${this.accessToken}` }, body);
  }

  /** Step 1: create a pre-transfer; `data.receiver_name` is shown to the sender for confirmation. */
  createTransfer({ out_trade_no, receiver_id, sender_name, amount, currency = 'USD' }) {
    return this.gateway('create.unified.fundTransfer', { out_trade_no, receiver_id, sender_name, amount, currency });
  }

  /** Step 2, after debiting the partner's own customer: credits the receiver. */
  confirmTransfer({ pre_transfer_id, partner_transaction_id }) {
    return this.gateway('confirm.fundTransfer', { pre_transfer_id, partner_transaction_id });
  }

  /** The outcome of a transfer by the partner's reference: result_code SUCCESS (with fund_transfer_id) or PENDING. */
  queryTransfer({ out_trade_no }) {
    return this.gateway('query.fundTransfer', { out_trade_no });
  }
}

/** Builds a PartnerClient from the JSON file `npm start` writes (`.data/demo-credentials.json`). */
export function partnerClientFromDemoCredentials(credentials, baseUrl, extra = {}) {
  return new PartnerClient({
    baseUrl,
    partnerId: credentials.partner.partner_id,
    partnerSecretKey: credentials.partner.partner_secret_key,
    userName: credentials.partner.user_name,
    password: credentials.partner.password,
    privateKeyPem: credentials.partner.private_key,
    platformPublicKeyPem: credentials.platform_public_key,
    ...extra,
  });
}

/** True when this file is the script node was started with. */
function isMain(moduleUrl) {
  try {
    return Boolean(process.argv[1]) && moduleUrl === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

async function main() {
  const baseUrl = process.env.PARTNER_BASE_URL ?? 'http://127.0.0.1:3000';
  const file = process.argv[2] ?? process.env.DEMO_CREDENTIALS;
  let client;
  let receiverId = process.env.RECEIVER_ID;
  if (file) {
    const credentials = JSON.parse(readFileSync(file, 'utf8'));
    client = partnerClientFromDemoCredentials(credentials, baseUrl);
    receiverId ??= credentials.users?.[0]?.phone_number;
  } else {
    const need = (name) => process.env[name] ?? (() => { throw new Error(`set ${name} or pass the demo credentials file`); })();
    client = new PartnerClient({
      baseUrl,
      partnerId: need('PARTNER_ID'),
      partnerSecretKey: need('PARTNER_SECRET_KEY'),
      userName: need('PARTNER_USER_NAME'),
      password: need('PARTNER_PASSWORD'),
      privateKeyPem: readFileSync(need('PARTNER_PRIVATE_KEY_FILE'), 'utf8'),
      platformPublicKeyPem: readFileSync(need('PLATFORM_PUBLIC_KEY_FILE'), 'utf8'),
    });
  }
  if (!receiverId) throw new Error('set RECEIVER_ID (a platform user id or phone number)');
  const show = (label, result) => console.log(`${label}: HTTP ${result.status} signature ${result.verified === null ? 'n/a' : result.verified ? 'ok' : 'BAD'}\n  ${JSON.stringify(result.body)}`);
  const out_trade_no = `SAMPLE${Date.now()}${randomBytes(3).toString('hex')}`.toUpperCase();
  show('token', await client.requestToken());
  const created = await client.createTransfer({ out_trade_no, receiver_id: receiverId, sender_name: 'Sample Sender', amount: 1.25 });
  show('create.unified.fundTransfer', created);
  if (created.status !== 200) process.exit(1);
  console.log(`  → show "${created.body.data.receiver_name}" to the sender, debit them, then confirm`);
  const confirmed = await client.confirmTransfer({
    pre_transfer_id: created.body.data.pre_transfer_id,
    partner_transaction_id: `PTX${out_trade_no}`.slice(0, 64),
  });
  show('confirm.fundTransfer', confirmed);
  const queried = await client.queryTransfer({ out_trade_no });
  show('query.fundTransfer', queried);
  const ok = confirmed.status === 200 && queried.body?.data?.result_code === 'SUCCESS' && [created, confirmed, queried].every((r) => r.verified);
  process.exit(ok ? 0 : 1);
}

if (isMain(import.meta.url)) {
  main().catch((error) => {
    console.error(`partner-client: ${error.message}`);
    process.exit(1);
  });
}
