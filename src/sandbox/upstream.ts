/**
 * Sandbox upstream payin provider (`payments sandbox-upstream`, platform decisions §1, §4). Dev and test only;
 * never imported by production paths.
 *
 *   POST /payins                                  a forwarded payin (Authorization: Bearer UPSTREAM_API_KEY when
 *                                                 configured, X-Invoice-Reference, X-Notify-Url) → 200
 *                                                 {"qrcode": {"content": "tron:<address>?amount=…&token=<USDT TRC-20>"},
 *                                                 "trx_ref": …} (no image: the portal renders the PNG)
 *   POST /sandbox/payins/{invoice_reference}/pay  {"amount": n, "payer_address": "T…" | null} → notifies the portal
 *                                                 `status: success` with n and the payer's address (absent: a
 *                                                 sandbox payer's own per payin; null: none is sent)
 *   POST /sandbox/payins/{invoice_reference}/close              → notifies the portal `status: close`
 *   POST /payins/refunds                          a refund (docs/refunds.md "Providers"; Authorization as above,
 *                                                 Idempotency-Key, X-Notify-Url) → 200 its outcome, decided by the
 *                                                 address (SANDBOX_REFUND_ADDRESSES)
 *   POST /sandbox/refunds/{refund_reference}/decide  {"status": "succeeded" | "failed"} → decides a pending refund
 *                                                 and notifies the portal (`refund_succeeded` / `refund_failed`)
 *   POST /payins/payouts                          a payout (docs/payouts.md "Providers"; as refunds) → 200 its
 *                                                 outcome, decided by the address (SANDBOX_PAYOUT_ADDRESSES)
 *   POST /sandbox/payouts/{payout_reference}/decide  {"status": "succeeded" | "failed"} → decides a pending payout
 *                                                 and notifies the portal (`payout_succeeded` / `payout_failed`)
 *
 * Notifications are signed exactly as a real provider would: `X-Upstream-Signature` = hex HMAC-SHA256 of the raw
 * body under UPSTREAM_WEBHOOK_SECRET. The pay/close/decide routes answer with the portal's status code and body.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type net from 'node:net';
import { request } from 'undici';
import type { Config } from '../config';
import { hmacSha256Hex } from '../crypto/hmac';
import { constantTimeEqual } from '../crypto/secrets';
import { isLosslessNumber, parseAmount, parseJsonLossless, stringifyJson } from '../money';
import { createSandboxRefunds, type SandboxRefund, type SandboxRefundNotification } from './upstream-refunds';
import { createSandboxPayouts, type SandboxPayouts } from './upstream-payouts';

/** The Tether USDT TRC-20 contract on TRON mainnet, used as `token` in the payment URI. */
export const USDT_TRC20_CONTRACT = 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t';

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

function fakeTronAddress(): string {
  const bytes = randomBytes(33);
  return `T${[...bytes].map((byte) => BASE58[byte % BASE58.length]).join('')}`;
}

interface SandboxPayin {
  invoice_reference: string;
  notify_url: string;
  address: string;
  amount: string;
  /** USDT units this sandbox notified as paid (every success it sent), the bound of the payin's refunds. */
  paid_units: bigint;
  /** The sandbox payer's TRON address, sent as `payer_address` with each success unless a payment names another. */
  payer_address: string;
}

export interface SandboxUpstream {
  /** Base URL, e.g. http://127.0.0.1:3100 */
  url: string;
  /** Where the portal forwards payins (UPSTREAM_PAYIN_URL). */
  payinUrl: string;
  /** Forwarded requests as received (raw body and headers), newest last. */
  received: Array<{ body: string; headers: http.IncomingHttpHeaders }>;
  /**
   * Notifies the portal of a payment of `amount` (decimal text), from `payer_address` (default: the payin's sandbox
   * payer; null: no address sent); returns the portal's answer.
   */
  pay(invoice_reference: string, amount: string, payer_address?: string | null): Promise<{ status: number; body: string }>;
  /** Notifies the portal that the payin was closed. */
  closePayin(invoice_reference: string): Promise<{ status: number; body: string }>;
  /** Where the portal requests refunds (UPSTREAM_REFUND_URL; the default `<payinUrl>/refunds`). */
  refundUrl: string;
  /** The refunds asked for, by refund_reference (./upstream-refunds.ts). */
  refunds: ReadonlyMap<string, SandboxRefund>;
  /** Every refund notification sent, with the portal's answer, oldest first. */
  refundNotifications: SandboxRefundNotification[];
  /** Decides a pending refund (or notifies its decision again) as the decide route does; returns the portal's answer. */
  decideRefund(refund_reference: string, status: 'succeeded' | 'failed'): Promise<{ status: number; body: string }>;
  /** Where the portal requests payouts (UPSTREAM_PAYOUT_URL; the default `<payinUrl>/payouts`). */
  payoutUrl: string;
  /** The payouts asked for and the notifications sent (./upstream-payouts.ts). */
  payouts: SandboxPayouts;
  /** Decides a pending payout (or notifies its decision again) as the decide route does; returns the portal's answer. */
  decidePayout(payout_reference: string, status: 'succeeded' | 'failed'): Promise<{ status: number; body: string }>;
  close(): Promise<void>;
}

