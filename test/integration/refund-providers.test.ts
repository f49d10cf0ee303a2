/**
 * The upstream provider's refund port against the sandbox upstream, over real HTTP (docs/refunds.md "Providers"):
 * the client (src/flows/payin/upstream-refunds.ts) asks the sandbox (src/sandbox/upstream.ts), which answers by
 * the refund's address and decides pending refunds late with a signed notification. The notifications go to a
 * receiver that opens them exactly as the platform's notification route will (`openRefundNotification` with the
 * upstream secret: signature first, then the fields). The client's error kinds are also driven by small servers
 * that misbehave the ways a provider can (no answer, 4xx, 5xx, malformed answers).
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { loadConfig } from '../../src/config';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { DomainError } from '../../src/errors';
import {
  MAX_ANSWER_BYTES,
  requestUpstreamPayout,
  requestUpstreamRefund,
  upstreamFromConfig as upstreamRefundsFromConfig,
  UpstreamPayoutError,
  UpstreamRefundError,
  type UpstreamRefundOptions,
  type UpstreamRefundRequest,
} from '../../src/upstream/client';
import { openRefundNotification, upstreamNotificationKind, type UpstreamRefundNotification } from '../../src/upstream/notifications';
import { startSandboxUpstream, type SandboxUpstream } from '../../src/sandbox/upstream';
import { LATE_REFUND_FAILURE_REASON, OVER_REFUND_REASON, REFUND_FAILURE_REASON, SANDBOX_REFUND_ADDRESSES } from '../../src/sandbox/upstream-refunds';

const SECRET = randomBytes(32).toString('hex');
const API_KEY = randomBytes(32).toString('hex');
/** Seconds before the sandbox decides a refund to a `late_*` address. */
const DECISION_DELAY_SECONDS = 0.3;

interface Server {
  url: string;
  close(): Promise<void>;
}

async function listen(handler: http.RequestListener): Promise<Server> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The platform's side of the notification route for refunds: what it accepted, in order. */
interface Portal extends Server {
  refunds: UpstreamRefundNotification[];
  payins: string[];
}

async function startPortal(secret: string): Promise<Portal> {
  const refunds: UpstreamRefundNotification[] = [];
  const payins: string[] = [];
  const server = await listen(async (req, res) => {
    const body = await readBody(req);
    const answer = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (upstreamNotificationKind(body) === 'payin') {
      payins.push(body.toString('utf8'));
      return answer(200, { success: true, code: 200 });
    }
    try {
      const notification = openRefundNotification(secret, body, req.headers['x-upstream-signature'] as string | undefined);
      refunds.push(notification);
      // Answer a little after taking it, as a real portal that records before answering does: the window in which
      // the test sees the notification before the sandbox has the answer is then always open, not only sometimes.
      await new Promise((resolve) => setTimeout(resolve, 100));
      return answer(200, { success: true, code: 200, data: { refund_reference: notification.refund_reference, status: notification.status, applied: true } });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      if (error.reason === 'UPSTREAM_SIGNATURE_INVALID') return answer(401, { success: false, message: 'Invalid signature', errors: null });
      return answer(422, { success: false, message: 'Validation errors', errors: error.fields });
    }
  });
  return { ...server, refunds, payins };
}

async function waitFor<T>(what: string, read: () => T | undefined, seconds = 10): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The error a refund request threw. */
async function failure(promise: Promise<unknown>): Promise<UpstreamRefundError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof UpstreamRefundError) return error;
    throw error;
  }
  throw new Error('the refund request did not fail');
}

let sandbox: SandboxUpstream;
let portal: Portal;
let options: UpstreamRefundOptions;
let counter = 0;

function refundOf(fields: Partial<UpstreamRefundRequest> = {}): UpstreamRefundRequest {
  counter += 1;
  return {
    refund_reference: `RFD-${Date.now()}-${counter}`,
    invoice_reference: `PAYIN-TEST${String(counter).padStart(16, '0')}`,
    trx_ref: randomBytes(32).toString('hex'),
    amount_units: 2_500_000n,
    currency: 'USDT',
    address: SANDBOX_REFUND_ADDRESSES.succeeds,
    reason: 'the customer asked',
    ...fields,
  };
}

beforeAll(async () => {
  portal = await startPortal(SECRET);
  sandbox = await startSandboxUpstream({ api_key: API_KEY, webhook_secret: SECRET, refund_decision_delay_seconds: DECISION_DELAY_SECONDS });
  options = { api_key: API_KEY, notify_url: `${portal.url}/api/v1/upstream/notifications`, timeout_seconds: 5 };
});

