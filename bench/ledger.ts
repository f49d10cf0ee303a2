/**
 * Benchmark `ledger`: transfers per second and p50/p99 latency through `ledger.transfer` at concurrency
 * 1, 8 and 32, beside a raw-SQL baseline doing the same row work on the same tables in the same run (per transfer:
 * one statement inserting the transaction and its two postings, two balance UPDATEs in id order, one database
 * transaction). Then again with 1,000,000 existing postings (bulk-inserted with generate_series).
 *
 * Ratios: ledger ÷ baseline at c=32 (goal ≥ 0.95); ledger with 1M postings ÷ empty ledger at c=32 (goal ≥ 0.8);
 * ledger with group commit (createLedger's `groupCommit`, the `ledger+group` rows) ÷ ledger at c=32 (goal ≥ 1: it
 * is worth turning on only if it wins).
 *
 * Database: `BENCH_DATABASE_URL` or `DATABASE_URL` (a server URL; a fresh database is created and dropped), else an
 * embedded PostgreSQL in a temporary directory. `BENCH_SECONDS` (default 3) per measurement, after a short warm-up.
 * Workload: 64 funded wallets, each transfer between a random pair (both implementations alike).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import { createDatabase, type Knex } from '../src/db/knex';
import { createLedger } from '../src/ledger/ledger';
import type { Account, Ledger } from '../src/ledger/types';
import type { BenchResult } from './run';
import { percentile, round, runWhenMain, startBenchDatabaseServer } from './support/harness';

const CONCURRENCIES = [1, 8, 32];
const WALLETS = 64;
const EXISTING_POSTINGS = 1_000_000;

/** Transfers and latencies (ms) gathered over one or more measurement slices. */
interface Sample {
  transfers: number;
  seconds: number;
  latencies: number[];
}

/** Runs `work` from `concurrency` workers for `seconds` (after a short warm-up), adding to `sample`. */
async function measureSlice(sample: Sample, seconds: number, concurrency: number, work: () => Promise<void>): Promise<void> {
  const warmUntil = Date.now() + 200;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < warmUntil) await work();
    }),
  );
  const started = process.hrtime.bigint();
  const deadline = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline) {
        const t0 = process.hrtime.bigint();
        await work();
        sample.latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        sample.transfers += 1;
      }
    }),
  );
  sample.seconds += Number(process.hrtime.bigint() - started) / 1e9;
}

function summarize(sample: Sample) {
  const sorted = [...sample.latencies].sort((a, b) => a - b);
  return {
    transfers: sample.transfers,
    per_second: round(sample.transfers / (sample.seconds || 1), 1),
    p50_ms: round(percentile(sorted, 50)),
    p99_ms: round(percentile(sorted, 99)),
  };
}

async function fundedWallets(ledger: Ledger, label: string): Promise<Account[]> {
  const settlement = await ledger.platformAccount('settlement', 'USD');
  const wallets: Account[] = [];
  for (let index = 0; index < WALLETS; index += 1) {
    const wallet = await ledger.openAccount({ owner_type: 'user', owner_id: `bench-${label}-${index}`, currency: 'USD', kind: 'wallet' });
    await ledger.transfer({
      idempotency_key: `bench-fund-${wallet.id}`,
      description: 'fund',
      postings: [
        { account_id: settlement.id, amount_units: -(10n ** 12n) },
        { account_id: wallet.id, amount_units: 10n ** 12n },
      ],
    });
    wallets.push(wallet);
  }
  return wallets;
}

function randomPair(wallets: Account[]): [Account, Account] {
  const from = Math.floor(Math.random() * wallets.length);
  const to = (from + 1 + Math.floor(Math.random() * (wallets.length - 1))) % wallets.length;
  return [wallets[from]!, wallets[to]!];
}

/** Bulk-inserts `count` postings (count/2 balanced transactions with their idempotency keys) on filler accounts. */
async function seedPostings(database: Knex, count: number): Promise<void> {
  await database.transaction((trx) => seedRows(trx, count));
  await database.raw('VACUUM ANALYZE ledger_accounts, ledger_transactions, ledger_postings, ledger_idempotency_keys');
}