/** USDT units of a decimal amount text; 0 when it is not one (the sandbox's own bookkeeping, never refused). */
function unitsOf(amount: string): bigint {
  try {
    return parseAmount(amount, 'USDT', { allowZero: true });
  } catch {
    return 0n;
  }
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Starts the sandbox upstream on host:port (0 = a free port).
 * @param options.api_key when set, forwarded payins must carry `Authorization: Bearer <api_key>` (else 401)
 * @param options.webhook_secret the UPSTREAM_WEBHOOK_SECRET notifications are signed with
 * @param options.refund_decision_delay_seconds seconds before a refund to a `late_*` test address is decided
 *   (default DEFAULT_REFUND_DECISION_DELAY_SECONDS); null: pending refunds are decided only on the decide route
 */
export async function startSandboxUpstream(options: {
  host?: string;
  port?: number;
  api_key?: string;
  webhook_secret: string;
  refund_decision_delay_seconds?: number | null;
  /** Seconds before a payout to a `late_*` test address is decided; null: only on the decide route. */
  payout_decision_delay_seconds?: number | null;
}): Promise<SandboxUpstream> {
  const payins = new Map<string, SandboxPayin>();
  const received: SandboxUpstream['received'] = [];
  const refunds = createSandboxRefunds({
    webhook_secret: options.webhook_secret,
    decision_delay_seconds: options.refund_decision_delay_seconds,
    paidUnits: (invoice_reference) => payins.get(invoice_reference)?.paid_units,
  });
  const payouts = createSandboxPayouts({ webhook_secret: options.webhook_secret, decision_delay_seconds: options.payout_decision_delay_seconds });
  const authorized = (req: http.IncomingMessage) => !options.api_key || constantTimeEqual(String(req.headers.authorization ?? ''), `Bearer ${options.api_key}`);

  const notify = async (invoice_reference: string, status: 'success' | 'close', amount?: string, payer_address?: string | null) => {
    const payin = payins.get(invoice_reference);
    if (!payin) return { status: 404, body: JSON.stringify({ error: 'unknown invoice_reference' }) };
    const trx_ref = randomBytes(32).toString('hex');
    const paid = amount ?? payin.amount;
    const payer = status === 'success' && payer_address !== null ? `,"payer_address":${JSON.stringify(payer_address ?? payin.payer_address)}` : '';
    const body = `{"invoice_reference":${JSON.stringify(invoice_reference)},"status":"${status}","amount":${paid},"currency":"USDT","trx_ref":"${trx_ref}"${payer}}`;
    // The money arrived at the provider whatever the portal answers: it bounds the payin's refunds.
    if (status === 'success') payin.paid_units += unitsOf(paid);
    const response = await request(payin.notify_url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-upstream-signature': hmacSha256Hex(options.webhook_secret, body) },
    });
    return { status: response.statusCode, body: await response.body.text() };
  };

  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    (async () => {
      const url = new URL(req.url ?? '/', 'http://sandbox');
      const body = req.method === 'POST' ? await readBody(req) : '';
      if (req.method === 'POST' && url.pathname === '/payins') {
        received.push({ body, headers: req.headers });
        if (!authorized(req)) return send(401, { error: 'unauthorized' });
        const invoice_reference = String(req.headers['x-invoice-reference'] ?? '');
        const notify_url = String(req.headers['x-notify-url'] ?? '');
        let amount = '0';
        try {
          const parsed = parseJsonLossless(body) as { amount?: unknown };
          if (isLosslessNumber(parsed.amount) || typeof parsed.amount === 'string') amount = String(parsed.amount);
        } catch {
          return send(400, { error: 'body is not JSON' });
        }
        if (!invoice_reference || !notify_url) return send(400, { error: 'X-Invoice-Reference and X-Notify-Url are required' });
        const address = fakeTronAddress();
        payins.set(invoice_reference, { invoice_reference, notify_url, address, amount, paid_units: 0n, payer_address: fakeTronAddress() });
        return send(
          200,
          stringifyJson({
            qrcode: { content: `tron:${address}?amount=${amount}&token=${USDT_TRC20_CONTRACT}` },
            trx_ref: `SANDBOX-${invoice_reference}`,
          }),
        );
      }
      if (req.method === 'POST' && url.pathname === '/payins/refunds') {
        if (!authorized(req)) return send(401, { error: 'unauthorized' });
        const answer = refunds.create(req.headers, body);
        return send(answer.status, answer.body);
      }
      if (req.method === 'POST' && url.pathname === '/payins/payouts') {
        if (!authorized(req)) return send(401, { error: 'unauthorized' });
        const answer = payouts.create(req.headers, body);
        return send(answer.status, answer.body);
      }
      const payoutDecision = /^\/sandbox\/payouts\/([^/]+)\/decide$/.exec(url.pathname);
      if (req.method === 'POST' && payoutDecision) {
        const answer = await payouts.decide(decodeURIComponent(payoutDecision[1]!), body);
        return send(answer.status, answer.body);
      }
      const decision = /^\/sandbox\/refunds\/([^/]+)\/decide$/.exec(url.pathname);
      if (req.method === 'POST' && decision) {
        const answer = await refunds.decide(decodeURIComponent(decision[1]!), body);
        return send(answer.status, answer.body);
      }
      const match = /^\/sandbox\/payins\/([^/]+)\/(pay|close)$/.exec(url.pathname);
      if (req.method === 'POST' && match) {
        const invoice_reference = decodeURIComponent(match[1]!);
        if (match[2] === 'close') {
          const answer = await notify(invoice_reference, 'close');
          return send(answer.status, answer.body);
        }
        let amount: string | undefined;
        let payer_address: string | null | undefined;
        try {
          const parsed = parseJsonLossless(body || '{}') as { amount?: unknown; payer_address?: unknown };
          if (parsed.amount !== undefined) amount = String(parsed.amount);
          if (parsed.payer_address === null || typeof parsed.payer_address === 'string') payer_address = parsed.payer_address;
        } catch {
          return send(400, { error: 'body is not JSON' });
        }
        if (amount !== undefined && !/^\d+(\.\d+)?$/.test(amount)) return send(400, { error: 'amount must be a number' });
        const answer = await notify(invoice_reference, 'success', amount, payer_address);
        return send(answer.status, answer.body);
      }
      return send(404, { error: 'not found' });
    })().catch((error) => send(502, { error: String((error as Error).message) }));
  });
  server.keepAliveTimeout = 5000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  const url = `http://${host}:${port}`;
  return {
    url,
    payinUrl: `${url}/payins`,
    received,
    pay: (invoice_reference, amount, payer_address) => notify(invoice_reference, 'success', amount, payer_address),
    closePayin: (invoice_reference) => notify(invoice_reference, 'close'),
    refundUrl: `${url}/payins/refunds`,
    refunds: refunds.refunds,
    refundNotifications: refunds.notifications,
    decideRefund: (refund_reference, status) => refunds.decide(refund_reference, JSON.stringify({ status })),
    payoutUrl: `${url}/payins/payouts`,
    payouts,
    decidePayout: (payout_reference, status) => payouts.decide(payout_reference, JSON.stringify({ status })),
    close: () =>
      new Promise<void>((resolve) => {
        refunds.close();
        payouts.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The file under a data directory holding its sandbox upstream's API key and notification secret. */
export const SANDBOX_CREDENTIALS_FILE = 'sandbox-upstream.json';

export interface SandboxCredentials {
  api_key: string;
  webhook_secret: string;
}

/**
 * The sandbox upstream's API key and notification secret of `directory` (`<directory>/sandbox-upstream.json`, 0600):
 * 256 random bits each, made on first use and kept, so every data directory has its own and none is in the source
 * (whoever read a constant could sign notifications to any test-mode stack).
 */
export function sandboxCredentials(directory: string): SandboxCredentials {
  const file = path.join(directory, SANDBOX_CREDENTIALS_FILE);
  if (existsSync(file)) {
    const stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<SandboxCredentials>;
    if (typeof stored.api_key === 'string' && typeof stored.webhook_secret === 'string') return { api_key: stored.api_key, webhook_secret: stored.webhook_secret };
  }
  const created = { api_key: randomBytes(32).toString('hex'), webhook_secret: randomBytes(32).toString('hex') };
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify(created, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return created;
}

/**
 * In test mode without UPSTREAM_PAYIN_URL (`npm start`, `payments cluster up --demo-data`): starts the sandbox
 * upstream on SANDBOX_PORT and returns it with `config` pointing the platform at it (its payin URL, its refund URL
 * unless UPSTREAM_REFUND_URL is set, API key and notification secret: UPSTREAM_API_KEY / UPSTREAM_WEBHOOK_SECRET when set, else those of `directory`, see
 * sandboxCredentials). Otherwise undefined: a configured or live upstream is used as it is.
 */
export async function startConfiguredSandbox(config: Config, directory: string = config.DATA_DIR): Promise<{ sandbox: SandboxUpstream; config: Config } | undefined> {
  if (config.UPSTREAM_PAYIN_URL || config.PAYMENTS_MODE !== 'test') return undefined;
  const generated = config.UPSTREAM_API_KEY && config.UPSTREAM_WEBHOOK_SECRET ? undefined : sandboxCredentials(directory);
  const api_key = config.UPSTREAM_API_KEY ?? generated!.api_key;
  const webhook_secret = config.UPSTREAM_WEBHOOK_SECRET ?? generated!.webhook_secret;
  const sandbox = await startSandboxUpstream({ port: config.SANDBOX_PORT, api_key, webhook_secret });
  return {
    sandbox,
    config: { ...config, UPSTREAM_PAYIN_URL: sandbox.payinUrl, UPSTREAM_REFUND_URL: config.UPSTREAM_REFUND_URL ?? sandbox.refundUrl, UPSTREAM_PAYOUT_URL: config.UPSTREAM_PAYOUT_URL ?? sandbox.payoutUrl, UPSTREAM_API_KEY: api_key, UPSTREAM_WEBHOOK_SECRET: webhook_secret },
  };
}
