/**
 * Benchmark `timeline` (docs/timeline.md): a settled payin's timeline, `GET /api/v1/payments/{reference}/timeline`
 * through the façade, beside the cheapest read of the same payin on the same key (`POST /api/v1/payins/status`, the
 * baseline measured in the same run, interleaved in 3 slices each). BENCH_TIMELINE_PAYINS (default 20) payins are
 * created and settled through the sandbox upstream, each webhook delivered; then BENCH_TIMELINE_READS (default 300)
 * reads of each route, spread over those payins, at BENCH_TIMELINE_CONCURRENCY (default 4). Each timeline read joins
 * the request journal, the workflow history (Temporal), the notification, the postings, the events and the webhook
 * attempts. Goal: p99 ≤ 300 ms (reported as 300 ÷ p99 ≥ 1); the ratio to the baseline is reported beside it.
 * Run: `npm run bench -- timeline`.
 */
import { request } from 'undici';
import type { BenchResult } from './run';
import { measureInterleaved, round, runWhenMain, startBenchEnvironment } from './support/harness';
import { startPayinPortal } from './support/payin-portal';

/** The p99 a settled payin's timeline should stay under, milliseconds. */
const P99_TARGET_MS = 300;

export async function run(): Promise<BenchResult> {
  const payins = Number(process.env.BENCH_TIMELINE_PAYINS ?? 20);
  const reads = Number(process.env.BENCH_TIMELINE_READS ?? 300);
  const concurrency = Number(process.env.BENCH_TIMELINE_CONCURRENCY ?? 4);
  const environment = await startBenchEnvironment('timeline');
  const portal = await startPayinPortal(environment, 'Bench timeline merchant').catch(async (error) => {
    await environment.close();
    throw error;
  });
  try {
    const { deps, receiver } = portal;
    const credentials = { api_key: portal.apiKey };
    const platform = { facadeUrl: portal.facadeUrl };
    const headers = { 'content-type': 'application/json', 'x-api-key': credentials.api_key };
    const settled = await portal.createPayins(payins, Math.min(concurrency, payins), 'T');
    for (const { invoice } of settled) await portal.settle(invoice);
    const delivered = () => new Set(receiver.received.filter((item) => item.status === 200).map((item) => String(item.json.data.invoice_reference)));
    await receiver.waitFor(() => settled.every(({ invoice }) => delivered().has(invoice)), 120_000);

    let entries = 0;
    const timeline = async (index: number) => {
      const { invoice } = settled[index % settled.length]!;
      const response = await request(`${platform.facadeUrl}/api/v1/payments/${invoice}/timeline`, { headers: { 'x-api-key': credentials.api_key } });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`timeline ${response.statusCode}: ${text}`);
      entries = Math.max(entries, (JSON.parse(text).data.entries as unknown[]).length);
    };
    const status = async (index: number) => {
      const { order } = settled[index % settled.length]!;
      const response = await request(`${platform.facadeUrl}/api/v1/payins/status`, { method: 'POST', body: `{"out_trade_no": "${order}"}`, headers });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}: ${text}`);
    };
    // Warm-up: both routes on every payin once.
    for (let index = 0; index < settled.length; index += 1) await Promise.all([timeline(index), status(index)]);
    const [timelines, statuses] = await measureInterleaved(
      [
        { operations: reads, work: timeline },
        { operations: reads, work: status },
      ],
      concurrency,
      3,
    );
    const check = await deps.ledger.check();
    return {
      name: 'timeline',
      rows: [
        { phase: 'GET /api/v1/payments/{reference}/timeline (settled payin)', operations: reads, concurrency, per_second: round(timelines!.per_second), p50_ms: round(timelines!.p50_ms), p99_ms: round(timelines!.p99_ms) },
        { phase: 'POST /api/v1/payins/status, same payins (baseline)', operations: reads, concurrency, per_second: round(statuses!.per_second), p50_ms: round(statuses!.p50_ms), p99_ms: round(statuses!.p99_ms) },
      ],
      ratios: [
        { label: `timeline p99 target ${P99_TARGET_MS} ms ÷ measured p99`, value: P99_TARGET_MS / timelines!.p99_ms, goal: 1 },
        { label: 'timeline reads/s ÷ payin status reads/s (same key, same payins)', value: timelines!.per_second / statuses!.per_second, goal: 0.1 },
      ],
      notes: [
        `${payins} payins created, settled through the sandbox upstream and their webhooks delivered before any read; each timeline holds up to ${entries} entries (requests, workflow history, notification, postings, events, webhook attempts)`,
        `the two routes interleaved in 3 slices each in one process, ${reads} reads each at concurrency ${concurrency}; the timeline reads Temporal's history (TIMELINE_TEMPORAL_DEADLINE_SECONDS ${deps.config.TIMELINE_TEMPORAL_DEADLINE_SECONDS} s) beside six database reads`,
        `ledger ok: ${check.ok}`,
      ],
    };
  } finally {
    await portal.stop();
    await environment.close();
  }
}

runWhenMain(module, run);