async function seedRows(database: Knex.Transaction, count: number): Promise<void> {
  const transactions = count / 2;
  // The seed rows reference only rows inserted here: skip the per-row foreign-key triggers (superuser only;
  // falls back to checked inserts otherwise).
  await database.raw('SAVEPOINT seed_role');
  try {
    await database.raw('SET LOCAL session_replication_role = replica');
    await database.raw('RELEASE SAVEPOINT seed_role');
  } catch {
    await database.raw('ROLLBACK TO SAVEPOINT seed_role');
  }
  // Ordered ids and keys (append-only index inserts) keep the seeding fast; the rows are ordinary ledger rows.
  const seedId = (expression: string) => `('5eed0000-0000-4000-8000-' || lpad(to_hex(${expression}), 12, '0'))::uuid`;
  await database.raw(`
    INSERT INTO ledger_accounts (id, owner_type, owner_id, currency, kind, allows_negative)
    SELECT gen_random_uuid(), 'platform', 'filler-' || i, 'USD', 'settlement', true FROM generate_series(1, 1000) AS i`);
  await database.raw(`
    CREATE TEMP TABLE filler AS SELECT row_number() OVER (ORDER BY id) - 1 AS n, id FROM ledger_accounts WHERE owner_id LIKE 'filler-%'`);
  await database.raw(`
    INSERT INTO ledger_transactions (id, idempotency_key, request_fingerprint, description, created_at)
    SELECT ${seedId('i')}, 'seed-' || lpad(i::text, 9, '0'), 'seed', 'seed', now() - interval '1 day'
      FROM generate_series(1, ${transactions}) AS i`);
  await database.raw(`
    INSERT INTO ledger_idempotency_keys (idempotency_key, operation, request_fingerprint, transaction_id, created_at)
    SELECT 'seed-' || lpad(i::text, 9, '0'), 'transfer', 'seed', ${seedId('i')}, now() - interval '1 day'
      FROM generate_series(1, ${transactions}) AS i`);
  await database.raw(`
    INSERT INTO ledger_postings (transaction_id, account_id, amount_units, currency)
    SELECT ${seedId('i')}, f.id, CASE WHEN side = 0 THEN -1 ELSE 1 END, 'USD'
      FROM generate_series(1, ${transactions}) AS i CROSS JOIN (VALUES (0), (1)) AS s(side)
      JOIN filler f ON f.n = (i * 7 + side * 13) % 1000
     ORDER BY i, side`);
  await database.raw(`
    UPDATE ledger_accounts a SET posted_units = a.posted_units + s.total
      FROM (SELECT account_id, sum(amount_units) AS total FROM ledger_postings p
              JOIN filler f ON f.id = p.account_id GROUP BY account_id) s
     WHERE a.id = s.account_id`);
  await database.raw('DROP TABLE filler');
}

/** One bench database with funded wallets and the two ways of moving one unit between a random pair. */
async function setUp(url: string, seedPostings_: number) {
  const database = createDatabase(url, 34);
  if (seedPostings_ > 0) await seedPostings(database, seedPostings_);
  const ledger = createLedger(database);
  const ledgerWallets = await fundedWallets(ledger, 'ledger');
  const baselineWallets = await fundedWallets(ledger, 'baseline');
  const tag = randomBytes(4).toString('hex');
  let sequence = 0;
  const viaLedger = async () => {
    const [from, to] = randomPair(ledgerWallets);
    sequence += 1;
    await ledger.transfer({
      idempotency_key: `bench-${tag}-${sequence}`,
      description: 'bench',
      postings: [
        { account_id: from.id, amount_units: -1n },
        { account_id: to.id, amount_units: 1n },
      ],
    });
  };
  // The same transfers through a ledger with group commit (an option, off by default), on the ledger's wallets.
  const grouped = createLedger(database, { groupCommit: {} });
  const viaGrouped = async () => {
    const [from, to] = randomPair(ledgerWallets);
    sequence += 1;
    await grouped.transfer({
      idempotency_key: `group-${tag}-${sequence}`,
      description: 'bench',
      postings: [
        { account_id: from.id, amount_units: -1n },
        { account_id: to.id, amount_units: 1n },
      ],
    });
  };
  const viaBaseline = async () => {
    const [from, to] = randomPair(baselineWallets);
    sequence += 1;
    const idempotencyKey = `base-${tag}-${sequence}`;
    const transactionId = randomUUID();
    const [first, second] = from.id < to.id ? [from.id, to.id] : [to.id, from.id];
    await database.transaction(async (trx) => {
      await trx.raw(
        `WITH t AS (
           INSERT INTO ledger_transactions (id, idempotency_key, request_fingerprint, description, metadata)
           VALUES (?, ?, 'baseline', 'bench', '{}'::jsonb) RETURNING id
         )
         INSERT INTO ledger_postings (transaction_id, account_id, amount_units, currency)
         SELECT t.id, v.a, v.u, 'USD' FROM t, (VALUES (?::uuid, -1::bigint), (?::uuid, 1::bigint)) AS v(a, u)`,
        [transactionId, idempotencyKey, from.id, to.id],
      );
      await trx.raw('UPDATE ledger_accounts SET posted_units = posted_units + ? WHERE id = ?', [first === from.id ? -1 : 1, first]);
      await trx.raw('UPDATE ledger_accounts SET posted_units = posted_units + ? WHERE id = ?', [second === from.id ? -1 : 1, second]);
    });
  };
  return { database, ledger, viaLedger, viaGrouped, viaBaseline };
}

