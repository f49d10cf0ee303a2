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

/**
 * Server-side limits set on every connection, so no statement runs unbounded and no transaction holds row locks
 * and a pool connection while its process waits on something else (a network call, a crash mid-transaction).
 * Seconds; 0 disables a limit (migrations of a large table may need that).
 */
export interface SessionLimits {
  statement_timeout_seconds: number;
  idle_in_transaction_timeout_seconds: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { statement_timeout_seconds: 30, idle_in_transaction_timeout_seconds: 60 };

/** Creates a knex instance for a postgres:// URL, with `limits` on every connection of its pool. */
export function createDatabase(databaseUrl: string, poolMax = DATABASE_POOL_MAX, limits: SessionLimits = DEFAULT_SESSION_LIMITS): Knex {
  return knexFactory({
    client: 'pg',
    connection: {
      connectionString: databaseUrl,
      statement_timeout: limits.statement_timeout_seconds * 1000,
      idle_in_transaction_session_timeout: limits.idle_in_transaction_timeout_seconds * 1000,
    },
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
