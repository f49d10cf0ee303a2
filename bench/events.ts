/**
 * Benchmark `events` (docs/events.md), two measurements in one run:
 *
 * 1. Settlement → webhook with events on, beside the same with the event write path bypassed (the floor): payins
 *    created beforehand, then settled through the sandbox upstream's notification, each counted once the merchant's
 *    receiver got its webhook. The two phases are interleaved in 3 slices each in the same process, on the same
 *    worker and database; the floor (PlatformDeps.benchFloor, set only here) records each settlement's webhook
 *    without its event, as before events: no event row, no numbering after the commit, no webhook-event-seq, so the
 *    webhook's turn is never waited for. Goal: with events ≥ 0.95 × the floor.
 * 2. Reading `GET /api/v1/events?after=…&limit=500` through the façade, one reader following next_after from 0, out
 *    of a table of BENCH_EVENTS_TABLE (default 1,000,000) events seeded in bulk INSERT … SELECT generate_series
 *    statements of BENCH_EVENTS_SEED_BATCH (default 50,000) rows each (not through the flows), spread over 4
 *    merchants: each batch well inside the platform's statement timeout on a busy machine. Goal: ≥ 2,000 events/s.
 *
 * Needs PostgreSQL and Temporal as every bench (bench/support/harness.ts). `BENCH_EVENTS_SETTLEMENTS` (default 300)
 * settlements per phase at `BENCH_CONCURRENCY` (default 32). Run: `npm run bench -- events`.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { createMerchant } from '../src/onboarding';
import type { BenchResult } from './run';
import { measureInterleaved, percentile, round, runWhenMain, startBenchEnvironment } from './support/harness';
import { startPayinPortal } from './support/payin-portal';

/** Merchants the seeded table is spread over (the reader's stream is one of them). */
const SEEDED_OWNERS = 4;

