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
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { createLogger } from '../src/logger';
import { freePort } from '../src/net';
import { createMerchant } from '../src/onboarding';
import { runRoles } from '../src/runtime';
import { startSandboxUpstream } from '../src/sandbox/upstream';
import { startMerchantReceiver } from '../test/support/merchant-receiver';
import type { BenchResult } from './run';
import { measure, measureInterleaved, round, runWhenMain, startBenchEnvironment } from './support/harness';

/** The p99 a settled payin's timeline should stay under, milliseconds. */
const P99_TARGET_MS = 300;

export async function run(): Promise<BenchResult> {
  const payins = Number(process.env.BENCH_TIMELINE_PAYINS ?? 20);
  const reads = Number(process.env.BENCH_TIMELINE_READS ?? 300);
  const concurrency = Number(process.env.BENCH_TIMELINE_CONCURRENCY ?? 4);
  const environment = await startBenchEnvironment('timeline');
  const stops: Array<() => Promise<void>> = [];
  try {
    const secret = randomBytes(16).toString('hex');
    const sandbox = await startSandboxUpstream({ api_key: 'bench-key', webhook_secret: secret });
    stops.push(() => sandbox.close());
    const receiver = await startMerchantReceiver();
    stops.push(() => receiver.close());
    const port = await freePort();
    const config = environment.config({
      HTTP_PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      UPSTREAM_PAYIN_URL: sandbox.payinUrl,
      UPSTREAM_API_KEY: 'bench-key',
      UPSTREAM_WEBHOOK_SECRET: secret,
      PAYIN_TTL_SECONDS: '3600',
      REQUESTS_PER_CALLER_PER_MINUTE: '0',
    });
    const platform = await runRoles(config, ['api', 'facade', 'worker'], createLogger('silent'));
    stops.push(() => platform.stop());
    const deps = platform.deps!;
    const { credentials } = await createMerchant(deps, { name: 'Bench timeline merchant', callback_url: receiver.url });
    receiver.configure({ hmac_secret: credentials.hmac_secret, signature_header: credentials.signature_header });
    const headers = { 'content-type': 'application/json', 'x-api-key': credentials.api_key };

    const runId = randomBytes(3).toString('hex');
    const settled: Array<{ invoice: string; order: string }> = [];
    await measure(payins, Math.min(concurrency, payins), async (index) => {
      const order = `T-${runId}-${index}`;
      const response = await request(`${platform.facadeUrl}/api/v1/payins`, { method: 'POST', body: `{"amount": 1.5, "out_trade_no": "${order}"}`, headers });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`create ${response.statusCode}: ${text}`);
      settled.push({ invoice: JSON.parse(text).data.invoice_reference as string, order });
    });
    while (Number((await deps.database('payin_workflow_outbox').count('* as count').first())?.count ?? 0) > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    for (const { invoice } of settled) {
      const answer = await sandbox.pay(invoice, '1.5');
      if (answer.status !== 200) throw new Error(`notification ${answer.status}: ${answer.body}`);
    }
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
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await environment.close();
  }
}

runWhenMain(module, run);
