/**
 * Benchmark `payins`: payin creations per second and p50/p99 through the façade (API key → PayinService
 * → record + workflow-start outbox row → byte-for-byte forward to a local sandbox upstream → QR PNG; the outbox
 * dispatcher starts the PayinWorkflows beside it, and a creation counts once its workflow has started and run its
 * first workflow task), beside the same upstream called directly and the workflow-start floor (a bare PayinWorkflow
 * start, counted to its first task the same way), the three interleaved in slices in the same run
 * (goals: façade ≥ 0.8 × the workflow-start floor; and the Temporal start's CPU per operation ≥ 0.5 × the creation
 * path's, every process counted: the creation costs at most twice the workflow start it contains. The direct upstream
 * is a local sandbox that answers in microseconds: its rate is reported, compared with nothing). Then BENCH_SETTLEMENTS (default 1000)
 * settlements notified by the upstream → the same number of webhooks received by a local merchant receiver,
 * none duplicated, with p50/p99 from notification to receipt; before them, in the same run, a baseline burst of
 * BENCH_BASELINE_SETTLEMENTS (default 300) with every webhook through its own delivery workflow.
 *
 * Needs PostgreSQL (`BENCH_DATABASE_URL` or `DATABASE_URL`, else embedded;
 * a fresh database is created and dropped) and Temporal (`TEMPORAL_ADDRESS`, else a dev server is started).
 * `BENCH_OPERATIONS` (default 1000) creations per phase, concurrency `BENCH_CONCURRENCY` (default 32). For context
 * the run also measures the Temporal floor every creation contains: PayinWorkflow starts alone, same worker.
 * Run: `npm run bench -- payins`.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { createLogger } from '../src/logger';
import { freePort } from '../src/net';
import { createMerchant } from '../src/onboarding';
import { runRoles } from '../src/runtime';
import { startSandboxUpstream } from '../src/sandbox/upstream';
import { startMerchantReceiver } from '../test/support/merchant-receiver';
import { payinWorkflow } from '../workflows/payin';
import type { BenchResult } from './run';
import { cpuAccount, cpuColumns, machineCpuGroups, measure, measureInterleaved, percentile, round, runWhenMain, startBenchEnvironment } from './support/harness';

export async function run(): Promise<BenchResult> {
  const operations = Number(process.env.BENCH_OPERATIONS ?? 1000);
  const settlements = Math.min(Number(process.env.BENCH_SETTLEMENTS ?? 1000), operations);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
  const environment = await startBenchEnvironment('payins');
  const stops: Array<() => Promise<void>> = [];
  try {
    const secret = randomBytes(16).toString('hex');
    const sandbox = await startSandboxUpstream({ api_key: 'bench-key', webhook_secret: secret });
    stops.push(() => sandbox.close());
    const receiver = await startMerchantReceiver();
    stops.push(() => receiver.close());
    const port = await freePort();
    const temporalMetricsPort = await freePort();
    const config = environment.config({
      TEMPORAL_METRICS_PORT: String(temporalMetricsPort),
      HTTP_PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      UPSTREAM_PAYIN_URL: sandbox.payinUrl,
      UPSTREAM_API_KEY: 'bench-key',
      UPSTREAM_WEBHOOK_SECRET: secret,
      PAYIN_TTL_SECONDS: '3600',
      WEBHOOK_RETRY_INITIAL_SECONDS: '1',
    });
    const platform = await runRoles(config, ['api', 'facade', 'worker'], createLogger('silent'));
    stops.push(() => platform.stop());
    const { credentials } = await createMerchant(platform.deps!, { name: 'Bench merchant', callback_url: receiver.url });
    receiver.configure({ hmac_secret: credentials.hmac_secret, signature_header: credentials.signature_header });
    const runId = randomBytes(3).toString('hex');
    const bodyOf = (index: number) => `{"amount": 12.345678, "out_trade_no": "B-${runId}-${index}", "memo": "bench"}`;

    const direct = async (index: number) => {
      const response = await request(sandbox.payinUrl, {
        method: 'POST',
        body: bodyOf(index),
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer bench-key',
          'x-invoice-reference': `PAYIN-DIRECT${String(index).padStart(14, '0')}`,
          'x-notify-url': `${config.PUBLIC_BASE_URL}/api/v1/upstream/notifications`,
        },
      });
      await response.body.text();
      if (response.statusCode !== 200) throw new Error(`direct upstream ${response.statusCode}`);
    };
    const invoices: string[] = [];
    let offset = 0;
    // PayinWorkflows started by this run (the floor's and the façade's), and how many of their first workflow tasks
    // the worker has run, from the SDK's own counter: a phase ends when its workflows have run their first task, so
    // that the work a burst of starts leaves behind is paid by the phase that started them, not by the one after it.
    let payinWorkflowsStarted = 0;
    const payinTasksRun = async () => {
      const text = await (await fetch(`http://127.0.0.1:${temporalMetricsPort}/metrics`)).text();
      const counts = text.split('\n').filter((line) => line.startsWith('temporal_workflow_task_execution_latency_count{') && line.includes(`task_queue="${config.TEMPORAL_TASK_QUEUE}"`) && line.includes('workflow_type="payinWorkflow"'));
      return counts.reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    };
    let firstTasksLagSeconds = 0;
    const firstTasksRun = async () => {
      const started = performance.now();
      while ((await payinTasksRun()) < payinWorkflowsStarted) {
        if (performance.now() - started > 120_000) throw new Error('the worker did not run the first task of every started PayinWorkflow within 120 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      firstTasksLagSeconds = Math.max(firstTasksLagSeconds, (performance.now() - started) / 1000);
    };
    const facade = async (index: number) => {
      const response = await request(`${platform.facadeUrl}/api/v1/payins`, {
        method: 'POST',
        body: bodyOf(offset + index),
        headers: { 'content-type': 'application/json', 'x-api-key': credentials.api_key },
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`façade ${response.statusCode}: ${text}`);
      invoices.push(JSON.parse(text).data.invoice_reference);
      payinWorkflowsStarted += 1;
    };
    // Warm-up (connections, JIT, workflow cache).
    await measure(50, 8, direct);
    await measure(50, 8, facade);
    offset = 100;
    invoices.length = 0;
    // The Temporal floor inside every creation: starting one PayinWorkflow (same worker, same task queue).
    const floor = async (index: number) => {
      await platform.deps!.temporal.client.workflow.start(payinWorkflow, {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        workflowId: `PAYIN-FLOOR${runId}${String(index).padStart(9, '0')}`,
        args: [{ invoice_reference: `PAYIN-FLOOR${runId}${index}`, ttl_seconds: 3600 }],
      });
      payinWorkflowsStarted += 1;
    };
    // B1 answers before Temporal: a creation counts once its PayinWorkflow has been started (transactional outbox),
    // so each façade slice ends when the outbox is empty; the wait is the façade's time, and the longest one is
    // reported as the outbox lag.
    let outboxLagSeconds = 0;
    const outboxDrained = async () => {
      const started = performance.now();
      while (Number((await platform.deps!.database('payin_workflow_outbox').count('* as count').first())?.count ?? 0) > 0) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      outboxLagSeconds = Math.max(outboxLagSeconds, (performance.now() - started) / 1000);
      await firstTasksRun();
    };
    await outboxDrained();
    // Interleaved in three slices each (direct, floor, façade, direct, …): drift of the shared machine and of the
    // Temporal server's database weighs on every phase alike.
    const cpu = cpuAccount(() => machineCpuGroups());
    const [directResult, floorResult, facadeResult] = await measureInterleaved(
      [
        { operations, work: direct },
        { operations, work: floor, settle: firstTasksRun },
        { operations, work: facade, settle: outboxDrained },
      ],
      concurrency,
      3,
      cpu,
    );

    // Settlements: the upstream notifies; the merchant receives one webhook per payin. Measured twice in this run:
    // first a smaller baseline burst with every webhook through its own WebhookDeliveryWorkflow (the platform's
    // behaviour with WEBHOOK_INLINE_FIRST_ATTEMPT=false, switched in this process), then the BENCH_SETTLEMENTS burst
    // with the first attempt made by the payin's own activity (the default).
    const burst = async (chosen: string[]) => {
      const notifiedAt = new Map<string, number>();
      const settleStarted = performance.now();
      const settle = await measure(chosen.length, concurrency, async (index) => {
        const invoice = chosen[index]!;
        notifiedAt.set(invoice, Date.now());
        const answer = await sandbox.pay(invoice, '12.345678');
        if (answer.status !== 200) throw new Error(`notification ${answer.status}: ${answer.body}`);
      });
      const wanted = new Set(chosen);
      await receiver.waitFor((list) => new Set(list.filter((item) => wanted.has(String(item.json.data.invoice_reference))).map((item) => item.webhook_id)).size >= chosen.length, 600_000);
      const allSeconds = (performance.now() - settleStarted) / 1000;
      const mine = receiver.received.filter((item) => wanted.has(String(item.json.data.invoice_reference)));
      const ids = mine.map((item) => item.webhook_id);
      const lags = mine.map((item) => item.received_at - notifiedAt.get(String(item.json.data.invoice_reference))!).sort((a, b) => a - b);
      return { settle, received: mine.length, distinct: new Set(ids).size, duplicates: ids.length - new Set(ids).size, per_second: chosen.length / allSeconds, lags };
    };
    const baselineCount = Math.min(Number(process.env.BENCH_BASELINE_SETTLEMENTS ?? 300), settlements);
    const baselineInvoices: string[] = [];
    offset = 10_000_000;
    const before = invoices.length;
    await measure(baselineCount, concurrency, facade);
    baselineInvoices.push(...invoices.splice(before));
    while (Number((await platform.deps!.database('payin_workflow_outbox').count('* as count').first())?.count ?? 0) > 0) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const mutableConfig = platform.deps!.config as { WEBHOOK_INLINE_FIRST_ATTEMPT: boolean };
    mutableConfig.WEBHOOK_INLINE_FIRST_ATTEMPT = false;
    const baseline = await burst(baselineInvoices);
    mutableConfig.WEBHOOK_INLINE_FIRST_ATTEMPT = true;
    const chosen = invoices.slice(0, settlements);
    // CPU per settlement by process, notification to webhook received (the receiver and the upstream's notifying
    // client are in the bench process as well): the settlement's own cost, for docs/capacity.md.
    const settleCpu = cpuAccount(() => machineCpuGroups());
    settleCpu.begin();
    const inline = await burst(chosen);
    settleCpu.end(0, chosen.length);
    const duplicates = baseline.duplicates + inline.duplicates;
    const check = await platform.deps!.ledger.check();

    return {
      name: 'payins',
      rows: [
        { phase: 'upstream direct (create)', operations, concurrency, per_second: round(directResult.per_second), p50_ms: round(directResult.p50_ms), p99_ms: round(directResult.p99_ms), ...cpuColumns(cpu, 0) },
        { phase: 'Temporal floor (workflow start)', operations, concurrency, per_second: round(floorResult.per_second), p50_ms: round(floorResult.p50_ms), p99_ms: round(floorResult.p99_ms), ...cpuColumns(cpu, 1) },
        { phase: 'façade B1 (create)', operations, concurrency, per_second: round(facadeResult.per_second), p50_ms: round(facadeResult.p50_ms), p99_ms: round(facadeResult.p99_ms), ...cpuColumns(cpu, 2) },
        { phase: 'baseline: notifications accepted', operations: baselineInvoices.length, concurrency, per_second: round(baseline.settle.per_second), p50_ms: round(baseline.settle.p50_ms), p99_ms: round(baseline.settle.p99_ms) },
        { phase: 'baseline: notification → webhook received (workflow per webhook)', operations: baseline.received, concurrency, per_second: round(baseline.per_second), p50_ms: round(percentile(baseline.lags, 50)), p99_ms: round(percentile(baseline.lags, 99)) },
        { phase: 'notifications accepted', operations: chosen.length, concurrency, per_second: round(inline.settle.per_second), p50_ms: round(inline.settle.p50_ms), p99_ms: round(inline.settle.p99_ms) },
        {
          phase: 'notification → webhook received (first attempt inline)',
          operations: inline.received,
          concurrency,
          per_second: round(inline.per_second),
          p50_ms: round(percentile(inline.lags, 50)),
          p99_ms: round(percentile(inline.lags, 99)),
          ...cpuColumns(settleCpu, 0),
        },
      ],
      ratios: [
        {
          label: 'Temporal workflow start CPU/op ÷ façade creation CPU/op (all processes)',
          value: (cpuColumns(cpu, 1).cpu_ms_all ?? 0) / Math.max(cpuColumns(cpu, 2).cpu_ms_all ?? 0, 1e-9),
          goal: 0.5,
        },
        { label: 'webhooks received/s ÷ notifications accepted/s (first attempt inline)', value: inline.per_second / inline.settle.per_second, goal: 0.8 },
        { label: 'façade creations/s ÷ Temporal workflow-start floor/s', value: facadeResult.per_second / floorResult.per_second, goal: 0.8 },
      ],
      notes: [
        `CPU per operation, every process (bench = roles + sandbox upstream + receiver + client; temporal; postgres): façade creation ${JSON.stringify(cpuColumns(cpu, 2))}, Temporal workflow start ${JSON.stringify(cpuColumns(cpu, 1))}, sandbox upstream direct ${JSON.stringify(cpuColumns(cpu, 0))}`,
        `${chosen.length} settlements → ${inline.distinct} distinct webhooks received (baseline ${baselineInvoices.length} → ${baseline.distinct}), ${duplicates} duplicate deliveries, ledger ok: ${check.ok}`,
        `information (no goal): webhooks received/s, first attempt inline ÷ workflow per webhook = ${round(inline.per_second / baseline.per_second, 2)}×; p50 ${round(percentile(inline.lags, 50))} ms vs ${round(percentile(baseline.lags, 50))} ms, p99 ${round(percentile(inline.lags, 99))} ms vs ${round(percentile(baseline.lags, 99))} ms`,
        `notification → webhook latency of the ${chosen.length}-settlement burst: p50 ${round(percentile(inline.lags, 50))} ms (goal ≤ 2000 ms: ${percentile(inline.lags, 50) <= 2000 ? 'met' : 'missed'}), p99 ${round(percentile(inline.lags, 99))} ms (goal ≤ 5000 ms: ${percentile(inline.lags, 99) <= 5000 ? 'met' : 'missed'}), measured from the moment the upstream sent each notification`,
        'a notification is answered once its PayinWorkflow applied it (Update-with-Start): accepted/s is the settlement rate, and a burst waits on the upstream’s connections instead of queueing inside Temporal',
        `RSS of the platform process after the run: ${Math.round(process.memoryUsage().rss / 1_048_576)} MiB (api + facade + worker roles and the bench client)`,
        'cpu_ms_*: CPU milliseconds per operation by process, read from /proc around each slice of the first three phases and around the inline settlement burst (bench: the process running the roles, the sandbox upstream, the receiver and the client; temporal: the Temporal server; postgres: every PostgreSQL process)',
        `façade creations counted end to end: each slice ends when its last PayinWorkflow has started (transactional outbox, dispatched in batches), at most ${round(outboxLagSeconds, 1)} s after its last answer; phases interleaved in 3 slices each`,
        `floor and façade slices each end once the worker has run the first workflow task of every PayinWorkflow they started (at most ${round(firstTasksLagSeconds, 1)} s after the last start), so neither leaves its workflows' first tasks to the phase after it`,
      ],
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await environment.close();
  }
}

runWhenMain(module, run);