afterAll(async () => {
  await sandbox?.close();
  await portal?.close();
});

describe('the upstream refund port against the sandbox', () => {
  it('succeeds in its answer, at the default URL, with the amount exact and the late decisions sent to the notify URL', async () => {
    const config = loadConfig({ PAYMENTS_MODE: 'test', UPSTREAM_PAYIN_URL: sandbox.payinUrl, UPSTREAM_API_KEY: API_KEY, PUBLIC_BASE_URL: portal.url });
    const refund = refundOf({ amount_units: 12_345_678n });
    const outcome = await upstreamRefundsFromConfig(config)!.refund(refund, `key-${refund.refund_reference}`);
    expect(outcome).toEqual({ status: 'succeeded', refund_trx_ref: expect.stringMatching(/^[0-9a-f]{64}$/) });
    // What the provider read off the wire: the exact amount, the key, where to notify.
    expect(sandbox.refunds.get(refund.refund_reference)).toMatchObject({
      amount_units: 12_345_678n,
      idempotency_key: `key-${refund.refund_reference}`,
      invoice_reference: refund.invoice_reference,
      trx_ref: refund.trx_ref,
      address: refund.address,
      reason: refund.reason,
      notify_url: `${portal.url}/api/v1/upstream/notifications`,
      status: 'succeeded',
    });
  });

  it('fails in its answer for the failing test address', async () => {
    const refund = refundOf({ address: SANDBOX_REFUND_ADDRESSES.fails });
    expect(await requestUpstreamRefund(sandbox.refundUrl, refund, `key-${refund.refund_reference}`, options)).toEqual({ status: 'failed', failure_reason: REFUND_FAILURE_REASON });
  });

  it('answers pending, then decides late with a notification signed with the upstream secret; a repeat answers the decision', async () => {
    const refund = refundOf({ address: SANDBOX_REFUND_ADDRESSES.late_success, amount_units: 1_015_000n });
    const key = `key-${refund.refund_reference}`;
    expect(await requestUpstreamRefund(sandbox.refundUrl, refund, key, options)).toEqual({ status: 'pending' });
    const notification = await waitFor('the late decision', () => portal.refunds.find((entry) => entry.refund_reference === refund.refund_reference));
    expect(notification).toEqual({
      refund_reference: refund.refund_reference,
      status: 'refund_succeeded',
      amount_units: 1_015_000n,
      currency: 'USDT',
      trx_ref: refund.trx_ref,
      refund_trx_ref: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // The portal holds the notification before its answer is back at the sandbox, which records the answer's status
    // only once it arrived: wait for that record instead of reading it at once (it was 0 until then).
    const delivered = await waitFor('the sandbox to record the portal\'s answer', () =>
      sandbox.refundNotifications.find((entry) => entry.refund_reference === refund.refund_reference && entry.status !== 0),
    );
    expect(delivered).toMatchObject({ status: 200 });
    // Asked again under the same key: the same refund, now decided (never a second refund).
    expect(await requestUpstreamRefund(sandbox.refundUrl, refund, key, options)).toEqual({ status: 'succeeded', refund_trx_ref: notification.refund_trx_ref });
    expect([...sandbox.refunds.values()].filter((entry) => entry.invoice_reference === refund.invoice_reference)).toHaveLength(1);
  });

  it('answers pending, then fails late by a signed notification', async () => {
    const refund = refundOf({ address: SANDBOX_REFUND_ADDRESSES.late_failure });
    expect(await requestUpstreamRefund(sandbox.refundUrl, refund, `key-${refund.refund_reference}`, options)).toEqual({ status: 'pending' });
    const notification = await waitFor('the late failure', () => portal.refunds.find((entry) => entry.refund_reference === refund.refund_reference));
    expect(notification).toEqual({
      refund_reference: refund.refund_reference,
      status: 'refund_failed',
      amount_units: 2_500_000n,
      currency: 'USDT',
      trx_ref: refund.trx_ref,
      failure_reason: LATE_REFUND_FAILURE_REASON,
    });
    expect(await requestUpstreamRefund(sandbox.refundUrl, refund, `key-${refund.refund_reference}`, options)).toEqual({ status: 'failed', failure_reason: LATE_REFUND_FAILURE_REASON });
  });

  it('keeps a pending refund pending until the decide route decides it; then notifies that decision only', async () => {
    const refund = refundOf({ address: SANDBOX_REFUND_ADDRESSES.pending });
    const key = `key-${refund.refund_reference}`;
    expect(await requestUpstreamRefund(sandbox.refundUrl, refund, key, options)).toEqual({ status: 'pending' });
    await new Promise((resolve) => setTimeout(resolve, DECISION_DELAY_SECONDS * 2 * 1000));
    expect(await requestUpstreamRefund(sandbox.refundUrl, refund, key, options)).toEqual({ status: 'pending' });
    expect(portal.refunds.filter((entry) => entry.refund_reference === refund.refund_reference)).toEqual([]);

    const decide = (status: string) =>
      fetch(`${sandbox.url}/sandbox/refunds/${encodeURIComponent(refund.refund_reference)}/decide`, { method: 'POST', body: JSON.stringify({ status }) });
    const decided = await decide('failed');
    expect(decided.status).toBe(200);
    expect(await decided.json()).toMatchObject({ data: { refund_reference: refund.refund_reference, status: 'refund_failed', applied: true } });
    expect((await decide('succeeded')).status).toBe(409);
    expect((await decide('maybe')).status).toBe(400);
    expect((await fetch(`${sandbox.url}/sandbox/refunds/RFD-UNKNOWN/decide`, { method: 'POST', body: '{"status":"failed"}' })).status).toBe(404);
    // The same decision again notifies the same body again.
    expect((await decide('failed')).status).toBe(200);
    const sent = sandbox.refundNotifications.filter((entry) => entry.refund_reference === refund.refund_reference);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.body).toBe(sent[0]!.body);
    expect(portal.refunds.filter((entry) => entry.refund_reference === refund.refund_reference).map((entry) => entry.status)).toEqual(['refund_failed', 'refund_failed']);
    expect(await requestUpstreamRefund(sandbox.refundUrl, refund, key, options)).toEqual({ status: 'failed', failure_reason: LATE_REFUND_FAILURE_REASON });
  });

  it('answers the same idempotency key with the first outcome and refunds once, sequentially and concurrently', async () => {
    const refund = refundOf();
    const key = `key-${refund.refund_reference}`;
    const first = await requestUpstreamRefund(sandbox.refundUrl, refund, key, options);
    expect(first.status).toBe('succeeded');
    const repeats = await Promise.all(Array.from({ length: 8 }, () => requestUpstreamRefund(sandbox.refundUrl, refund, key, options)));
    expect(repeats).toEqual(Array.from({ length: 8 }, () => first));

    const concurrent = refundOf();
    const answers = await Promise.all(Array.from({ length: 8 }, () => requestUpstreamRefund(sandbox.refundUrl, concurrent, `key-${concurrent.refund_reference}`, options)));
    expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1);
    expect([...sandbox.refunds.values()].filter((entry) => entry.invoice_reference === concurrent.invoice_reference)).toHaveLength(1);
  });

  it('refuses the key with other parameters, and the refund reference under another key, refunding nothing more', async () => {
    const refund = refundOf();
    const key = `key-${refund.refund_reference}`;
    const first = await requestUpstreamRefund(sandbox.refundUrl, refund, key, options);
    const other = await failure(requestUpstreamRefund(sandbox.refundUrl, { ...refund, amount_units: 2_500_001n }, key, options));
    expect(other).toMatchObject({ kind: 'refused', status_code: 422, retryable: false });
    const again = await failure(requestUpstreamRefund(sandbox.refundUrl, refund, `${key}-2`, options));
    expect(again).toMatchObject({ kind: 'refused', status_code: 422, retryable: false });
    expect(await requestUpstreamRefund(sandbox.refundUrl, refund, key, options)).toEqual(first);
    expect(sandbox.refunds.get(refund.refund_reference)).toMatchObject({ amount_units: 2_500_000n, idempotency_key: key });
  });

  it('gets the refund on a retry with the same key after the provider answered 503', async () => {
    const refund = refundOf({ address: SANDBOX_REFUND_ADDRESSES.unavailable_once });
    const key = `key-${refund.refund_reference}`;
    const down = await failure(requestUpstreamRefund(sandbox.refundUrl, refund, key, options));
    expect(down).toMatchObject({ kind: 'server_error', status_code: 503, retryable: true });
    expect(sandbox.refunds.has(refund.refund_reference)).toBe(false);
    const retried = await requestUpstreamRefund(sandbox.refundUrl, refund, key, options);
    expect(retried.status).toBe('succeeded');
    expect(await requestUpstreamRefund(sandbox.refundUrl, refund, key, options)).toEqual(retried);
  });

  it('fails a refund that would take back more than a payin paid through it', async () => {
    const invoice_reference = `PAYIN-OVER${Date.now()}`.slice(0, 26);
    const created = await fetch(sandbox.payinUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'x-invoice-reference': invoice_reference, 'x-notify-url': `${portal.url}/api/v1/upstream/notifications` },
      body: '{"amount":10,"currency":"USDT","out_trade_no":"over"}',
    });
    expect(created.status).toBe(200);
    expect((await sandbox.pay(invoice_reference, '10')).status).toBe(200);
    const refund = (amount_units: bigint) => {
      const request = refundOf({ invoice_reference, amount_units });
      return requestUpstreamRefund(sandbox.refundUrl, request, `key-${request.refund_reference}`, options);
    };
    expect((await refund(6_000_000n)).status).toBe('succeeded');
    expect(await refund(4_000_001n)).toEqual({ status: 'failed', failure_reason: OVER_REFUND_REASON });
    expect((await refund(4_000_000n)).status).toBe('succeeded');
    expect(await refund(1n)).toEqual({ status: 'failed', failure_reason: OVER_REFUND_REASON });
  });

  it('is refused (not retryable) with another API key or a malformed request', async () => {
    const refund = refundOf();
    const wrongKey = await failure(requestUpstreamRefund(sandbox.refundUrl, refund, `key-${refund.refund_reference}`, { ...options, api_key: 'not-the-key' }));
    expect(wrongKey).toMatchObject({ kind: 'refused', status_code: 401, retryable: false });
    const badAddress = refundOf({ address: '0x52908400098527886E0F7030069857D2E4169EE7' });
    expect(await failure(requestUpstreamRefund(sandbox.refundUrl, badAddress, `key-${badAddress.refund_reference}`, options))).toMatchObject({
      kind: 'refused',
      status_code: 422,
      retryable: false,
    });
    expect(sandbox.refunds.has(refund.refund_reference) || sandbox.refunds.has(badAddress.refund_reference)).toBe(false);
  });

  it('sends nothing for a request the platform got wrong', async () => {
    const before = sandbox.refunds.size;
    await expect(requestUpstreamRefund(sandbox.refundUrl, refundOf({ amount_units: 0n }), 'key-zero', options)).rejects.toThrow(TypeError);
    await expect(requestUpstreamRefund(sandbox.refundUrl, refundOf(), 'key\nwith a newline', options)).rejects.toThrow(/idempotency_key/);
    await expect(requestUpstreamRefund(sandbox.refundUrl, refundOf({ reason: 'x'.repeat(256) }), 'key-long-reason', options)).rejects.toThrow(/reason/);
    expect(sandbox.refunds.size).toBe(before);
  });
});