/**
 * Measures the four configurations (empty / 1M postings × baseline / ledger) interleaved in short slices, so that
 * load from anything else on the machine hits them alike.
 */
export async function run(): Promise<BenchResult> {
  const seconds = Number(process.env.BENCH_SECONDS ?? 3);
  const rounds = 3;
  const server = await startBenchDatabaseServer('ledger');
  const setups: Array<Awaited<ReturnType<typeof setUp>>> = [];
  try {
    const seedStarted = Date.now();
    const seeded = await setUp(await server.createDatabase(), EXISTING_POSTINGS);
    setups.push(seeded);
    const seedSeconds = round((Date.now() - seedStarted) / 1000, 1);
    const empty = await setUp(await server.createDatabase(), 0);
    setups.push(empty);

    const configurations = [
      { postings: 'empty', implementation: 'baseline', work: empty.viaBaseline },
      { postings: 'empty', implementation: 'ledger', work: empty.viaLedger },
      { postings: 'empty', implementation: 'ledger+group', work: empty.viaGrouped },
      { postings: '1M', implementation: 'baseline', work: seeded.viaBaseline },
      { postings: '1M', implementation: 'ledger', work: seeded.viaLedger },
      { postings: '1M', implementation: 'ledger+group', work: seeded.viaGrouped },
    ];
    const rows: Array<Record<string, string | number>> = [];
    const figures = new Map<string, number>();
    for (const concurrency of CONCURRENCIES) {
      const samples = configurations.map(() => ({ transfers: 0, seconds: 0, latencies: [] as number[] }));
      for (let round_ = 0; round_ < rounds; round_ += 1) {
        for (const [index, configuration] of configurations.entries()) {
          await measureSlice(samples[index]!, seconds / rounds, concurrency, configuration.work);
        }
      }
      for (const [index, configuration] of configurations.entries()) {
        const result = summarize(samples[index]!);
        figures.set(`${configuration.postings}/${configuration.implementation}/${concurrency}`, result.per_second);
        rows.push({ postings: configuration.postings, implementation: configuration.implementation, concurrency, ...result });
        console.error(`ledger bench: ${configuration.postings} ${configuration.implementation} c=${concurrency}: ${result.per_second}/s`);
      }
    }

    const checks = await Promise.all(setups.map((setup) => setup.ledger.check()));
    const ratio = (a: string, b: string) => round((figures.get(a) ?? 0) / (figures.get(b) || 1));
    return {
      name: 'ledger',
      rows,
      ratios: [
        { label: 'ledger / baseline, c=32, empty', value: ratio('empty/ledger/32', 'empty/baseline/32'), goal: 0.95 },
        { label: 'ledger with 1M postings / empty ledger, c=32', value: ratio('1M/ledger/32', 'empty/ledger/32'), goal: 0.8 },
        { label: 'ledger / baseline, c=32, 1M postings', value: ratio('1M/ledger/32', '1M/baseline/32'), goal: 0.95 },
        // Group commit is worth turning on only if it beats the ledger without it.
        { label: 'ledger with group commit / ledger, c=32, empty', value: ratio('empty/ledger+group/32', 'empty/ledger/32'), goal: 1 },
        { label: 'ledger with group commit / ledger, c=32, 1M postings', value: ratio('1M/ledger+group/32', '1M/ledger/32'), goal: 1 },
      ],
      notes: [
        `database: ${server.where}; ${seconds}s per figure in ${rounds} interleaved slices; ${WALLETS} wallets per implementation, random pairs`,
        `seeded ${EXISTING_POSTINGS} postings in ${seedSeconds}s; ledger check after the run: ${checks.every((check) => check.ok) ? 'ok' : 'FAILED'}`,
        `${os.cpus().length} CPUs shared by client, pool and PostgreSQL (load average ${os.loadavg()[0]!.toFixed(1)})`,
      ],
    };
  } finally {
    for (const setup of setups) await setup.database.destroy();
    await server.stop();
  }
}

runWhenMain(module, run);
