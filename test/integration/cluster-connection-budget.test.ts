/**
 * `payments cluster up` refuses a cluster that could open more connections than its PostgreSQL server accepts
 * (src/cli/cluster.ts checkConnectionBudget), read from the real server's settings.
 */
import { checkConnectionBudget } from '../../src/cli/cluster';
import { createDatabase, type Knex } from '../../src/db/knex';
import { createTestDatabase } from '../support/platform';

let database: Knex;
let drop: () => Promise<void>;
let accepts: number;

beforeAll(async () => {
  const created = await createTestDatabase();
  drop = created.drop;
  database = createDatabase(created.url, 1);
  const { rows } = (await database.raw("SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int AS accepts")) as {
    rows: Array<{ accepts: number }>;
  };
  accepts = rows[0]!.accepts;
});
afterAll(async () => {
  await database.destroy();
  await drop();
});

it('accepts a budget the server can hold and answers what it accepts', async () => {
  await expect(checkConnectionBudget(database, { roles: 10, temporal: accepts - 10, total: accepts })).resolves.toBe(accepts);
});

it('refuses one connection more, naming both figures and what lowers the budget', async () => {
  const refused = checkConnectionBudget(database, { roles: 49, temporal: accepts - 48, total: accepts + 1 });
  await expect(refused).rejects.toThrow(`may open ${accepts + 1} PostgreSQL connections (api and worker processes 49, Temporal server ${accepts - 48}) but the server accepts ${accepts}`);
  await expect(refused).rejects.toThrow('TEMPORAL_SQL_MAX_CONNS');
});
