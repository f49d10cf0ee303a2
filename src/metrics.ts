/**
 * Prometheus metrics of one process (prom-client), served on `METRICS_HOST`:`METRICS_PORT` at `/metrics` when the
 * port is set (docs/operations.md "Metrics"). Created once per process at the composition root and handed to the
 * façade, the RPC server and the activities; every role of the process reports into the same registry.
 *
 *   payments_http_request_duration_seconds{route,method,status}   façade requests (route = the route pattern)
 *   payments_rpc_duration_seconds{procedure,code}                 Connect RPCs served
 *   payments_webhook_attempt_duration_seconds{event,outcome}      webhook delivery attempts (delivered | failed)
 *   payments_webhook_attempts_total{outcome}                      webhook delivery attempts: delivered, http_error,
 *                                                                 timeout, network, refused (the outbound policy)
 *   payments_payments_total{kind,status}                          payments reaching a state, counted as the change
 *                                                                 commits (its event: payin success, deposit
 *                                                                 created…); kind and status from the event catalog
 *   payments_refusals_total{reason}                               RPCs answered with a refusal, by its reason
 *   payments_lockouts_total{door,limit}                           authentication attempts refused by a lockout
 *                                                                 (limit: pair, credential, address) or a caller's
 *                                                                 request rate (door request, limit caller)
 *   payments_admission_rejections_total{server,why}               requests refused by admission control (server:
 *                                                                 rpc, facade; why: queue_full, queue_timeout)
 *   payments_db_pool_acquire_seconds                              waits for a database connection from the pool
 *   payments_db_pool_waits_total                                  acquires that found no free connection
 *   payments_db_pool_connections{state}                           the pool now: used, free, pending (acquires
 *                                                                 waiting), read from memory at each scrape
 *   payments_audit_refusals_dropped_total{procedure}              refused RPC calls left without an audit row (per
 *                                                                 credential limit, src/rpc/audit.ts)
 *   payments_payin_outbox_lag_seconds                             age of the oldest workflow start in the outbox
 *   payments_db_round_trips_total{statement}                      queries sent to PostgreSQL by this process's pool, by
 *                                                                 their first keyword (begin, commit, select, insert,
 *                                                                 with, …): one round trip each, counted as sent
 *   process_*, nodejs_*                                           prom-client's default process metrics
 *
 * Every label is bounded (a catalog, a reason table, a fixed list); no scrape reads a table whole: the payment counts
 * are counters on the write path (Prometheus sums them over processes: `sum by (kind, status)
 * (increase(payments_payments_total[1h]))`), and the outbox lag reads the outbox's first row by its primary key.
 */
import http from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Knex } from './db/knex';
import { listenOn } from './net';

const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const POOL_WAIT_BUCKETS_SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** How a webhook delivery attempt ended (payments_webhook_attempts_total's `outcome`). */
export type WebhookAttemptOutcome = 'delivered' | 'http_error' | 'timeout' | 'network' | 'refused';

export interface PlatformMetrics {
  registry: Registry;
  httpRequests: Histogram<'route' | 'method' | 'status'>;
  rpcRequests: Histogram<'procedure' | 'code'>;
  webhookAttempts: Histogram<'event' | 'outcome'>;
  webhookAttemptOutcomes: Counter<'outcome'>;
  payments: Counter<'kind' | 'status'>;
  refusals: Counter<'reason'>;
  lockouts: Counter<'door' | 'limit'>;
  admissionRejections: Counter<'server' | 'why'>;
  auditRefusalsDropped: Counter<'procedure'>;
}

/** A reason as a label: reason tables' names are UPPER_SNAKE; anything else (never expected) is `OTHER`. */
export function reasonLabel(reason: string): string {
  return /^[A-Z][A-Z0-9_]{0,63}$/.test(reason) ? reason : 'OTHER';
}

/** The pool of a knex instance (tarn.js), as much of it as the metrics read. */
interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  on(event: 'acquireRequest', listener: (eventId: number) => void): void;
  on(event: 'acquireSuccess' | 'acquireFail', listener: (eventId: number) => void): void;
}

/**
 * Observes the database pool's acquires: how long each waited for a connection, and how many found none free. The
 * pool's events carry an id per acquire, so a wait is timed from its request to its success (or failure).
 */
function observePool(database: Knex, registry: Registry): void {
  const pool = (database as { client?: { pool?: TarnPool } }).client?.pool;
  const waited = new Histogram({
    name: 'payments_db_pool_acquire_seconds',
    help: 'Waits for a database connection from the pool, seconds',
    buckets: POOL_WAIT_BUCKETS_SECONDS,
    registers: [registry],
  });
  const waits = new Counter({ name: 'payments_db_pool_waits_total', help: 'Database connection acquires that found no free connection', registers: [registry] });
  new Gauge({
    name: 'payments_db_pool_connections',
    help: 'The database pool now: connections used and free, acquires pending',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      if (!pool) return;
      this.set({ state: 'used' }, pool.numUsed());
      this.set({ state: 'free' }, pool.numFree());
      this.set({ state: 'pending' }, pool.numPendingAcquires());
    },
  });
  // A knex without a pool (none configured yet) has no acquires to observe.
  if (!pool) return;
  const requested = new Map<number, number>();
  pool.on('acquireRequest', (eventId) => {
    requested.set(eventId, performance.now());
    if (pool.numFree() === 0) waits.inc();
  });
  const settle = (eventId: number) => {
    const at = requested.get(eventId);
    if (at === undefined) return;
    requested.delete(eventId);
    waited.observe((performance.now() - at) / 1000);
  };
  pool.on('acquireSuccess', settle);
  pool.on('acquireFail', settle);
}

