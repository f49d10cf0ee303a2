/**
 * Every database connection carries server-side limits: no statement runs unbounded and no transaction holds its
 * row locks and pool connection while the process waits on something else.
 */
import { retryingDeadlocks } from '../../src/db/knex';
import { startTestPlatform, type TestPlatform } from '../support/platform';

describe('database session limits', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({
      roles: ['api'],
      env: { DATABASE_STATEMENT_TIMEOUT_SECONDS: '2', DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS: '1' },
    });
  });
  afterAll(() => platform.stop());

  it('sets statement_timeout and idle_in_transaction_session_timeout on each connection', async () => {
    const statement = await platform.deps.database.raw('show statement_timeout');
    const idle = await platform.deps.database.raw('show idle_in_transaction_session_timeout');
    expect(statement.rows[0].statement_timeout).toBe('2s');
    expect(idle.rows[0].idle_in_transaction_session_timeout).toBe('1s');
  });

  it('cancels a statement past the timeout', async () => {
    await expect(platform.deps.database.raw('select pg_sleep(4)')).rejects.toThrow(/statement timeout/);
  });

  it('ends a transaction left idle past the timeout, releasing its locks', async () => {
    const outcome = platform.deps.database.transaction(async (trx) => {
      await trx.raw('select 1');
      await new Promise((resolve) => setTimeout(resolve, 2500));
      await trx.raw('select 1');
    });
    await expect(outcome).rejects.toThrow();
    const idle = await platform.deps.database.raw(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and state = 'idle in transaction'",
    );
    expect(idle.rows[0].n).toBe(0);
  });
});

describe('retryingDeadlocks', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ roles: ['api'] });
  });
  afterAll(() => platform.stop());

  /** Two transactions that lock two rows in opposite orders, meeting after their first lock: one is a deadlock's victim. */
  async function crossed(wrap: <T>(work: () => Promise<T>) => Promise<T>): Promise<PromiseSettledResult<void>[]> {
    const db = platform.deps.database;
    const table = `deadlock_probe_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
    await db.raw(`CREATE TABLE ${table} (id int PRIMARY KEY, n int NOT NULL); INSERT INTO ${table} VALUES (1, 0), (2, 0)`);
    try {
      let firstLocks = 0;
      let met!: () => void;
      const meeting = new Promise<void>((resolve) => (met = resolve));
      const attempts = { one: 0, two: 0 };
      const run = (name: 'one' | 'two', first: number, second: number) =>
        wrap(() =>
          db.transaction(async (trx) => {
            attempts[name] += 1;
            await trx.raw(`UPDATE ${table} SET n = n + 1 WHERE id = ?`, [first]);
            firstLocks += 1;
            if (firstLocks === 2) met();
            // Only the first attempts meet; a retry runs once the other has committed.
            if (attempts[name] === 1) await meeting;
            await trx.raw(`UPDATE ${table} SET n = n + 1 WHERE id = ?`, [second]);
          }),
        );
      const results = await Promise.allSettled([run('one', 1, 2), run('two', 2, 1)]);
      const rows = (await db.raw(`SELECT id, n FROM ${table} ORDER BY id`)).rows as Array<{ id: number; n: number }>;
      return Object.assign(results, { rows, attempts });
    } finally {
      await db.raw(`DROP TABLE ${table}`);
    }
  }

  it('runs a deadlock victim again: both transactions commit, each once', async () => {
    const results = (await crossed(retryingDeadlocks)) as PromiseSettledResult<void>[] & { rows: Array<{ id: number; n: number }>; attempts: { one: number; two: number } };
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled']);
    expect(results.rows).toEqual([{ id: 1, n: 2 }, { id: 2, n: 2 }]);
    expect(results.attempts.one + results.attempts.two).toBe(3);
  });

  it('without it, PostgreSQL aborts one of them (40P01): the case it exists for', async () => {
    const results = await crossed((work) => work());
    expect(results.filter((result) => result.status === 'rejected').map((result) => ((result as PromiseRejectedResult).reason as { code?: string }).code)).toEqual(['40P01']);
  });

  it('does not run again on any other error', async () => {
    let runs = 0;
    const failing = retryingDeadlocks(async () => {
      runs += 1;
      throw Object.assign(new Error('unique violation'), { code: '23505' });
    });
    await expect(failing).rejects.toThrow('unique violation');
    expect(runs).toBe(1);
  });
});
