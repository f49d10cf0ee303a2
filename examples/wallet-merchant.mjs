/**
 * Area C sample client: a merchant using the wallet interface (login + the `/do-action` services).
 *
 * Written from `payment-services-interface.md` (Area C), platform decisions §7 and the Area C instrument decisions
 * (docs/area-c.md) only: Node's `node:crypto` and the global `fetch`, nothing of the platform's code and no npm
 * package.
 *
 *   every call    headers merchant-id, merchant-secret-key; body signed: `sign_type` RSA2 + `sign`
 *   POST /login       {user_name, password, timestamp, nonce} → data.token (opaque), data.user
 *   POST /do-action   Authorization: Bearer <token>; {service, ...fields}
 *
 * Replays: the interface's login is {user_name, password}; this client adds the optional `timestamp` (Unix seconds),
 * with which the platform accepts the signed body once and only within a few minutes of its clock, so a captured
 * login opens no session. `login()` signs a fresh one each time (a random `nonce` keeps two logins in one second
 * apart). A money-moving service moves money once per signed body: the same body sent again answers the
 * first answer, whatever `Idempotency-Key` comes with it. Each money-moving method below therefore sends a fresh
 * `request_id` (a new movement) unless you pass one: to retry a call whose answer was lost, call it again with the
 * same fields and the same `request_id`.
 *
 * A signed value must not hold `&` followed by `=` (as in a redirect_url `?a=1&b=2`): the canonical string could not
 * tell it from more parameters, so the platform refuses it on that field.
 *
 * §7 canonical string: drop `sign`, `sign_type` and null/undefined/"" values; sort keys ascending; join `key=value`
 * with `&`, no percent-encoding; numbers and booleans as `String()` writes them; arrays and objects as
 * `[` + JSON.stringify(value) + `]`. Signature: RSASSA-PKCS1-v1_5 + SHA-256 with the merchant's private key, base64.
 *
 * Encrypted fields (holder_name, bank_code, bank_number, sourceOfFunds, security_code): base64 of an RSA ciphertext
 * under the platform public key. RSAES-OAEP with SHA-256 is the recommended padding; OAEP with SHA-1 and
 * RSAES-PKCS1-v1_5 (the interface's "PKCS1 mode") are accepted too (`encryptField(..., { padding })`).
 *
 * Run alone against `npm start`:
 *   node examples/wallet-merchant.mjs [.data/demo-credentials.json]
 * or with MERCHANT_ID, MERCHANT_SECRET_KEY, MERCHANT_API_USER_NAME, MERCHANT_API_PASSWORD, MERCHANT_PRIVATE_KEY_FILE,
 * PLATFORM_PUBLIC_KEY_FILE set. MERCHANT_BASE_URL defaults to http://127.0.0.1:3000.
 */
/* global fetch */
import { Buffer } from 'node:buffer';
import { constants, createPrivateKey, createPublicKey, publicEncrypt, randomBytes, randomUUID, sign } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { URL, URLSearchParams, pathToFileURL } from 'node:url';

/** One value as written after `key=` (§7). */
export function canonicalValue(value) {
  if (value !== null && typeof value === 'object') return `[${JSON.stringify(value)}]`;
  return String(value);
}

/**
 * The §7 canonical string of a request body.
 * Example: `{service: "transfer", amount: 10.5, memo: "", sign: "…"}` → `amount=10.5&service=transfer`.
 * @param {Record<string, unknown>} parameters
 * @returns {string}
 */
export function canonicalQueryString(parameters) {
  return Object.keys(parameters)
    .filter((key) => key !== 'sign' && key !== 'sign_type')
    .filter((key) => parameters[key] !== null && parameters[key] !== undefined && parameters[key] !== '')
    .sort()
    .map((key) => `${key}=${canonicalValue(parameters[key])}`)
    .join('&');
}

/**
 * Signs a request body: returns a copy with `sign_type` "RSA2" and `sign`.
 * @param {Record<string, unknown>} parameters
 * @param {string | import('node:crypto').KeyObject} privateKey the merchant's RSA private key
 */
export function signParameters(parameters, privateKey) {
  const signature = sign('sha256', Buffer.from(canonicalQueryString(parameters), 'utf8'), privateKey);
  return { ...parameters, sign_type: 'RSA2', sign: signature.toString('base64') };
}