/**
 * The process's registry with every platform metric; `database` adds the gauges read from it at each scrape;
 * `processMetrics` adds prom-client's process and event-loop metrics (only where they are served: they install
 * observers for the life of the process).
 */
export function createMetrics(role: string, database?: Knex, processMetrics = false): PlatformMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ role });
  if (processMetrics) collectDefaultMetrics({ register: registry });
  const metrics: PlatformMetrics = {
    registry,
    httpRequests: new Histogram({
      name: 'payments_http_request_duration_seconds',
      help: 'Façade requests by route pattern, method and status, seconds',
      labelNames: ['route', 'method', 'status'],
      buckets: LATENCY_BUCKETS_SECONDS,
      registers: [registry],
    }),
    rpcRequests: new Histogram({
      name: 'payments_rpc_duration_seconds',
      help: 'Connect RPCs served, by procedure and code, seconds',
      labelNames: ['procedure', 'code'],
      buckets: LATENCY_BUCKETS_SECONDS,
      registers: [registry],
    }),
    webhookAttempts: new Histogram({
      name: 'payments_webhook_attempt_duration_seconds',
      help: 'Webhook delivery attempts by event and outcome, seconds',
      labelNames: ['event', 'outcome'],
      buckets: LATENCY_BUCKETS_SECONDS,
      registers: [registry],
    }),
    webhookAttemptOutcomes: new Counter({
      name: 'payments_webhook_attempts_total',
      help: 'Webhook delivery attempts by outcome (delivered, http_error, timeout, network, refused)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    payments: new Counter({
      name: 'payments_payments_total',
      help: 'Payments reaching a state (kind and status of the event announcing it), counted as the change commits',
      labelNames: ['kind', 'status'],
      registers: [registry],
    }),
    refusals: new Counter({ name: 'payments_refusals_total', help: 'RPCs answered with a refusal, by reason', labelNames: ['reason'], registers: [registry] }),
    lockouts: new Counter({
      name: 'payments_lockouts_total',
      help: 'Authentication attempts refused by a lockout (door, limit: pair, credential, address), and callers refused by their request rate (door request)',
      labelNames: ['door', 'limit'],
      registers: [registry],
    }),
    admissionRejections: new Counter({
      name: 'payments_admission_rejections_total',
      help: 'Requests refused by admission control (server: rpc, facade; why: queue_full, queue_timeout)',
      labelNames: ['server', 'why'],
      registers: [registry],
    }),
    auditRefusalsDropped: new Counter({
      name: 'payments_audit_refusals_dropped_total',
      help: 'Refused RPC calls of a credential past AUDIT_REFUSALS_PER_CREDENTIAL, answered without an audit row, by procedure',
      labelNames: ['procedure'],
      registers: [registry],
    }),
  };
  if (database) {
    observePool(database, registry);
    const roundTrips = new Counter({
      name: 'payments_db_round_trips_total',
      help: 'Queries this process sent to PostgreSQL (one round trip each), by their first keyword',
      labelNames: ['statement'],
      registers: [registry],
    });
    // A stand-in without events (a test's registry listing) counts nothing.
    if (typeof database.on === 'function') database.on('query', (query: { sql?: string }) => roundTrips.inc({ statement: firstKeyword(query.sql) }));
    new Gauge({
      name: 'payments_payin_outbox_lag_seconds',
      help: 'Age of the oldest payin workflow start waiting in the outbox (0 when empty), seconds',
      registers: [registry],
      async collect() {
        // The first row by its primary key (ids grow with created_at): one index probe, however long the outbox.
        const row = (await database('payin_workflow_outbox').orderBy('id').select('created_at as oldest').first()) as { oldest: Date | null } | undefined;
        this.set(row?.oldest ? Math.max(0, (Date.now() - new Date(row.oldest).getTime()) / 1000) : 0);
      },
    });
  }
  return metrics;
}

/** The first SQL keyword of `sql`, lower case (`other` when none): a bounded label. */
function firstKeyword(sql: string | undefined): string {
  const keyword = /^\s*([A-Za-z]+)/.exec(sql ?? '')?.[1]?.toLowerCase();
  return keyword && KEYWORDS.has(keyword) ? keyword : 'other';
}

const KEYWORDS = new Set(['begin', 'commit', 'rollback', 'savepoint', 'release', 'select', 'insert', 'update', 'delete', 'with', 'set', 'lock']);

/** Serves `GET /metrics` of `metrics` on host:port (port 0: any free one). */
export async function startMetricsServer(metrics: PlatformMetrics, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((request, response) => {
    if (request.method !== 'GET' || request.url !== '/metrics') {
      response.writeHead(404).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => response.writeHead(500).end(),
    );
  });
  const address = await listenOn(server, port, host);
  return {
    url: `http://${host}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
