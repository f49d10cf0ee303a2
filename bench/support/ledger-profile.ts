/**
 * Profile of one ledger transfer against the bench's raw-SQL baseline, sequential (c=1): statements per transfer and
 * the mean client-side time of each statement shape (ms, from knex's query / query-response events), plus the
 * whole transfer's mean. Not a bench (no goals): it shows where a transfer's time goes. `npx tsx
 * bench/support/ledger-profile.ts [transfers]`; database as for the benches.
 */
import { randomUUID } from 'node:crypto';
import { createDatabase } from '../../src/db/knex';
import { createLedger } from '../../src/ledger/ledger';
import { startBenchDatabaseServer } from './harness';

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 2000);
  const server = await startBenchDatabaseServer('ledgerprofile');
  const database = createDatabase(await server.createDatabase(), 4);
  try {
    const ledger = createLedger(database);
    const settlement = await ledger.platformAccount('settlement', 'USD');
    const wallets: Array<{ id: string }> = [];
    for (let index = 0; index < 8; index += 1) {
      const wallet = await ledger.openAccount({ owner_type: 'user', owner_id: `p-${index}`, currency: 'USD', kind: 'wallet' });
      await ledger.transfer({ idempotency_key: `fund-${index}`, description: 'fund', postings: [{ account_id: settlement.id, amount_units: -1000000n }, { account_id: wallet.id, amount_units: 1000000n }] });
      wallets.push(wallet);
    }
    const started = new Map<string, bigint>();
    const shapes = new Map<string, { n: number; ms: number }>();
    let statements = 0;
    let marks: bigint[] = [];
    const gaps: number[] = [];
    const mark = (done: boolean) => {
      marks.push(process.hrtime.bigint());
      if (!done) return;
      marks.slice(1).forEach((t, index) => (gaps[index] = (gaps[index] ?? 0) + Number(t - marks[index]!) / 1e6));
      marks = [];
    };
    database.on('query', (query: { __knexQueryUid: string }) => {
      mark(false);
      statements += 1;
      started.set(query.__knexQueryUid, process.hrtime.bigint());
    });
    database.on('query-response', (_response: unknown, query: { __knexQueryUid: string; sql: string }) => {
      const t0 = started.get(query.__knexQueryUid);
      if (t0 === undefined) return;
      const shape = query.sql.replace(/\s+/g, ' ').slice(0, 60);
      const entry = shapes.get(shape) ?? { n: 0, ms: 0 };
      entry.n += 1;
      entry.ms += Number(process.hrtime.bigint() - t0) / 1e6;
      shapes.set(shape, entry);
    });
    const one = (i: number) => {
      const a = wallets[i % 8]!;
      const b = wallets[(i + 3) % 8]!;
      return { a, b };
    };
    const runs: Record<string, () => Promise<void>> = {
      ledger: async () => {
        for (let i = 0; i < count; i += 1) {
          const { a, b } = one(i);
          mark(false);
          await ledger.transfer({ idempotency_key: `l-${i}-${randomUUID()}`, description: 'bench', postings: [{ account_id: a.id, amount_units: -1n }, { account_id: b.id, amount_units: 1n }] });
          mark(true);
        }
      },
      baseline: async () => {
        for (let i = 0; i < count; i += 1) {
          const { a, b } = one(i);
          const [first, second] = a.id < b.id ? [a.id, b.id] : [b.id, a.id];
          mark(false);
          await database.transaction(async (trx) => {
            await trx.raw(
              `WITH t AS (INSERT INTO ledger_transactions (id, idempotency_key, request_fingerprint, description, metadata)
                 VALUES (?, ?, 'baseline', 'bench', '{}'::jsonb) RETURNING id)
               INSERT INTO ledger_postings (transaction_id, account_id, amount_units, currency)
               SELECT t.id, v.a, v.u, 'USD' FROM t, (VALUES (?::uuid, -1::bigint), (?::uuid, 1::bigint)) AS v(a, u)`,
              [randomUUID(), `b-${i}-${randomUUID()}`, a.id, b.id],
            );
            await trx.raw('UPDATE ledger_accounts SET posted_units = posted_units + ? WHERE id = ?', [first === a.id ? -1 : 1, first]);
            await trx.raw('UPDATE ledger_accounts SET posted_units = posted_units + ? WHERE id = ?', [second === a.id ? -1 : 1, second]);
          });
          mark(true);
        }
      },
    };
    for (const round of [1, 2]) {
      for (const [name, work] of Object.entries(runs)) {
        shapes.clear();
        gaps.length = 0;
        statements = 0;
        const t0 = process.hrtime.bigint();
        const cpu0 = process.cpuUsage();
        await work();
        const ms = Number(process.hrtime.bigint() - t0) / 1e6 / count;
        const cpu = process.cpuUsage(cpu0);
        if (round === 1) continue; // warm-up
        console.log(`${name}: ${ms.toFixed(3)} ms per transfer, ${(statements / count).toFixed(2)} statements, node CPU ${((cpu.user + cpu.system) / 1000 / count).toFixed(3)} ms per transfer`);
        console.log(`  gaps between call, each statement sent, and the answer (ms): ${gaps.map((gap) => (gap / count).toFixed(3)).join(' | ')}`);
        for (const [shape, entry] of shapes) console.log(`  ${(entry.ms / entry.n).toFixed(3)} ms  x${(entry.n / count).toFixed(2)}  ${shape}`);
      }
    }
  } finally {
    await database.destroy();
    await server.stop();
  }
}

void main();
