/**
 * Prometheus metrics (docs/operations.md "Metrics"): a process serving METRICS_PORT answers `GET /metrics` with the
 * façade's requests by route pattern, the RPCs by procedure and code, webhook attempts by outcome, payments by kind
 * and status (counted as their change commits), refusals by reason, lockouts, admission rejections, the database
 * pool's waits, the outbox lag, and prom-client's process metrics. Route labels are patterns, never raw paths; no
 * scrape reads a table whole (the payins gauge counting the table at each scrape is gone).
 */
import { recordEvent } from '../../src/events';
import { freePort } from '../../src/net';
import { createMerchant } from '../../src/onboarding/merchants';
import { startTestPlatform, type TestPlatform } from '../support/platform';

describe('metrics', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    // Three failures of a credential from one address lock it out (the lockout counted below).
    platform = await startTestPlatform({ env: { METRICS_PORT: String(await freePort()), AUTH_FAILURES_PER_CREDENTIAL: '3' }, inProcess: true });
  });
  afterAll(() => platform.stop());

  const scrape = async () => {
    const response = await fetch(`http://127.0.0.1:${platform.config.METRICS_PORT}/metrics`);
    expect(response.status).toBe(200);
    return response.text();
  };

  it('serves request, RPC, payin and process metrics with route patterns as labels', async () => {
    expect((await fetch(`${platform.facadeUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${platform.facadeUrl}/pre-order/po_SECRETTOKEN123`)).status).toBe(404);
    const port = platform.config.METRICS_PORT;
    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await response.text();
    expect(text).toMatch(/payments_http_request_duration_seconds_count\{role="api,facade,worker",route="\/healthz",method="GET",status="200"\} 1/);
    expect(text).toMatch(/payments_http_request_duration_seconds_count\{[^}]*route="\/pre-order\/:token",method="GET",status="404"\} 1/);
    expect(text).not.toContain('SECRETTOKEN');
    expect(text).toMatch(/payments_rpc_duration_seconds_count\{[^}]*procedure="payments\.health\.v1\.HealthService\/Check",code="ok"\} 1/);
    expect(text).toMatch(/payments_payin_outbox_lag_seconds\{role="api,facade,worker"\} 0/);
    expect(text).toContain('process_cpu_user_seconds_total');
    expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
  });

  it('lists every family, and no gauge that counts a table at each scrape', async () => {
    const text = await scrape();
    for (const family of [
      'payments_payments_total',
      'payments_refusals_total',
      'payments_lockouts_total',
      'payments_admission_rejections_total',
      'payments_webhook_attempts_total',
      'payments_db_pool_acquire_seconds',
      'payments_db_pool_waits_total',
      'payments_db_pool_connections',
    ]) {
      expect(text).toContain(`# TYPE ${family} `);
    }
    expect(text).not.toMatch(/^payments_payins\{/m);
    // The pool is read from memory: its connections now, and every acquire so far timed.
    expect(text).toMatch(/payments_db_pool_connections\{[^}]*state="used"[^}]*\} \d+/);
    expect(Number(/payments_db_pool_acquire_seconds_count\{[^}]*\} (\d+)/.exec(text)?.[1])).toBeGreaterThan(0);
  });

  it('counts a payment’s state once its change commits, and nothing of a change rolled back', async () => {
    const { merchant } = await createMerchant(platform.deps, { name: 'Metrics Shop', callback_url: 'https://metrics.example/hook' });
    const owner = { type: 'merchant' as const, id: merchant.id };
    await platform.deps.database.transaction((trx) => recordEvent(trx, { owner, subject: 'PAYIN-METRICS-1', type: 'payin.success', data: {} }));
    await expect(
      platform.deps.database.transaction(async (trx) => {
        await recordEvent(trx, { owner, subject: 'DEP-METRICS-1', type: 'deposit.completed', data: {} });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    const text = await scrape();
    expect(text).toMatch(/payments_payments_total\{[^}]*kind="payin",status="success"[^}]*\} 1\n/);
    expect(text).not.toMatch(/payments_payments_total\{[^}]*kind="deposit",status="completed"/);
  });

  it('counts refusals by reason and lockouts by door and limit', async () => {
    await expect(platform.clients.admin.getMerchant({ merchantId: 'MNOSUCHMERCHANT' })).rejects.toThrow(/merchant/);
    for (let attempt = 0; attempt < 3; attempt++) await (await platform.deps.abuse.beginAttempt('api_key', 'guessed-key', '203.0.113.9')).failed();
    await expect(platform.deps.abuse.beginAttempt('api_key', 'guessed-key', '203.0.113.9')).rejects.toMatchObject({ reason: 'RATE_LIMITED' });
    const text = await scrape();
    expect(text).toMatch(/payments_refusals_total\{[^}]*reason="MERCHANT_NOT_FOUND"[^}]*\} 1\n/);
    expect(text).toMatch(/payments_lockouts_total\{[^}]*door="api_key",limit="pair"[^}]*\} 1\n/);
  });
});