describe('notifications the platform refuses', () => {
  const post = (body: string, signature?: string) =>
    fetch(`${portal.url}/api/v1/upstream/notifications`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(signature === undefined ? {} : { 'x-upstream-signature': signature }) },
      body,
    });
  const body = '{"refund_reference":"RFD-FORGED","status":"refund_succeeded","amount":100,"currency":"USDT","refund_trx_ref":"0xforged"}';

  it('refuses an unsigned notification, and one signed with another secret or over another body', async () => {
    expect((await post(body)).status).toBe(401);
    expect((await post(body, hmacSha256Hex('guessed-secret', body))).status).toBe(401);
    expect((await post(body.replace('100', '1000'), hmacSha256Hex(SECRET, body))).status).toBe(401);
    expect(portal.refunds.filter((entry) => entry.refund_reference === 'RFD-FORGED')).toEqual([]);
  });

  it('refuses a signed notification that is malformed, naming its fields', async () => {
    const malformed = '{"refund_reference":"RFD-FORGED","status":"refund_succeeded","amount":0.0000001,"currency":"USDT"}';
    const answer = await post(malformed, hmacSha256Hex(SECRET, malformed));
    expect(answer.status).toBe(422);
    expect(((await answer.json()) as { errors: unknown }).errors).toEqual({ amount: ['too_many_decimals'], refund_trx_ref: ['required'] });
    expect(portal.refunds.filter((entry) => entry.refund_reference === 'RFD-FORGED')).toEqual([]);
  });
});