export async function run(): Promise<BenchResult> {
  const perPhase = Number(process.env.BENCH_EVENTS_SETTLEMENTS ?? 300);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
  const tableSize = Number(process.env.BENCH_EVENTS_TABLE ?? 1_000_000);
  const environment = await startBenchEnvironment('events');
  const portal = await startPayinPortal(environment, 'Bench events merchant', { WEBHOOK_RETRY_INITIAL_SECONDS: '1' }).catch(async (error) => {
    await environment.close();
    throw error;
  });
  try {
    const { deps, receiver, sandbox } = portal;
    const platform = { facadeUrl: portal.facadeUrl };
    const runId = randomBytes(3).toString('hex');

    // ---- 1. settlement → webhook, events on and off, interleaved
    const invoices = (await portal.createPayins(2 * perPhase + 20, concurrency, 'E')).map((payin) => payin.invoice);
    const received = () => new Set(receiver.received.filter((item) => item.status === 200).map((item) => String(item.json.data.invoice_reference)));
    const settle = async (invoice: string) => {
      const answer = await sandbox.pay(invoice, '1.5');
      if (answer.status !== 200) throw new Error(`notification ${answer.status}: ${answer.body}`);
    };
    // Warm-up: both paths once.
    const warm = invoices.splice(0, 20);
    for (const [index, invoice] of warm.entries()) {
      deps.benchFloor = { eventsOff: index % 2 === 1 };
      await settle(invoice);
    }
    await receiver.waitFor(() => warm.every((invoice) => received().has(invoice)), 120_000);
    const phase = (eventsOff: boolean, chosen: string[]) => {
      const sent: string[] = [];
      return {
        operations: chosen.length,
        work: async (index: number) => {
          deps.benchFloor = { eventsOff };
          sent.push(chosen[index]!);
          await settle(chosen[index]!);
        },
        // A slice ends when the receiver has every webhook of the settlements it sent.
        settle: async () => {
          await receiver.waitFor(() => {
            const got = received();
            return sent.every((invoice) => got.has(invoice));
          }, 300_000);
        },
      };
    };
    const [withEvents, floor] = await measureInterleaved([phase(false, invoices.slice(0, perPhase)), phase(true, invoices.slice(perPhase, 2 * perPhase))], concurrency, 3);
    deps.benchFloor = undefined;
    const announced = Number((await deps.database('events').whereIn('subject', invoices.slice(0, perPhase)).where({ type: 'payin.success' }).count('* as n').first())?.n ?? 0);
    const unannounced = Number((await deps.database('events').whereIn('subject', invoices.slice(perPhase, 2 * perPhase)).where({ type: 'payin.success' }).count('* as n').first())?.n ?? 0);

    // ---- 2. pages of 500 out of a table of `tableSize` events
    const reader = await createMerchant(deps, { name: 'Bench events reader', callback_url: receiver.url });
    const owners = [reader.merchant.id, ...Array.from({ length: SEEDED_OWNERS - 1 }, (_, index) => `M-BENCH-SEED-${runId}-${index}`)];
    const seedStarted = performance.now();
    // In batches: one statement of a million rows outlives the platform's statement timeout on a busy machine.
    const seedBatch = Number(process.env.BENCH_EVENTS_SEED_BATCH ?? 50_000);
    let seedStatements = 0;
    for (let from = 0; from < tableSize; from += seedBatch) {
      seedStatements += 1;
      await deps.database.raw(
        `INSERT INTO events (owner_type, owner_id, seq, subject, type, data, ledger_transaction_id, created_at)
         SELECT 'merchant', (?::text[])[1 + (g % ?)], 1 + (g / ?), 'PAYIN-SEED' || lpad(g::text, 14, '0'),
                CASE WHEN g % 3 = 0 THEN 'payin.created' ELSE 'payin.success' END,
                jsonb_build_object('invoice_reference', 'PAYIN-SEED' || lpad(g::text, 14, '0'), 'out_trade_no', 'ORDER-' || g, 'amount_units', '2500000',
                                   'paid_amount_units', '2500000', 'fee_units', '25000', 'currency', 'USDT', 'status', 'success'),
                NULL, now() - make_interval(secs => (? - g) / 100.0)
           FROM generate_series(?::int, ?::int) AS g`,
        [owners, SEEDED_OWNERS, SEEDED_OWNERS, tableSize, from, Math.min(from + seedBatch, tableSize) - 1],
      );
    }
    await deps.database.raw(
      `INSERT INTO event_sequences (owner_type, owner_id, last_seq)
       SELECT owner_type, owner_id, max(seq) FROM events WHERE owner_id = ANY(?::text[]) GROUP BY owner_type, owner_id
       ON CONFLICT (owner_type, owner_id) DO UPDATE SET last_seq = excluded.last_seq`,
      [owners],
    );
    await deps.database.raw('ANALYZE events');
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const total = Number((await deps.database('events').count('* as n').first())?.n ?? 0);
    const pageLatencies: number[] = [];
    let after = 0;
    let read = 0;
    let expectedSeq = 1;
    const readStarted = performance.now();
    for (;;) {
      const started = performance.now();
      const response = await request(`${platform.facadeUrl}/api/v1/events?after=${after}&limit=500`, { headers: { 'x-api-key': reader.credentials.api_key } });
      const text = await response.body.text();
      pageLatencies.push(performance.now() - started);
      if (response.statusCode !== 200) throw new Error(`events ${response.statusCode}: ${text}`);
      const page = JSON.parse(text).data as { events: Array<{ seq: number }>; has_more: boolean; next_after: number };
      for (const event of page.events) {
        if (event.seq !== expectedSeq) throw new Error(`events: seq ${event.seq} where ${expectedSeq} was due`);
        expectedSeq += 1;
      }
      read += page.events.length;
      after = page.next_after;
      if (!page.has_more) break;
    }
    const readSeconds = (performance.now() - readStarted) / 1000;
    const eventsPerSecond = read / readSeconds;
    pageLatencies.sort((a, b) => a - b);
    const check = await deps.ledger.check();

    return {
      name: 'events',
      rows: [
        { phase: 'settlement → webhook, events on', operations: perPhase, concurrency, per_second: round(withEvents!.per_second), p50_ms: round(withEvents!.p50_ms), p99_ms: round(withEvents!.p99_ms) },
        { phase: 'settlement → webhook, event write bypassed (floor)', operations: perPhase, concurrency, per_second: round(floor!.per_second), p50_ms: round(floor!.p50_ms), p99_ms: round(floor!.p99_ms) },
        {
          phase: `GET /api/v1/events pages of 500 (table of ${total} events)`,
          operations: pageLatencies.length,
          concurrency: 1,
          per_second: round(eventsPerSecond),
          p50_ms: round(percentile(pageLatencies, 50)),
          p99_ms: round(percentile(pageLatencies, 99)),
        },
      ],
      ratios: [
        { label: 'settlement → webhook/s with events ÷ the same with the event write bypassed', value: withEvents!.per_second / floor!.per_second, goal: 0.95 },
        { label: 'events read/s (pages of 500 out of 1,000,000) ÷ 2,000', value: eventsPerSecond / 2000, goal: 1 },
      ],
      notes: [
        `settlement phases interleaved in 3 slices each in one process; a slice ends when the receiver has the webhook of every settlement it sent; per_second counts notification to webhook received. payin.success events written: ${announced} of ${perPhase} with events on, ${unannounced} of ${perPhase} with the write bypassed`,
        'the floor (PlatformDeps.benchFloor, set only by this bench) records each settlement’s webhook without its event: the write path before events (no event row, no numbering after the commit, no webhook-event-seq, so no turn to wait for)',
        `events table seeded with ${seedStatements} INSERT … SELECT generate_series statements (${seedBatch} rows each) of ${tableSize} rows over ${SEEDED_OWNERS} merchants in ${round(seedSeconds, 1)} s; the reader followed next_after from 0 through its ${read} events (seq checked 1, 2, 3 … with no gap) in ${round(readSeconds, 1)} s, per_second = events/s, p50/p99 per page`,
        `ledger ok: ${check.ok}`,
      ],
    };
  } finally {
    await portal.stop();
    await environment.close();
  }
}

runWhenMain(module, run);
