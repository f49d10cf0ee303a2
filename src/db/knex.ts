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
  const database = knexFactory({
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
  roots.set(database.client.config as object, database);
  return database;
}

/**
 * The instances createDatabase made, by their client's config object: a transaction's client shares that object with
 * the instance it was started from (knex copies the reference), so work that must run after a transaction commits,
 * on another connection of the same pool, finds its pool from the transaction alone.
 */
const roots = new WeakMap<object, Knex>();

/**
 * The knex instance (pool) `conn` runs on, when createDatabase made it; undefined otherwise.
 */
export function rootDatabaseOf(conn: Knex | Knex.Transaction): Knex | undefined {
  return roots.get(conn.client.config as object);
}

/**
 * Runs `work` after the outermost transaction of `trx` committed (never after a rollback), without delaying the
 * commit or its caller; a failure of `work` is the caller's to handle inside it.
 */
export function afterCommit(trx: Knex.Transaction, work: () => void): void {
  let outer = trx as Knex.Transaction & { parentTransaction?: Knex.Transaction };
  while (outer.parentTransaction) outer = outer.parentTransaction as typeof outer;
  outer.executionPromise.then(work, () => undefined);
}

/** Applies every pending migration; returns the names applied now. */
export async function migrateToLatest(database: Knex): Promise<string[]> {
  const [, applied] = (await database.migrate.latest()) as [number, string[]];
  return applied;
}

export type { Knex };

/** How often a transaction PostgreSQL aborted as a deadlock's victim is run again. */
export const DEADLOCK_ATTEMPTS = 3;

/**
 * Runs `transaction` (a whole database transaction: every write of it rolled back when it fails) again when
 * PostgreSQL aborted it as a deadlock's victim (40P01) or a serialization failure (40001), up to DEADLOCK_ATTEMPTS
 * runs in all; any other error, or the last attempt's, is thrown. For transactions whose row locks cannot all be taken
 * in one order: a money-out's holds lock the source wallet and the settlement account for one leg, then the fee's
 * account for the next, while a settlement locks all three at once in id order.
 */
export async function retryingDeadlocks<T>(transaction: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await transaction();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (attempt >= DEADLOCK_ATTEMPTS || (code !== '40P01' && code !== '40001')) throw error;
    }
  }
}
