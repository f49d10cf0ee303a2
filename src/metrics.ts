/**
 * Prometheus metrics of one process (prom-client), served on `METRICS_HOST`:`METRICS_PORT` at `/metrics` when the
 * port is set (docs/operations.md "Metrics"). Created once per process at the composition root and handed to the
 * façade, the RPC server and the activities; every role of the process reports into the same registry.
 *
 *   payments_http_request_duration_seconds{route,method,status}   façade requests (route = the route pattern)
 *   payments_rpc_duration_seconds{procedure,code}                 Connect RPCs served
 *   payments_webhook_attempt_duration_seconds{event,outcome}      webhook delivery attempts (delivered | failed)
 *   payments_audit_refusals_dropped_total{procedure}              refused RPC calls left without an audit row (per
 *                                                                 credential limit, src/rpc/audit.ts)
 *   payments_payins{status}                                       payins by status (api and worker roles)
 *   payments_payin_outbox_lag_seconds                             age of the oldest workflow start in the outbox
 *   payments_db_round_trips_total{statement}                      queries sent to PostgreSQL by this process's pool, by
 *                                                                 their first keyword (begin, commit, select, insert,
 *                                                                 with, …): one round trip each, counted as sent
 *   process_*, nodejs_*                                           prom-client's default process metrics
 */
import http from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Knex } from './db/knex';
import { listenOn } from './net';

const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export interface PlatformMetrics {
  registry: Registry;
  httpRequests: Histogram<'route' | 'method' | 'status'>;
  rpcRequests: Histogram<'procedure' | 'code'>;
  webhookAttempts: Histogram<'event' | 'outcome'>;
  auditRefusalsDropped: Counter<'procedure'>;
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
    auditRefusalsDropped: new Counter({
      name: 'payments_audit_refusals_dropped_total',
      help: 'Refused RPC calls of a credential past AUDIT_REFUSALS_PER_CREDENTIAL, answered without an audit row, by procedure',
      labelNames: ['procedure'],
      registers: [registry],
    }),
  };
  if (database) {
    const roundTrips = new Counter({
      name: 'payments_db_round_trips_total',
      help: 'Queries this process sent to PostgreSQL (one round trip each), by their first keyword',
      labelNames: ['statement'],
      registers: [registry],
    });
    // A stand-in without events (a test's registry listing) counts nothing.
    if (typeof database.on === 'function') database.on('query', (query: { sql?: string }) => roundTrips.inc({ statement: firstKeyword(query.sql) }));
    new Gauge({
      name: 'payments_payins',
      help: 'Payins by status',
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        const rows = (await database('payins').select('status').count('* as n').groupBy('status')) as Array<{ status: string; n: bigint | number | string }>;
        this.reset();
        for (const row of rows) this.set({ status: row.status }, Number(row.n));
      },
    });
    new Gauge({
      name: 'payments_payin_outbox_lag_seconds',
      help: 'Age of the oldest payin workflow start waiting in the outbox (0 when empty), seconds',
      registers: [registry],
      async collect() {
        const row = (await database('payin_workflow_outbox').min('created_at as oldest').first()) as { oldest: Date | null } | undefined;
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
