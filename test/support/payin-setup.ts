/**
 * Area B test wiring: a sandbox upstream (optionally behind a switchable fault proxy), a merchant receiver, and
 * a test platform whose PUBLIC_BASE_URL points at its own façade so upstream notifications reach it.
 */
import http from 'node:http';
import type net from 'node:net';
import type { Knex } from '../../src/db/knex';
import { DomainError } from '../../src/errors';
import type { RefundRow } from '../../src/flows/refund/store';
import { createMerchant, setMerchantStatus, type MerchantCredentials } from '../../src/onboarding/merchants';
import { freePort } from '../../src/net';
import { startSandboxUpstream, type SandboxUpstream } from '../../src/sandbox/upstream';
import { startMerchantReceiver, type MerchantReceiver } from './merchant-receiver';
import { startTestPlatform, type TestPlatform } from './platform';

export const UPSTREAM_API_KEY = 'test-upstream-key';
export const UPSTREAM_WEBHOOK_SECRET = 'test-upstream-webhook-secret';

export type FaultMode = 'pass' | '400' | '503' | 'slow' | 'reset' | 'garbage' | 'unrenderable';

/** A proxy in front of the sandbox that can answer 400, 503, hang, reset the connection or send garbage. */
export async function startFaultProxy(target: string): Promise<{ url: string; mode: FaultMode; close(): Promise<void> }> {
  const state = { mode: 'pass' as FaultMode };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      if (state.mode === '400') return res.writeHead(400).end('{"error":"bad request"}');
      if (state.mode === '503') return res.writeHead(503).end('{"error":"down"}');
      if (state.mode === 'garbage') return res.writeHead(200, { 'content-type': 'application/json' }).end('not json');
      if (state.mode === 'reset') return req.socket.destroy();
      // A QR content longer than any QR code can hold: the portal's PNG rendering fails (an unexpected fault).
      if (state.mode === 'unrenderable') return res.writeHead(200).end(JSON.stringify({ qrcode: { content: 'x'.repeat(8000) } }));
      if (state.mode === 'slow') {
        setTimeout(() => res.writeHead(200).end('{}'), 5000).unref();
        return;
      }
      const answer = await fetch(target, { method: 'POST', body: Buffer.concat(chunks), headers: req.headers as Record<string, string> });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/payins`,
    get mode() {
      return state.mode;
    },
    set mode(mode: FaultMode) {
      state.mode = mode;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export interface PayinHarness {
  platform: TestPlatform;
  sandbox: SandboxUpstream;
  receiver: MerchantReceiver;
  proxy?: Awaited<ReturnType<typeof startFaultProxy>>;
  stop(): Promise<void>;
}

/** Starts sandbox, receiver and platform. `env` overrides the platform environment. */
export async function startPayinHarness(
  options: {
    env?: Record<string, string>;
    proxy?: boolean;
    roles?: Array<'api' | 'facade' | 'worker'>;
    refund_decision_delay_seconds?: number | null;
    payout_decision_delay_seconds?: number | null;
    /** More options of the test platform (a span exporter, a log destination, the worker's workflow code). */
    platform?: Omit<Parameters<typeof startTestPlatform>[0] & object, 'env' | 'roles'>;
  } = {},
): Promise<PayinHarness> {
  const sandbox = await startSandboxUpstream({
    api_key: UPSTREAM_API_KEY,
    webhook_secret: UPSTREAM_WEBHOOK_SECRET,
    refund_decision_delay_seconds: options.refund_decision_delay_seconds,
    payout_decision_delay_seconds: options.payout_decision_delay_seconds,
  });
  const proxy = options.proxy ? await startFaultProxy(sandbox.payinUrl) : undefined;
  const receiver = await startMerchantReceiver();
  const port = await freePort();
  const platform = await startTestPlatform({
    ...options.platform,
    roles: options.roles,
    env: {
      HTTP_PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      UPSTREAM_PAYIN_URL: proxy?.url ?? sandbox.payinUrl,
      UPSTREAM_API_KEY,
      UPSTREAM_WEBHOOK_SECRET,
      UPSTREAM_TIMEOUT_SECONDS: '1',
      WEBHOOK_RETRY_INITIAL_SECONDS: '0.2',
      WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: '1',
      WEBHOOK_RETRY_WINDOW_SECONDS: '60',
      WEBHOOK_TIMEOUT_SECONDS: '5',
      ...options.env,
    },
  });
  return {
    platform,
    sandbox,
    receiver,
    proxy,
    async stop() {
      await platform.stop();
      await receiver.close();
      await proxy?.close();
      await sandbox.close();
    },
  };
}

/** Creates a merchant whose callback goes to `receiver`, and points the receiver at its secret and header. */
export async function createTestMerchant(
  harness: PayinHarness,
  options: { signature_header?: string; payin_fee_percent?: string; suspended?: boolean } = {},
): Promise<MerchantCredentials> {
  const { credentials } = await createMerchant(harness.platform.deps, {
    name: 'Test merchant',
    callback_url: harness.receiver.url,
    signature_header: options.signature_header,
    payin_fee_percent: options.payin_fee_percent,
  });
  if (options.suspended) await setMerchantStatus(harness.platform.deps.database, credentials.merchant_id, 'suspended');
  return credentials;
}

/** POSTs raw text to the façade. */
export async function post(base: string, path: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const text = await response.text();
  // Test bodies are asserted field by field; their shape is what the tests check.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json };
}

/**
 * A payin of `amount` USDT of `merchant` (its order `out_trade_no`), paid (`paid`, by default the amount) through the
 * sandbox and settled. @returns its invoice_reference
 */
export async function settledPayin(harness: PayinHarness, merchant: MerchantCredentials, amount: string, out_trade_no: string, paid = amount): Promise<string> {
  const created = await post(harness.platform.facadeUrl, '/api/v1/payins', `{"amount": ${amount}, "out_trade_no": "${out_trade_no}"}`, { 'X-API-Key': merchant.api_key });
  expect(created.status).toBe(200);
  const invoice_reference = created.json.data.invoice_reference as string;
  expect((await harness.sandbox.pay(invoice_reference, paid)).status).toBe(200);
  await eventually(async () => (await harness.platform.deps.database('payins').where({ invoice_reference }).first())?.status === 'success');
  return invoice_reference;
}

/** Polls `check` until it returns a truthy value (every 100 ms, up to `timeout_ms`). */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, timeout_ms = 30_000): Promise<T> {
  const deadline = Date.now() + timeout_ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The refund once it is decided (succeeded or failed), polled with `eventually`. */
export async function decidedRefund(database: Knex, refund_reference: string): Promise<RefundRow> {
  return eventually(async () => {
    const row = await database<RefundRow>('refunds').where({ refund_reference }).first();
    return row && (row.status === 'succeeded' || row.status === 'failed') ? row : undefined;
  });
}

/** The DomainError `promise` is refused with; anything else (or no refusal) fails the test. */
export async function domainRefusal(promise: Promise<unknown>): Promise<DomainError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error('not refused');
}
