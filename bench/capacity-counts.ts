/**
 * Counts (does not time) the PostgreSQL statements of a payin creation and of its settlement, for the capacity
 * model (docs/capacity.md): every role in this process on one pool, so each statement any role sends is counted,
 * split into the request's own and the background loops' (the outbox dispatcher's workflow starts and notification
 * hand-overs). Payins are created and settled one at a time, so the statements of one operation do not mix with the
 * next one's; the first of each is a warm-up (caches) and not counted.
 *
 * Needs PostgreSQL and Temporal as every bench. `BENCH_COUNT_PAYINS` (default 5). Run: `npx tsx bench/capacity-counts.ts`.
 */
import type { BenchResult } from './run';
import { round, runWhenMain, startBenchEnvironment } from './support/harness';
import { startPayinPortal } from './support/payin-portal';

/** Statements of the dispatcher's sweeps (and of any transaction they open). */
const BACKGROUND = /payin_workflow_outbox|upstream_notifications/;

interface Statement {
  sql: string;
  __knexTxId?: string;
}

export async function run(): Promise<BenchResult> {
  const count = Number(process.env.BENCH_COUNT_PAYINS ?? 5);
  const environment = await startBenchEnvironment('counts');
  const portal = await startPayinPortal(environment, 'Bench counts merchant', { WEBHOOK_RETRY_INITIAL_SECONDS: '1' }).catch(async (error) => {
    await environment.close();
    throw error;
  });
  try {
    let statements: Statement[] = [];
    portal.deps.database.on('query', (query: Statement) => statements.push(query));
    const split = () => {
      const background = new Set(statements.filter((statement) => BACKGROUND.test(statement.sql)).map((statement) => statement.__knexTxId ?? statement.sql));
      const isBackground = (statement: Statement) => BACKGROUND.test(statement.sql) || (statement.__knexTxId !== undefined && background.has(statement.__knexTxId));
      const result = { own: statements.filter((statement) => !isBackground(statement)).length, background: statements.filter(isBackground).length };
      statements = [];
      return result;
    };
    const delivered = (invoice: string) => portal.receiver.received.some((item) => item.status === 200 && String(item.json.data.invoice_reference) === invoice);
    const totals = { create: { own: 0, background: 0 }, settle: { own: 0, background: 0 } };
    for (let index = 0; index <= count; index++) {
      statements = [];
      // createPayins waits until the outbox has started the payin's workflow: the start's statements are inside.
      const [payin] = await portal.createPayins(1, 1, `C${index}`);
      const created = split();
      await portal.settle(payin!.invoice);
      await portal.receiver.waitFor(() => delivered(payin!.invoice), 60_000);
      // Let the workflow's last task and the dispatcher's next sweep land inside the window.
      await new Promise((resolve) => setTimeout(resolve, 1200));
      const settled = split();
      if (index === 0) continue;
      for (const key of ['own', 'background'] as const) {
        totals.create[key] += created[key];
        totals.settle[key] += settled[key];
      }
    }
    const per = (value: number) => round(value / count, 1);
    return {
      name: 'capacity-counts',
      rows: [
        { operation: 'payin creation (B1, to its workflow started)', payins: count, statements_own: per(totals.create.own), statements_background: per(totals.create.background) },
        { operation: 'payin settlement (notification to webhook delivered)', payins: count, statements_own: per(totals.settle.own), statements_background: per(totals.settle.background) },
      ],
      notes: [
        'statements per operation through the roles’ pool (every role in this process); background: the outbox dispatcher’s sweeps, which poll every second whether or not there is work, so their share per operation falls as the rate rises',
      ],
    };
  } finally {
    await portal.stop();
    await environment.close();
  }
}

runWhenMain(module, run);
