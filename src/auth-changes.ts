/**
 * Changes to who may call the platform (a merchant or partner suspended or resumed, keys changed), announced to every
 * process so that credential caches drop what they hold: the change applies on the very next request everywhere.
 *
 * Announced with PostgreSQL `NOTIFY` on one channel, inside the transaction that makes the change (delivered to
 * every listening process when it commits), and applied to this process's own caches at once. Each process listens
 * with one dedicated connection; while it is down (at start-up too) `listening` is false, callers skip their caches,
 * and it keeps trying to listen again.
 */
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import type { Knex } from './db/knex';
import type { Logger } from './logger';

export const AUTH_CHANGES_CHANNEL = 'payments_auth_changes';
const RECONNECT_DELAY_MS = 1000;

/**
 * What changed: caches drop the entries of the merchant, partner or service credential named, or everything when
 * none is named.
 */
export interface AuthChange {
  merchant_id?: string;
  partner_id?: string;
  credential_id?: string;
}

export interface AuthChanges {
  /** False while this process cannot hear changes (its connection is down): caches must not be trusted then. */
  readonly listening: boolean;
  /** Calls `listener` on every change announced by any process (this one included). Returns an unsubscribe. */
  subscribe(listener: (change: AuthChange) => void): () => void;
  /** Announces `change` inside `trx` (delivered to other processes on commit) and applies it here now. */
  publish(trx: Knex | Knex.Transaction, change: AuthChange): Promise<void>;
  close(): Promise<void>;
}

export async function startAuthChanges(databaseUrl: string, logger: Logger): Promise<AuthChanges> {
  const listeners = new Set<(change: AuthChange) => void>();
  const deliver = (change: AuthChange) => {
    for (const listener of listeners) listener(change);
  };
  let client: pg.Client | undefined;
  let closed = false;
  let listening = false;
  let retryTimer: NodeJS.Timeout | undefined;
  const retry = () => {
    if (closed) return;
    retryTimer = setTimeout(() => void listen(), RECONNECT_DELAY_MS);
    retryTimer.unref();
  };

  async function listen(): Promise<void> {
    retryTimer = undefined;
    if (closed) return;
    const next = new pg.Client({ connectionString: databaseUrl });
    next.on('notification', (message) => {
      let change: AuthChange = {};
      try {
        change = JSON.parse(message.payload ?? '{}') as AuthChange;
      } catch {
        change = {};
      }
      deliver(change);
    });
    next.on('error', (error) => {
      if (!listening) return;
      listening = false;
      logger.warn({ err: error.message }, 'auth change listener lost its connection; caches bypassed until it is back');
      deliver({});
      retry();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${AUTH_CHANGES_CHANNEL}`);
    } catch (error) {
      await next.end().catch(() => undefined);
      logger.warn({ err: (error as Error).message }, 'auth change listener cannot listen yet; caches bypassed');
      retry();
      return;
    }
    if (closed) {
      await next.end().catch(() => undefined);
      return;
    }
    client = next;
    listening = true;
    deliver({});
  }
  await listen();

  return {
    get listening() {
      return listening;
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async publish(trx, change) {
      await trx.raw('select pg_notify(?, ?)', [AUTH_CHANGES_CHANNEL, JSON.stringify(change)]);
      deliver(change);
    },
    async close() {
      closed = true;
      listening = false;
      if (retryTimer) clearTimeout(retryTimer);
      await client?.end().catch(() => undefined);
    },
  };
}

/**
 * A bounded cache of credential and party lookups that every change announced through `authChanges` empties at
 * once, in every process. Entries live `ttlSeconds` (0 turns the cache off) and are used only while the process is
 * listening; a lookup that was running when a change arrived is not kept, since it may have read the row before the
 * change committed. At most `max` entries, least recently used evicted.
 */
export interface ChangeAwareCache<V> {
  /** The cached value of `key`, else what `load` finds, kept for next time when `keep(value)` holds (default: always). */
  get(key: string, load: () => Promise<V | undefined>, keep?: (value: V) => boolean): Promise<V | undefined>;
}

export function changeAwareCache<V extends object>(
  authChanges: AuthChanges,
  options: { ttlSeconds: number; max: number },
): ChangeAwareCache<V> {
  if (options.ttlSeconds <= 0) return { get: (_key, load) => load() };
  const entries = new LRUCache<string, V>({ max: options.max, ttl: options.ttlSeconds * 1000 });
  let generation = 0;
  authChanges.subscribe(() => {
    generation++;
    entries.clear();
  });
  return {
    async get(key, load, keep = () => true) {
      if (!authChanges.listening) return load();
      const hit = entries.get(key);
      if (hit) return hit;
      const started = generation;
      const value = await load();
      if (value !== undefined && keep(value) && started === generation && authChanges.listening) entries.set(key, value);
      return value;
    },
  };
}
