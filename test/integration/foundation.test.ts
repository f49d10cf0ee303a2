/** Foundation: health through façade → RPC → PostgreSQL and Temporal, and a workflow round trip. */
import { diagnosticsWorkflow } from '../../workflows/diagnostics';
import { startTestPlatform, testConfig, type TestPlatform } from '../support/platform';
import { createLogger } from '../../src/logger';
import { runRoles } from '../../src/runtime';
import { freePort } from '../../src/net';

describe('foundation', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform();
  });
  afterAll(() => platform.stop());

  it('GET /healthz answers 200 with every check ok and echoes a request id', async () => {
    const response = await fetch(`${platform.facadeUrl}/healthz`, { headers: { 'X-Request-Id': 'test-request-1' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('test-request-1');
    expect(await response.json()).toEqual({ status: 'ok', checks: { database: 'ok', temporal: 'ok' } });
  });

  it('generates a request id when none (or a malformed one) is sent', async () => {
    const response = await fetch(`${platform.facadeUrl}/healthz`, { headers: { 'X-Request-Id': 'bad id with spaces' } });
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('runs a workflow round trip through a real worker that reaches the database', async () => {
    const result = await platform.deps.temporal.client.workflow.execute(diagnosticsWorkflow, {
      taskQueue: platform.config.TEMPORAL_TASK_QUEUE,
      workflowId: `diagnostics-${Date.now()}`,
    });
    expect(result.worker_pid).toBe(process.pid);
    expect(Math.abs(Date.parse(result.database_time) - Date.now())).toBeLessThan(60_000);
  });

  it('answers unknown routes with 404', async () => {
    const response = await fetch(`${platform.facadeUrl}/no-such-route`);
    expect(response.status).toBe(404);
  });
});

describe('health when the database is down', () => {
  it('answers 503 naming the failing check', async () => {
    const closedPort = await freePort();
    const config = testConfig({ DATABASE_URL: `postgres://postgres:postgres@127.0.0.1:${closedPort}/none` });
    const running = await runRoles(config, ['api', 'facade'], createLogger('silent'));
    try {
      const response = await fetch(`${running.facadeUrl}/healthz`);
      expect(response.status).toBe(503);
      const body = (await response.json()) as { status: string; checks: Record<string, string> };
      expect(body.status).toBe('degraded');
      expect(body.checks.temporal).toBe('ok');
      expect(body.checks.database).not.toBe('ok');
    } finally {
      await running.stop();
    }
  });
});
