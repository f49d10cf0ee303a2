/**
 * The knex instance and migrations.
 *
 * int8 columns come back as `bigint` (money is always minor units in int8); numeric stays a string.
 */
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { migrationSource } from './migrations';

pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => BigInt(value));

/** Pool limits per process. */
export const DATABASE_POOL_MAX = 20;

/** Creates a knex instance for a postgres:// URL. */
export function createDatabase(databaseUrl: string, poolMax = DATABASE_POOL_MAX): Knex {
  return knexFactory({
    client: 'pg',
    connection: databaseUrl,
    pool: { min: 0, max: poolMax },
    migrations: { migrationSource, tableName: 'knex_migrations' },
    // Connection failures surface through the caller (health check, RPC error); knex itself stays quiet.
    log: { warn: () => undefined, error: () => undefined, deprecate: () => undefined, debug: () => undefined },
  });
}

/** Applies every pending migration; returns the names applied now. */
export async function migrateToLatest(database: Knex): Promise<string[]> {
  const [, applied] = (await database.migrate.latest()) as [number, string[]];
  return applied;
}

export type { Knex };