describe('the client against a provider that misbehaves', () => {
  let provider: Server;
  let closedUrl: string;
  const reference = 'RFD-MISBEHAVING';
  const answers: Record<string, (res: http.ServerResponse) => void> = {
    '/429': (res) => res.writeHead(429).end('{}'),
    '/408': (res) => res.writeHead(408).end(),
    '/400': (res) => res.writeHead(400).end('{"error":"bad"}'),
    '/500': (res) => res.writeHead(500).end('oops'),
    '/302': (res) => res.writeHead(302, { location: '/elsewhere' }).end(),
    '/204': (res) => res.writeHead(204).end(),
    '/not-json': (res) => res.writeHead(200).end('<html>ok</html>'),
    '/other-refund': (res) => res.writeHead(200).end('{"refund_reference":"RFD-OTHER","status":"succeeded","refund_trx_ref":"x"}'),
    '/other-amount': (res) => res.writeHead(200).end(`{"refund_reference":"${reference}","status":"succeeded","refund_trx_ref":"x","amount":2.6}`),
    '/no-trx': (res) => res.writeHead(200).end(`{"refund_reference":"${reference}","status":"succeeded"}`),
    '/unknown-status': (res) => res.writeHead(200).end(`{"refund_reference":"${reference}","status":"done"}`),
    '/huge': (res) => res.writeHead(200).end(`{"refund_reference":"${reference}","status":"pending","pad":"${'x'.repeat(70_000)}"}`),
    '/accepted': (res) => res.writeHead(202).end(`{"refund_reference":"${reference}","status":"pending","amount":2.5,"currency":"USDT"}`),
    '/failed': (res) => res.writeHead(200).end(`{"refund_reference":"${reference}","status":"failed"}`),
    '/silent': () => undefined,
  };

  beforeAll(async () => {
    provider = await listen(async (req, res) => {
      await readBody(req);
      answers[req.url ?? '']?.(res);
    });
    const closed = await listen(() => undefined);
    closedUrl = closed.url;
    await closed.close();
  });
  afterAll(() => provider.close());

  const ask = (path: string, timeout_seconds = 5) => requestUpstreamRefund(`${provider.url}${path}`, refundOf({ refund_reference: reference }), 'key-misbehaving', { ...options, timeout_seconds });

  it.each([
    ['/429', 'refused', 429, true],
    ['/408', 'refused', 408, true],
    ['/400', 'refused', 400, false],
    ['/500', 'server_error', 500, true],
    ['/302', 'malformed', 302, true],
    ['/204', 'malformed', 204, true],
    ['/not-json', 'malformed', undefined, true],
    ['/other-refund', 'malformed', undefined, true],
    ['/other-amount', 'malformed', undefined, true],
    ['/no-trx', 'malformed', undefined, true],
    ['/unknown-status', 'malformed', undefined, true],
    ['/huge', 'malformed', undefined, true],
  ])('%s is %s (status %s, retryable %s)', async (path, kind, status_code, retryable) => {
    const error = await failure(ask(path));
    expect({ kind: error.kind, status_code: error.status_code, retryable: error.retryable }).toEqual({ kind, status_code, retryable });
  });

  it('is unreachable when nothing listens or nothing answers within the timeout (both retryable)', async () => {
    expect(await failure(requestUpstreamRefund(`${closedUrl}/refunds`, refundOf(), 'key-closed', options))).toMatchObject({ kind: 'unreachable', retryable: true });
    expect(await failure(ask('/silent', 0.3))).toMatchObject({ kind: 'unreachable', retryable: true, message: 'upstream refund unreachable: timed out' });
  });

  it('takes a 202 pending answer that echoes the amount, and a failure without a reason', async () => {
    expect(await ask('/accepted')).toEqual({ status: 'pending' });
    expect(await ask('/failed')).toEqual({ status: 'failed', failure_reason: 'refused by the provider' });
  });
  // A payout shares the exchange: each failure is the payout's own error, its message the payout's only.
  it.each([
    ['/429', 'refused', 429, 'upstream payout refused: HTTP 429'],
    ['/500', 'server_error', 500, 'upstream payout server_error: HTTP 500'],
    ['/204', 'malformed', 204, 'upstream payout malformed: HTTP 204'],
    ['/huge', 'malformed', undefined, `upstream payout malformed: answer longer than ${MAX_ANSWER_BYTES} bytes`],
  ])('a payout answered by %s is %s (status %s)', async (path, kind, status_code, message) => {
    const payout = { payout_reference: 'PO-MISBEHAVING', amount_units: 3_000_000n, currency: 'USDT' as const, address: 'TBCfDME9Ay3epGBPhwHcf9Epo42CsFtsBq', memo: '' };
    const error = await requestUpstreamPayout(`${provider.url}${path}`, payout, 'key-misbehaving-payout', options).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(UpstreamPayoutError);
    expect({ kind: (error as UpstreamPayoutError).kind, status_code: (error as UpstreamPayoutError).status_code, message: (error as Error).message }).toEqual({ kind, status_code, message });
  });
});
