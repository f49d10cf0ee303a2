/**
 * Area B sample client: a merchant taking crypto payins.
 *
 * Written from `payment-services-interface.md` (Area B) and platform decisions §4, §5 only: Node's `node:crypto`,
 * `node:http` and the global `fetch`, nothing of the platform's code and no npm package.
 *
 *   POST {base_url}/api/v1/payins          X-API-Key; {amount, out_trade_no, currency?, memo?} → invoice, fee, QR
 *   POST {base_url}/api/v1/payins/status   X-API-Key; {out_trade_no} → status, paid amount
 *   GET  {base_url}/api/v1/balance         X-API-Key → data.wallets[]
 *   webhooks to the merchant's callback_url: POST, body {success, code, event, data}, signed with the merchant's
 *   hmac_secret in the merchant's signature header (default X-Signature): lowercase hex HMAC-SHA256 of the raw body.
 *
 * The receiver below checks the signature over the raw bytes in constant time, answers 200 at once (401 on a bad
 * signature) and handles the event afterwards, once per `X-Webhook-Id` (a retried delivery carries the same id).
 * The amount to book is `data.amount` (what was actually paid), never the amount that was asked for.
 *
 * Run alone against `npm start`:
 *   node examples/payin-merchant.mjs [.data/demo-credentials.json]
 * or with MERCHANT_API_KEY, MERCHANT_HMAC_SECRET, MERCHANT_SIGNATURE_HEADER, MERCHANT_CALLBACK_URL set.
 * It creates a payin, listens on the callback URL and waits for the webhook. Pay the QR with the sandbox provider:
 *   curl -X POST http://127.0.0.1:3100/sandbox/payins/<invoice_reference>/pay -d '{"amount": 2.5}'
 * (or pass --sandbox-pay to let the script do it). BASE_URL defaults to http://127.0.0.1:3000.
 */
/* global fetch */
import { Buffer } from 'node:buffer';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import http from 'node:http';
import { clearTimeout, setTimeout } from 'node:timers';
import { URL, pathToFileURL } from 'node:url';

/** Lowercase hex HMAC-SHA256 of the raw body (a Buffer or the exact UTF-8 text) under the merchant's hmac_secret. */
export function webhookSignature(rawBody, hmacSecret) {
  return createHmac('sha256', hmacSecret).update(rawBody).digest('hex');
}

/**
 * Checks a webhook signature header value in constant time.
 * @param {Buffer | string} rawBody the body bytes exactly as received (never re-serialized JSON)
 * @param {string | undefined} signature the header value
 * @param {string} hmacSecret
 * @returns {boolean}
 */
