/**
 * Benchmark `payouts` (docs/payouts.md): payout create → `payout.succeeded` webhook beside payin settlement → webhook,
 * interleaved in 3 slices each in one run on the same worker and database. A payout is timed from its request
 * (POST /api/v1/payouts, through the façade: the address's checksum, the fee, the merchant's lock, the two holds and
 * `payout.created` in one transaction, the PayoutWorkflow started after the commit) to the merchant's receiver getting
 * its webhook (the provider asked by the workflow's activity, both holds posted, the event and its webhook written,
 * delivered); a settlement from the sandbox upstream's notification to its `payin.success` webhook. The wallet is
 * funded by settled payins beforehand (untimed). Goal: payouts/s ≥ 0.8 × settlements/s.
 *
 * `BENCH_PAYOUTS` (default 200) operations per phase at `BENCH_CONCURRENCY` (default 32). Run: `npm run bench -- payouts`.
 */
import { request } from 'undici';
import { SANDBOX_PAYOUT_ADDRESSES } from '../src/sandbox/upstream-payouts';
import type { BenchResult } from './run';
import { measure, measureInterleaved, round, runWhenMain, startBenchEnvironment } from './support/harness';
import { startPayinPortal } from './support/payin-portal';

export async function run(): Promise<BenchResult> {
  const perPhase = Number(process.env.BENCH_PAYOUTS ?? 200);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
  const environment = await startBenchEnvironment('payouts');
  const portal = await startPayinPortal(environment, 'Bench payouts merchant', { WEBHOOK_RETRY_INITIAL_SECONDS: '1' }).catch(async (error) => {
    await environment.close();
    throw error;
  });
  try {
    const { deps, receiver, settle } = portal;
    // A small fee, so the settled payins fund every payout: 0.5 USDT and 0.1 of fee each.
    await deps.database('fee_schedule').where({ channel_code: 'USDT_TRC20' }).update({ fee: JSON.stringify({ fee_payout: { amount: 0.1, currency: 'USDT' } }) });
    const invoices = (await portal.createPayins(2 * perPhase + 20, concurrency, 'P')).map((payin) => payin.invoice);
    const deliveredPayins = () => new Set(receiver.received.filter((item) => item.status === 200 && item.json?.event === 'payin.success').map((item) => String(item.json.data.invoice_reference)));
    const deliveredPayouts = () => new Set(receiver.received.filter((item) => item.status === 200 && item.json?.event === 'payout.succeeded').map((item) => String(item.json.data.payout_reference)));
    let keys = 0;
    const payout = async (): Promise<string> => {
      keys += 1;
      const response = await request(`${portal.facadeUrl}/api/v1/payouts`, {
        method: 'POST',
        body: JSON.stringify({ amount: 0.5, currency: 'USDT', address: SANDBOX_PAYOUT_ADDRESSES.succeeds, memo: 'bench' }),
        headers: { 'content-type': 'application/json', 'x-api-key': portal.apiKey, 'idempotency-key': `bench-payout-${keys}` },
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) throw new Error(`payout ${response.statusCode}: ${text}`);
      return (JSON.parse(text) as { data: { payout_reference: string } }).data.payout_reference;
    };
    // Untimed: the funding payins settled first; 10 of each path warm up.
    const settling = invoices.slice(0, perPhase + 10);
    const funding = invoices.slice(perPhase + 10);
    await measure(funding.length, concurrency, (index) => settle(funding[index]!));
    await receiver.waitFor(() => funding.every((invoice) => deliveredPayins().has(invoice)), 300_000);
    await Promise.all([...settling.splice(0, 10).map((invoice) => settle(invoice)), ...Array.from({ length: 10 }, () => payout())]);
    const statements = { settle: 0, payout: 0 };
    let current: 'settle' | 'payout' | undefined;
    deps.database.on('query', () => {
      if (current) statements[current] += 1;
    });
    const settlePhase = {
      operations: perPhase,
      sent: [] as string[],
      work: async (index: number) => {
        current = 'settle';
        settlePhase.sent.push(settling[index]!);
        await settle(settling[index]!);
      },
      settle: async () => {
        await receiver.waitFor(() => {
          const got = deliveredPayins();
          return settlePhase.sent.every((invoice) => got.has(invoice));
        }, 300_000);
      },
    };
    const payoutPhase = {
      operations: perPhase,
      sent: [] as string[],
      work: async () => {
        current = 'payout';
        payoutPhase.sent.push(await payout());
      },
      settle: async () => {
        await receiver.waitFor(() => {
          const got = deliveredPayouts();
          return payoutPhase.sent.every((reference) => got.has(reference));
        }, 300_000);
      },
    };
    const [settlements, payouts] = await measureInterleaved([settlePhase, payoutPhase], concurrency, 3);
    current = undefined;
    const succeeded = Number((await deps.database('payouts').where({ merchant_id: portal.merchantId, status: 'succeeded' }).count('* as n').first())?.n ?? 0);
    const check = await deps.ledger.check();
    return {
      name: 'payouts',
      rows: [
        { phase: 'payin settlement → payin.success webhook (baseline)', operations: perPhase, concurrency, per_second: round(settlements!.per_second), p50_ms: round(settlements!.p50_ms), p99_ms: round(settlements!.p99_ms), sql_per_op: round(statements.settle / perPhase, 1) },
        { phase: 'payout create → payout.succeeded webhook', operations: perPhase, concurrency, per_second: round(payouts!.per_second), p50_ms: round(payouts!.p50_ms), p99_ms: round(payouts!.p99_ms), sql_per_op: round(statements.payout / perPhase, 1) },
      ],
      ratios: [{ label: 'payout create → webhook/s ÷ settlement → webhook/s', value: payouts!.per_second / settlements!.per_second, goal: 0.8 }],
      notes: [
        'phases interleaved in 3 slices each in one process; a slice ends when the receiver has the webhook of every operation it sent; per_second counts request (or notification) to webhook received',
        `payouts succeeded: ${succeeded} (0.5 USDT each, fee 0.1); ledger ok: ${check.ok}`,
        "a payout takes the merchant's payout lock and the wallet's lock with its two holds, then the wallet's again to post both: one merchant here, so both paths are bound by that lock",
      ],
    };
  } finally {
    await portal.stop();
    await environment.close();
  }
}

runWhenMain(module, run);
