/**
 * Prometheus metrics (docs/operations.md "Metrics"): a process serving METRICS_PORT answers `GET /metrics` with the
 * façade's requests by route pattern, the RPCs by procedure and code, webhook attempts by outcome, payins by status
 * and the outbox lag, and prom-client's process metrics. Route labels are patterns, never raw paths.
 */
import { freePort } from '../../src/net';
import { startTestPlatform, type TestPlatform } from '../support/platform';

describe('metrics', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ env: { METRICS_PORT: String(await freePort()) } });
  });
  afterAll(() => platform.stop());

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
});