export function verifyWebhookSignature(rawBody, signature, hmacSecret) {
  if (typeof signature !== 'string' || !/^[0-9a-fA-F]{64}$/.test(signature.trim())) return false;
  const expected = Buffer.from(webhookSignature(rawBody, hmacSecret), 'hex');
  const given = Buffer.from(signature.trim(), 'hex');
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * Starts the merchant's webhook receiver on the host and port of `callbackUrl`, answering POSTs on its path.
 * @param {object} options
 * @param {string} options.callbackUrl the merchant's callback_url, e.g. http://127.0.0.1:3999/webhooks/payments
 *   (port 0: any free port; the answer's `url` names the one taken)
 * @param {string} options.hmacSecret
 * @param {string} [options.signatureHeader] default X-Signature (matched case-insensitively, as HTTP headers are)
 * @param {(webhook: {id: string, event: string, attempt: number, body: object, rawBody: string}) => void} [options.onWebhook]
 *   called after the 200 was sent, once per X-Webhook-Id
 * @param {(rejected: {status: number, reason: string, rawBody: string}) => void} [options.onRejected]
 * @param {(req: http.IncomingMessage, res: http.ServerResponse, rawBody: Buffer) => boolean} [options.otherRoutes]
 *   handles requests on other paths (return true when answered)
 * @returns {Promise<{url: string, received: object[], waitFor: Function, close: () => Promise<void>}>}
 */
export async function startWebhookReceiver({ callbackUrl, hmacSecret, signatureHeader = 'X-Signature', onWebhook, onRejected, otherRoutes }) {
  const target = new URL(callbackUrl);
  const received = [];
  const seen = new Set();
  const waiters = new Set();
  const headerName = signatureHeader.toLowerCase();

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      const path = new URL(req.url ?? '/', callbackUrl).pathname;
      if (path !== target.pathname) {
        if (otherRoutes?.(req, res, rawBody)) return;
        res.writeHead(404).end();
        return;
      }
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      if (!verifyWebhookSignature(rawBody, req.headers[headerName], hmacSecret)) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid signature"}');
        onRejected?.({ status: 401, reason: 'invalid signature', rawBody: rawBody.toString('utf8') });
        return;
      }
      let body;
      try {
        body = JSON.parse(rawBody.toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      // Acknowledge first; the work happens after the answer (the platform retries anything but a quick 2xx).
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
      const id = String(req.headers['x-webhook-id'] ?? '');
      if (id && seen.has(id)) return; // a retry of an event already handled
      if (id) seen.add(id);
      const webhook = {
        id,
        event: String(req.headers['x-webhook-event'] ?? body.event ?? ''),
        attempt: Number(req.headers['x-webhook-attempt'] ?? 1),
        body,
        rawBody: rawBody.toString('utf8'),
      };
      received.push(webhook);
      onWebhook?.(webhook);
      for (const waiter of waiters) waiter(webhook);
    });
  });

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(target.port || 80), target.hostname, resolve);
  });

  const listening = new URL(callbackUrl);
  listening.port = String(server.address().port); // the port picked when callbackUrl names port 0
  return {
    url: listening.href,
    received,
    /**
     * Resolves with the first webhook (already received or arriving) for which `predicate` is true.
     * @throws after `timeoutMs` milliseconds
     */
    waitFor(predicate, timeoutMs = 30_000) {
      const already = received.find(predicate);
      if (already) return Promise.resolve(already);
      return new Promise((resolve, reject) => {
        const waiter = (webhook) => {
          if (!predicate(webhook)) return;
          clearTimeout(timer);
          waiters.delete(waiter);
          resolve(webhook);
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`no matching webhook within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * A merchant's client of the payin API. Every method answers `{ status, body }` (body parsed JSON).
 * Amounts are sent as JSON numbers (USDT: at most 6 decimals, minimum 0.01).
 */
export class PayinMerchant {
  /**
   * @param {object} options
   * @param {string} options.baseUrl `{base_url}`, e.g. http://127.0.0.1:3000
   * @param {string} options.apiKey the merchant's API key (`X-API-Key`)
   * @param {(event: object) => void} [options.onExchange] called with every request/response (for transcripts)
   */
  constructor(options) {
    this.options = options;
  }

  async #call(method, path, body, { apiKey = this.options.apiKey, idempotencyKey } = {}) {
    const headers = { accept: 'application/json' };
    if (apiKey !== null) headers['x-api-key'] = apiKey;
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${this.options.baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await response.text();
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
    const result = { status: response.status, body: parsed };
    this.options.onExchange?.({ area: 'B', method, path, request: body, response: result });
    return result;
  }

  /** B1: create a payin; `data.qrcode.content` is the payment URI, `data.qrcode.image` a base64 PNG of it. */
  createPayin({ amount, out_trade_no, currency, memo, ...extra }, options) {
    return this.#call('POST', '/api/v1/payins', { amount, out_trade_no, ...(currency ? { currency } : {}), ...(memo ? { memo } : {}), ...extra }, options);
  }

  /** B2: a payin's status (waiting, success, expired or close) and the amount paid; use it after a missed webhook. */
  payinStatus(out_trade_no, options) {
    return this.#call('POST', '/api/v1/payins/status', { out_trade_no }, options);
  }

  /**
   * A refund of a settled payin to the payer's address (docs/refunds.md): `{out_trade_no | invoice_reference, amount?,
   * reason?, address}`; answered `held`, decided by the `refund.succeeded` or `refund.failed` webhook.
   * `idempotencyKey` is required: the same key again (a retry) answers the first refund, never a second one, so make it
   * from your own refund record, not at random per attempt.
   */
  refund(body, { idempotencyKey, ...options }) {
    return this.#call('POST', '/api/v1/payins/refunds', body, { ...options, idempotencyKey });
  }

  /**
   * A payout of the wallet to a crypto address (docs/payouts.md): `{amount, currency: 'USDT', address, memo?,
   * out_trade_no?}`, `Idempotency-Key` required (a retry with it answers the first payout). The answer shows the fee.
   */
  payout(body, { idempotencyKey, ...options }) {
    return this.#call('POST', '/api/v1/payouts', body, { ...options, idempotencyKey });
  }

  /** One payout by `payout_reference` or `out_trade_no`. */
  payoutStatus(body, options) {
    return this.#call('POST', '/api/v1/payouts/status', body, options);
  }

  /** B3: available balances, `data.wallets[]` of {currency, balance, balance_units, decimals}. */
  balance(options) {
    return this.#call('GET', '/api/v1/balance', undefined, options);
  }

  /** The USDT entry of B3 (or undefined). */
  async usdtBalance() {
    const result = await this.balance();
    return result.body?.data?.wallets?.find((wallet) => wallet.currency === 'USDT');
  }
}

function isMain(moduleUrl) {
  try {
    return Boolean(process.argv[1]) && moduleUrl === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

async function main() {
  const args = process.argv.slice(2);
  const sandboxPay = args.includes('--sandbox-pay');
  const file = args.find((arg) => !arg.startsWith('--')) ?? process.env.DEMO_CREDENTIALS;
  const baseUrl = process.env.BASE_URL ?? 'http://127.0.0.1:3000';
  const sandboxUrl = process.env.SANDBOX_URL ?? 'http://127.0.0.1:3100';
  const merchant = file ? JSON.parse(readFileSync(file, 'utf8')).merchant : {
    api_key: process.env.MERCHANT_API_KEY,
    hmac_secret: process.env.MERCHANT_HMAC_SECRET,
    signature_header: process.env.MERCHANT_SIGNATURE_HEADER ?? 'X-Signature',
    callback_url: process.env.MERCHANT_CALLBACK_URL,
  };
  if (!merchant.api_key || !merchant.hmac_secret || !merchant.callback_url) throw new Error('pass the demo credentials file or set MERCHANT_API_KEY, MERCHANT_HMAC_SECRET, MERCHANT_CALLBACK_URL');
  const client = new PayinMerchant({ baseUrl, apiKey: merchant.api_key });
  const out_trade_no = `SAMPLE-${Date.now()}-${randomBytes(3).toString('hex')}`;
  const receiver = await startWebhookReceiver({
    callbackUrl: merchant.callback_url,
    hmacSecret: merchant.hmac_secret,
    signatureHeader: merchant.signature_header,
    onWebhook: (webhook) => console.log(`webhook ${webhook.event} (attempt ${webhook.attempt}): ${webhook.rawBody}`),
    onRejected: (rejected) => console.log(`webhook rejected: ${rejected.reason}`),
  });
  console.log(`listening for webhooks on ${receiver.url}`);
  console.log('balance before:', JSON.stringify((await client.usdtBalance()) ?? null));
  const created = await client.createPayin({ amount: 2.5, out_trade_no, memo: 'sample payin' });
  console.log(`create: HTTP ${created.status} ${JSON.stringify({ ...created.body, data: created.body?.data && { ...created.body.data, qrcode: { content: created.body.data.qrcode?.content, image: `<${created.body.data.qrcode?.image?.length ?? 0} base64 chars>` } } })}`);
  if (created.status !== 200) process.exit(1);
  const invoice = created.body.data.invoice_reference;
  if (sandboxPay) {
    const paid = await fetch(`${sandboxUrl}/sandbox/payins/${invoice}/pay`, { method: 'POST', body: '{"amount": 2.5}' });
    console.log(`sandbox pay: HTTP ${paid.status}`);
  } else {
    console.log(`pay it: curl -X POST ${sandboxUrl}/sandbox/payins/${invoice}/pay -d '{"amount": 2.5}'`);
  }
  const webhook = await receiver.waitFor((w) => w.body?.data?.out_trade_no === out_trade_no, 120_000);
  console.log(`booked ${webhook.body.data.amount} ${webhook.body.data.currency} (${webhook.body.data.payment_match_status})`);
  const status = await client.payinStatus(out_trade_no);
  console.log(`status: HTTP ${status.status} ${JSON.stringify(status.body)}`);
  console.log('balance after:', JSON.stringify((await client.usdtBalance()) ?? null));
  await receiver.close();
}

if (isMain(import.meta.url)) {
  main().catch((error) => {
    console.error(`payin-merchant: ${error.message}`);
    process.exit(1);
  });
}