/** A new movement's `request_id`: any 1–255 visible ASCII characters, unique per merchant (a UUID is a good choice). */
export function newRequestId() {
  return randomUUID();
}

/** The paddings the platform accepts for encrypted fields. */
export const PADDINGS = {
  /** RSAES-OAEP, SHA-256 digest and MGF1-SHA-256 (recommended). */
  'oaep-sha256': { padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
  /** RSAES-OAEP with SHA-1 (what many libraries call plain "OAEP"). */
  'oaep-sha1': { padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha1' },
  /** RSAES-PKCS1-v1_5, the interface's "PKCS1 mode". */
  pkcs1: { padding: constants.RSA_PKCS1_PADDING },
};

/**
 * Encrypts one field value for the platform: base64 of RSA(platform public key, UTF-8 plaintext).
 * A JSON field (sourceOfFunds) is passed as an object and encrypted as its JSON text.
 * @param {string | object} value
 * @param {string | import('node:crypto').KeyObject} platformPublicKey
 * @param {{ padding?: keyof typeof PADDINGS }} [options] default 'oaep-sha256'
 * @returns {string}
 */
export function encryptField(value, platformPublicKey, { padding = 'oaep-sha256' } = {}) {
  const plaintext = typeof value === 'string' ? value : JSON.stringify(value);
  const scheme = PADDINGS[padding];
  if (!scheme) throw new Error(`unknown padding ${padding}`);
  return publicEncrypt({ key: platformPublicKey, ...scheme }, Buffer.from(plaintext, 'utf8')).toString('base64');
}

/** Decodes the `result` of a Visa/Master confirmation (base64 of `{success, code, message, data:{transaction_ref}}`). */
export function decodeConfirmationResult(result) {
  return JSON.parse(Buffer.from(result, 'base64').toString('utf8'));
}

const HTML_ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", apos: "'" };

function decodeHtmlAttribute(text) {
  return text.replace(/&(amp|lt|gt|quot|#39|apos|#x([0-9a-f]+)|#(\d+));/gi, (whole, name, hex, dec) => {
    if (hex) return String.fromCodePoint(parseInt(hex, 16));
    if (dec) return String.fromCodePoint(Number(dec));
    return HTML_ENTITIES[name.toLowerCase()] ?? whole;
  });
}

function attribute(tag, name) {
  const match = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(tag);
  return match ? decodeHtmlAttribute(match[1] ?? match[2] ?? match[3] ?? '') : undefined;
}

/**
 * The first `<form>` of an HTML document: its action, method and the named `<input>` values (what a browser
 * would submit without user input). Enough for the platform's confirmation and activation pages.
 * @returns {{ action: string, method: string, fields: Record<string, string> } | undefined}
 */
export function readForm(html) {
  const open = /<form\b[^>]*>/i.exec(html);
  if (!open) return undefined;
  const end = html.indexOf('</form>', open.index);
  const inner = html.slice(open.index, end < 0 ? undefined : end);
  const fields = {};
  for (const [tag] of inner.matchAll(/<(?:input|button)\b[^>]*>/gi)) {
    const name = attribute(tag, 'name');
    if (name && !fields[name]) fields[name] = attribute(tag, 'value') ?? '';
  }
  return { action: attribute(open[0], 'action') ?? '', method: (attribute(open[0], 'method') ?? 'GET').toUpperCase(), fields };
}

/** The value of `<input ... name="<name>" value="...">` in an HTML document, or undefined. */
export function readHiddenInput(html, name) {
  for (const [tag] of html.matchAll(/<input\b[^>]*>/gi)) if (attribute(tag, 'name') === name) return attribute(tag, 'value');
  return undefined;
}

/**
 * A merchant's client of Area C. `action()` answers `{ status, body }` (body parsed JSON: `{success, code, message,
 * data}` or `{success: false, code, message, error: {field: [messages]}}`).
 */
export class WalletMerchant {
  /**
   * @param {object} options
   * @param {string} options.baseUrl `{merchant_base_url}`, e.g. http://127.0.0.1:3000
   * @param {string} options.merchantId `merchant-id` header
   * @param {string} options.merchantSecretKey `merchant-secret-key` header
   * @param {string} options.userName the API user name (login)
   * @param {string} options.password the API password (login)
   * @param {string} options.privateKeyPem the merchant's RSA private key (signs every body)
   * @param {string} options.platformPublicKeyPem the platform public key (encrypts fields)
   * @param {keyof typeof PADDINGS} [options.padding] padding of encrypted fields, default 'oaep-sha256'
   * @param {(event: object) => void} [options.onExchange] called with every request/response (for transcripts)
   */
  constructor(options) {
    this.options = options;
    this.privateKey = createPrivateKey(options.privateKeyPem);
    this.platformPublicKey = createPublicKey(options.platformPublicKeyPem);
    this.token = '';
  }

  /** Encrypts a field with the client's padding (or the one given). */
  encrypt(value, padding = this.options.padding ?? 'oaep-sha256') {
    return encryptField(value, this.platformPublicKey, { padding });
  }

  /**
   * POSTs a signed body. `options.unsigned` sends it without `sign` (to show what that gets); `options.tamper`
   * edits the signed body before sending.
   */
  async post(path, body, { unsigned = false, tamper, headers = {} } = {}) {
    let payload = unsigned ? body : signParameters(body, this.privateKey);
    if (tamper) payload = tamper(payload);
    const response = await fetch(`${this.options.baseUrl}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'merchant-id': this.options.merchantId,
        'merchant-secret-key': this.options.merchantSecretKey,
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...headers,
      },
      body: JSON.stringify(payload),
    });
    const text = await response.text();
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    const result = { status: response.status, body: parsed };
    this.options.onExchange?.({ area: 'C', method: 'POST', path, request: body, response: result });
    return result;
  }

  /**
   * C1: logs in and keeps the session token for `/do-action`. The body carries the optional current Unix `timestamp`
   * and a random `nonce`: the platform accepts such a signed login once, within its login window.
   */
  async login({ userName = this.options.userName, password = this.options.password, timestamp = Math.floor(Date.now() / 1000) } = {}) {
    const result = await this.post('/login', { user_name: userName, password, timestamp, nonce: randomUUID() });
    if (result.status === 200 && result.body?.success) this.token = result.body.data.token;
    return result;
  }

  /** C2: one service call. */
  action(service, fields = {}, options) {
    return this.post('/do-action', { service, ...fields }, options);
  }

  // ---- catalogue ----------------------------------------------------------------------------------------------
  /** `data.FEE` (channel → fee object) and `data.EXCHANGE_RATE`. */
  listFees() { return this.action('list_fees'); }
  /** A page of banks: `data.{current_page, data[], from, last_page, per_page, to, total}`. */
  listBanks({ page, per_page } = {}) { return this.action('list_banks', { page, per_page }); }

  // ---- users --------------------------------------------------------------------------------------------------
  /** A user of this merchant with a USD wallet; the record carries `id`, `user_token` and `wallet_ref`. */
  createUser({ phone_number, email, first_name, last_name, address, currency = 'USD', birthday, gender, description }) {
    return this.action('create_user', { phone_number, email, first_name, last_name, address, currency, birthday, gender, description });
  }
  /** Updates the user `user_id` (or the merchant's user with `phone_number`). */
  updateUser({ user_id, phone_number, first_name, last_name, address, currency = 'USD', birthday, gender, description }) {
    return this.action('update_user', { user_id, phone_number, first_name, last_name, address, currency, birthday, gender, description });
  }

  // ---- money between wallets ----------------------------------------------------------------------------------
  /**
   * `data.reference` (TRF…); `fees_amount` goes to the platform, `fees_currency` must then be given too. A new
   * `request_id` each call (a new movement); pass the first call's `request_id` to retry it.
   */
  transfer({ from_user_id, to_user_id, amount, currency = 'USD', fees_amount, fees_currency, request_id = newRequestId() }) {
    return this.action('transfer', { from_user_id: String(from_user_id), to_user_id: String(to_user_id), amount, currency, fees_amount, fees_currency, request_id });
  }
  /** `data.pre_order_token` and `data.pre_order_url` (a hosted card payment page). */
  generatePreOrderToken({ out_trade_no, seller_code, description, amount, currency = 'USD', redirect_url, call_back_url, commission_rate }) {
    return this.action('generate_pre_order_token', { out_trade_no, seller_code, description, amount, currency, redirect_url, call_back_url, commission_rate });
  }
  /** Pays a preorder from the wallet of `user_id` (one of this merchant's users): `data.reference` (PAY…). */
  payByToken({ pre_order_token, user_id, request_id = newRequestId() }) { return this.action('pay_by_token', { pre_order_token, user_id, request_id }); }
  /** Holds `amount` on a user's wallet (`user_token` from the user record): `data.transaction_ref` (BLK…). */
  blockMoney({ user_token, amount, currency = 'USD', reference, request_id = newRequestId() }) { return this.action('block_money', { user_token, amount, currency, reference, request_id }); }
  /** Releases a hold: `data` = []. */
  cancelBlockMoney({ transaction_ref, request_id = newRequestId() }) { return this.action('cancel_block_money', { transaction_ref, request_id }); }

  // ---- tokenized instruments (holder names, numbers and card data travel encrypted) ----------------------------
  /** `data.token` of a local card; `bank_id` from list_banks, `card_number` is sent encrypted as `bank_code`. */
  tokenizeLocalCard({ user_id, holder_name, bank_id, card_number }, padding) {
    return this.action('tokenize_local_card', { user_id, holder_name: this.encrypt(holder_name, padding), bank_id: String(bank_id), bank_code: this.encrypt(card_number, padding) });
  }
  /** `data.{token, bank_number (last 4), qr_image, need_verify}`; scan the QR to activate the account. */
  tokenizeBankAccount({ user_id, holder_name, bank_id, account_number, call_back }, padding) {
    return this.action('tokenize_bank_account', { user_id, holder_name: this.encrypt(holder_name, padding), bank_id, bank_number: this.encrypt(account_number, padding), call_back });
  }
  /** `data.token` of a Visa/Master card; `card` = {number, securityCode, expiry: {month, year}}. */
  tokenizeVisaMaster({ user_id, holder_name, card }, padding) {
    const sourceOfFunds = { type: 'CARD', provided: { card } };
    return this.action('tokenize_visa_master', { user_id, holder_name: this.encrypt(holder_name, padding), sourceOfFunds: this.encrypt(sourceOfFunds, padding) });
  }

  // ---- deposits -------------------------------------------------------------------------------------------------
  /** OTP deposit: `data.{reference, token, token_type: 1, need_verify_trx: true}` → confirmPayments. */
  /** payout_to_bank (docs/payouts.md "Bank payouts"): the user's wallet to its verified bank account `token`. */
  payoutToBank({ user_id, token, amount, currency = 'USD', request_id = newRequestId() }) {
    return this.action('payout_to_bank', { user_id, token, amount, currency, request_id });
  }

  /** payout_status: one payout by its reference. */
  payoutStatus({ payout_reference }) { return this.action('payout_status', { payout_reference }); }

  depositByLocalCard({ token, amount, currency = 'USD', pre_order_token, request_id = newRequestId() }) {
    return this.action('deposit_by_local_card', { token, amount, currency, pre_order_token, request_id });
  }
  /** OTP deposit from an activated bank account. */
  depositByBankAccount({ token, amount, currency = 'USD', pre_order_token, user_id, request_id = newRequestId() }) {
    return this.action('deposit_by_bank_account', { token, amount, currency, pre_order_token, user_id, request_id });
  }
  /** Card deposit: `data.html_confirm_payment` is run by the payer (see submitHtmlConfirmPayment). */
  depositByVisaMaster({ token, security_code, amount, currency = 'USD', pre_order_token, request_id = newRequestId() }, padding) {
    return this.action('deposit_by_visa_master', { token, security_code: this.encrypt(security_code, padding), amount, currency, pre_order_token, request_id });
  }
  /** Confirms an OTP deposit: `token` is the deposit token (`dtk_…`), `password` the OTP. `data` = []. */
  confirmPayments({ user_id, token, password, request_id = newRequestId() }) { return this.action('confirm_payments', { user_id, token, password, request_id }); }

  /**
   * Does what the payer's browser does with `html_confirm_payment`: submits its form. With the preorder's
   * redirect_url the platform answers 303 to `redirect_url?result=<base64>` and this follows it (a GET, like a
   * browser); without one the answer is an HTML page with a hidden input `result`.
   * @returns {Promise<{status: number, location?: string, result?: object, redirected?: {status: number, body: string}}>}
   */
  async submitHtmlConfirmPayment(html, { follow = true } = {}) {
    const form = readForm(html);
    if (!form) throw new Error('html_confirm_payment holds no <form>');
    const action = new URL(form.action, this.options.baseUrl).href;
    const response = await fetch(action, {
      method: form.method,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.method === 'GET' ? undefined : new URLSearchParams(form.fields).toString(),
      redirect: 'manual',
    });
    const text = await response.text();
    const location = response.headers.get('location') ?? undefined;
    const submitted = { status: response.status, action, fields: Object.keys(form.fields) };
    if (location) {
      const encoded = new URL(location, action).searchParams.get('result');
      const out = { ...submitted, location, result: encoded ? decodeConfirmationResult(encoded) : undefined };
      if (follow) {
        const landed = await fetch(new URL(location, action).href);
        out.redirected = { status: landed.status, body: await landed.text() };
      }
      return out;
    }
    const hidden = readHiddenInput(text, 'result');
    return { ...submitted, html: text, result: hidden ? decodeConfirmationResult(hidden) : undefined };
  }

  /**
   * Does what the account holder does after scanning the activation QR: opens the activation URL and presses
   * "Activate account" (submits the page's form).
   */
  async activateBankAccount(activationUrl) {
    const page = await fetch(activationUrl);
    const html = await page.text();
    const form = readForm(html);
    if (page.status !== 200 || !form) return { status: page.status, html };
    const response = await fetch(new URL(form.action || activationUrl, activationUrl).href, {
      method: form.method,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form.fields).toString(),
      redirect: 'manual',
    });
    return { status: response.status, html: await response.text(), pageStatus: page.status };
  }
}

/** Builds a WalletMerchant from the JSON file `npm start` writes (`.data/demo-credentials.json`). */
export function walletMerchantFromDemoCredentials(credentials, baseUrl, extra = {}) {
  const merchant = credentials.merchant;
  return new WalletMerchant({
    baseUrl,
    merchantId: merchant.merchant_id,
    merchantSecretKey: merchant.merchant_secret_key,
    userName: merchant.api_user_name,
    password: merchant.api_password,
    privateKeyPem: merchant.private_key,
    // Encrypted fields use the field-encryption key (older credentials files name only platform_public_key).
    platformPublicKeyPem: credentials.field_encryption_public_key ?? merchant.field_encryption_public_key ?? credentials.platform_public_key ?? merchant.platform_public_key,
    ...extra,
  });
}

function isMain(moduleUrl) {
  try {
    return Boolean(process.argv[1]) && moduleUrl === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

async function main() {
  const baseUrl = process.env.MERCHANT_BASE_URL ?? 'http://127.0.0.1:3000';
  const file = process.argv[2] ?? process.env.DEMO_CREDENTIALS;
  const need = (name) => process.env[name] ?? (() => { throw new Error(`set ${name} or pass the demo credentials file`); })();
  const client = file
    ? walletMerchantFromDemoCredentials(JSON.parse(readFileSync(file, 'utf8')), baseUrl)
    : new WalletMerchant({
        baseUrl,
        merchantId: need('MERCHANT_ID'),
        merchantSecretKey: need('MERCHANT_SECRET_KEY'),
        userName: need('MERCHANT_API_USER_NAME'),
        password: need('MERCHANT_API_PASSWORD'),
        privateKeyPem: readFileSync(need('MERCHANT_PRIVATE_KEY_FILE'), 'utf8'),
        platformPublicKeyPem: readFileSync(need('PLATFORM_PUBLIC_KEY_FILE'), 'utf8'),
      });
  const show = (label, result) => console.log(`${label}: HTTP ${result.status}\n  ${JSON.stringify(result.body).slice(0, 400)}`);
  const login = await client.login();
  show('login', login);
  if (login.status !== 200) process.exit(1);
  show('list_fees', await client.listFees());
  show('list_banks', await client.listBanks({ per_page: 3 }));
  const suffix = randomBytes(3).readUIntBE(0, 3) % 900000 + 100000;
  const user = await client.createUser({ phone_number: `012${suffix}`, first_name: 'Sample', last_name: 'User', address: 'Phnom Penh' });
  show('create_user', user);
  if (user.status !== 200) process.exit(1);
  const order = await client.generatePreOrderToken({
    out_trade_no: `SAMPLE-${Date.now()}`, seller_code: client.options.merchantId, description: 'Sample order', amount: 1.5,
  });
  show('generate_pre_order_token', order);
  process.exit(order.status === 200 ? 0 : 1);
}

if (isMain(import.meta.url)) {
  main().catch((error) => {
    console.error(`wallet-merchant: ${error.message}`);
    process.exit(1);
  });
}
