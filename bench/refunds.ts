/**
 * Benchmark `refunds` (docs/refunds.md): refund create → `refund.succeeded` webhook beside payin settlement → webhook,
 * interleaved in 3 slices each in one run on the same worker and database. A refund is timed from its request
 * (POST /api/v1/payins/refunds, through the façade: validation, the hold and `refund.created` in one transaction,
 * the RefundWorkflow started after the commit) to the merchant's receiver getting its webhook (the provider asked by
 * the workflow's activity, the hold posted, the event and its webhook written, delivered); a settlement from the
 * sandbox upstream's notification to its `payin.success` webhook. The payins refunded are settled beforehand
 * (untimed). Goal: refunds/s ≥ 0.8 × settlements/s.
 *
 * Needs PostgreSQL and Temporal as every bench (bench/support/harness.ts). `BENCH_REFUNDS` (default 200) operations
 * per phase at `BENCH_CONCURRENCY` (default 32). Run: `npm run bench -- refunds`.
 */
import { request } from 'undici';
import { SANDBOX_REFUND_ADDRESSES } from '../src/sandbox/upstream-refunds';
import type { BenchResult } from './run';
import { measure, measureInterleaved, round, runWhenMain, startBenchEnvironment } from './support/harness';
import { startPayinPortal } from './support/payin-portal';

export async function run(): Promise<BenchResult> {
  const perPhase = Number(process.env.BENCH_REFUNDS ?? 200);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
  const environment = await startBenchEnvironment('refunds');
  const portal = await startPayinPortal(environment, 'Bench refunds merchant', { WEBHOOK_RETRY_INITIAL_SECONDS: '1' }).catch(async (error) => {
    await environment.close();
    throw error;
  });
  try {
    const { deps, receiver, settle } = portal;
    const invoices = (await portal.createPayins(2 * perPhase + 20, concurrency, 'R')).map((payin) => payin.invoice);
    const delivered = (event: string) =>
      new Set(receiver.received.filter((item) => item.status === 200 && item.json?.event === event).map((item) => String(item.json.data.invoice_reference)));
    const refund = async (invoice: string) => {
      const response = await request(`${portal.facadeUrl}/api/v1/payins/refunds`, {
        method: 'POST',
        body: JSON.stringify({ invoice_reference: invoice, reason: 'bench', address: SANDBOX_REFUND_ADDRESSES.succeeds }),
        headers: { 'content-type': 'application/json', 'x-api-key': portal.apiKey, 'idempotency-key': `bench-${invoice}` },
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`refund ${response.statusCode}: ${text}`);
    };
    // Untimed: the payins the refund phase refunds are settled first; 10 of each path warm up.
    const settling = invoices.slice(0, perPhase + 10);
    const refunding = invoices.slice(perPhase + 10);
    await measure(refunding.length, concurrency, (index) => settle(refunding[index]!));
    await receiver.waitFor(() => refunding.every((invoice) => delivered('payin.success').has(invoice)), 300_000);
    const warm = [...settling.splice(0, 10).map((invoice) => settle(invoice)), ...refunding.splice(0, 10).map((invoice) => refund(invoice))];
    await Promise.all(warm);
    // SQL statements per operation, by phase (every role's, this process's one pool): what a path costs the
    // database. A slice ends with its webhooks, so the few statements after them (the attempt's record) may fall
    // into the next phase's count.
    const statements = { settle: 0, refund: 0 };
    let current: 'settle' | 'refund' | undefined;
    deps.database.on('query', () => {
      if (current) statements[current] += 1;
    });
    const phase = (path: 'settle' | 'refund', chosen: string[]) => {
      const sent: string[] = [];
      const event = path === 'settle' ? 'payin.success' : 'refund.succeeded';
      return {
        operations: chosen.length,
        work: async (index: number) => {
          current = path;
          sent.push(chosen[index]!);
          await (path === 'settle' ? settle : refund)(chosen[index]!);
        },
        // A slice ends when the receiver has the webhook of every operation it sent.
        settle: async () => {
          await receiver.waitFor(() => {
            const got = delivered(event);
            return sent.every((invoice) => got.has(invoice));
          }, 300_000);
        },
      };
    };
    const [settlements, refunds] = await measureInterleaved([phase('settle', settling.slice(0, perPhase)), phase('refund', refunding.slice(0, perPhase))], concurrency, 3);
    current = undefined;
    const succeeded = Number((await deps.database('refunds').where({ merchant_id: portal.merchantId, status: 'succeeded' }).count('* as n').first())?.n ?? 0);
    const check = await deps.ledger.check();
    return {
      name: 'refunds',
      rows: [
        { phase: 'payin settlement → payin.success webhook (baseline)', operations: perPhase, concurrency, per_second: round(settlements!.per_second), p50_ms: round(settlements!.p50_ms), p99_ms: round(settlements!.p99_ms), sql_per_op: round(statements.settle / perPhase, 1) },
        { phase: 'refund create → refund.succeeded webhook', operations: perPhase, concurrency, per_second: round(refunds!.per_second), p50_ms: round(refunds!.p50_ms), p99_ms: round(refunds!.p99_ms), sql_per_op: round(statements.refund / perPhase, 1) },
      ],
      ratios: [{ label: 'refund create → webhook/s ÷ settlement → webhook/s', value: refunds!.per_second / settlements!.per_second, goal: 0.8 }],
      notes: [
        'phases interleaved in 3 slices each in one process; a slice ends when the receiver has the webhook of every operation it sent; per_second counts request (or notification) to webhook received',
        `refunds succeeded: ${succeeded} (each a full refund of a settled 1.5 USDT payin, 1.485 after its fee); ledger ok: ${check.ok}`,
        'a refund takes the merchant wallet\'s lock twice (its hold with the request, its post with the provider\'s answer), a settlement once: both paths are bound by that lock\'s hold time (one merchant here), so a refund keeps its statements few and its locked transactions short: the hold and the post joined to their transactions directly (no savepoint), the refund row written once, before the hold, naming the hold\'s id chosen beforehand (only the event follows the hold), and one local activity (ask, post, webhook\'s first attempt) in the run\'s only workflow task',
      ],
    };
  } finally {
    await portal.stop();
    await environment.close();
  }
}

runWhenMain(module, run);
