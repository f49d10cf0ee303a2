/**
 * The Temporal SDK's own Prometheus metrics (docs/operations.md "Metrics"): with TEMPORAL_METRICS_PORT set, the
 * worker's runtime serves them on that port, apart from the platform's METRICS_PORT: task slots, requests to the
 * Temporal server, workflow task latencies.
 */
import { freePort } from '../../src/net';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** The exporter's text once it holds every one of `names`, within a few seconds. */
async function scrapeUntil(url: string, names: string[]): Promise<string> {
  const deadline = Date.now() + 10_000;
  let text = '';
  while (Date.now() < deadline) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      text = await response.text();
      if (response.status === 200 && names.every((name) => text.includes(name))) return text;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} did not serve ${names.join(', ')} within 10 s; last scrape:\n${text.slice(0, 2000)}`);
}

describe('Temporal SDK metrics', () => {
  let platform: TestPlatform;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    platform = await startTestPlatform({ env: { TEMPORAL_METRICS_PORT: String(port) } });
  });
  afterAll(() => platform?.stop());

  it('are served on TEMPORAL_METRICS_PORT by the worker runtime, durations in seconds', async () => {
    // The health check calls the Temporal server; the worker polls on its own.
    expect((await fetch(`${platform.facadeUrl}/healthz`)).status).toBe(200);
    const text = await scrapeUntil(`http://127.0.0.1:${port}/metrics`, [
      'temporal_worker_task_slots_available',
      'temporal_request',
      'temporal_num_pollers',
    ]);
    expect(text).toMatch(new RegExp(`temporal_worker_task_slots_available\\{[^}]*task_queue="${platform.config.TEMPORAL_TASK_QUEUE}"[^}]*worker_type="WorkflowWorker"[^}]*\\} \\d+`));
    expect(text).toMatch(/temporal_request\{[^}]*operation="[A-Za-z]+"[^}]*\} \d+/);
    // Not the platform's registry: none of its metrics here.
    expect(text).not.toContain('payments_');
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).headers.get('content-type')).toMatch(/^text\/plain/);
  });
});
