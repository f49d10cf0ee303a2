/**
 * Every database connection carries server-side limits: no statement runs unbounded and no transaction holds its
 * row locks and pool connection while the process waits on something else.
 */
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
