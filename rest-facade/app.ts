/**
 * The Koa façade (platform decisions §1): request id, logging, raw body capture and limits, then one router per
 * area. It holds no business logic: every fact comes from a Connect client (`ctx.state.clients`).
 */
import Router from '@koa/router';
import { trace } from '@opentelemetry/api';
import Koa from 'koa';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import getRawBody from 'raw-body';
import type { Config } from '../src/config';
import type { Logger } from '../src/logger';
import type { PlatformMetrics } from '../src/metrics';
import { addressGroup } from '../src/abuse';
import { AdmissionRefusedError, createAddressLimit, createAdmission } from '../src/admission';
import { listenOn } from '../src/net';
import type { PlatformClients } from '../src/rpc/clients';
import { docsRouter } from './docs';
import { healthRouter } from './health';
import { sendHtml } from './views/html';
import type { FacadeContext, FacadeState } from './context';

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 1_048_576;

/** The statuses the façade itself answers on an area's paths, before or after its router. */
export type EdgeStatus = 404 | 405 | 413 | 500 | 503;

/** A router for one area, mounted under its prefix, and the area's own envelope for the façade's answers. */
export interface AreaRouter {
  prefix: string;
  router: Router<FacadeState>;
  /** The paths (after the prefix) the area owns; under a non-empty prefix every path is the area's. */
  paths: RegExp;
  /** The area's JSON envelope for an unknown route, a wrong method, a body too large, a last-resort fault. */
  edge(status: EdgeStatus): { status: number; body: unknown };
  /** Paths served to browsers (hosted pages), whose errors are HTML pages. */
  pages?: RegExp;
  pageEdge?(status: EdgeStatus): string;
  /**
   * Headers every answer on the area's paths carries, whoever answered it (its routes, or the façade's own 400, 404,
   * 405, 413, 500 and 503): set last, over what the answer set.
   */
  headers?(ctx: FacadeContext): void;
}

/** The area owning `path` and the path relative to its prefix, or undefined. */
function areaOf(areas: AreaRouter[], path: string): { area: AreaRouter; relative: string } | undefined {
  for (const area of areas) {
    if (area.prefix && (path === area.prefix || path.startsWith(`${area.prefix}/`))) return { area, relative: path.slice(area.prefix.length) || '/' };
  }
  for (const area of areas) if (!area.prefix && area.paths.test(path)) return { area, relative: path };
  return undefined;
}

/** Answers the façade's own `status` in the envelope of the area owning the path (a generic JSON one elsewhere). */
function answerEdge(ctx: FacadeContext, areas: AreaRouter[], status: EdgeStatus): void {
  const owner = areaOf(areas, ctx.path);
  if (owner?.area.pages?.test(owner.relative) && owner.area.pageEdge) {
    sendHtml(ctx, status, owner.area.pageEdge(status));
    return;
  }
  const answer = owner ? owner.area.edge(status) : { status, body: { success: false, code: status, message: http.STATUS_CODES[status] } };
  ctx.status = answer.status;
  ctx.type = 'application/json';
  ctx.body = JSON.stringify(answer.body);
}

/** The methods an area's routes accept on `relative`, or an empty list. */
function allowedMethods(area: AreaRouter, relative: string): string[] {
  const methods = new Set<string>();
  for (const layer of area.router.match(relative, 'GET').path) for (const method of layer.methods) methods.add(method);
  return [...methods];
}

/** How much of an oversized body is read and discarded (so the 413 reaches the client) before the socket closes. */
const DRAIN_LIMIT_BYTES = 16 * 1_048_576;
const DRAIN_TIMEOUT_MS = 5_000;

/**
 * After an answer sent before the request body was read (413): the connection closes once the answer is flushed,
 * and the rest of the body is read and discarded meanwhile (up to a bound), so the client, still sending, receives
 * the answer instead of a reset.
 */
function closeAfterAnswer(ctx: FacadeContext): void {
  ctx.set('Connection', 'close');
  const request = ctx.req;
  let drained = 0;
  const stop = () => request.socket.destroy();
  const timer = setTimeout(stop, DRAIN_TIMEOUT_MS);
  timer.unref();
  request.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_LIMIT_BYTES) stop();
  });
  request.once('end', () => clearTimeout(timer));
  request.once('close', () => clearTimeout(timer));
  request.resume();
}

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** Health and readiness probes: outside the per-address cap and admission control. */
const PROBES = new Set(['/healthz', '/readyz']);

function hasBody(ctx: FacadeContext): boolean {
  return ctx.method === 'POST' || ctx.method === 'PUT' || ctx.method === 'PATCH';
}

/**
 * When traced (src/tracing.ts), names the request's HTTP server span after the route pattern and replaces the raw
 * path in its attributes with the loggable one: tokens in paths never reach a trace either.
 */
function nameRequestSpan(ctx: Koa.ParameterizedContext<FacadeState>, route: string): void {
  const span = trace.getActiveSpan();
  if (!span) return;
  const path = loggablePath(ctx);
  span.updateName(`${ctx.method} ${route}`);
  span.setAttributes({ 'http.route': route, 'http.target': path, 'http.url': `${ctx.protocol}://${ctx.host}${path}`, 'url.path': path });
}

/**
 * The path as logged: the matched route pattern (`/pre-order/:token`) when a router matched, so preorder tokens,
 * instrument tokens and activation codes in paths never reach a log; otherwise the raw path with every segment of
 * 16 characters or more (anything token-like) replaced by `:redacted`.
 */
export function loggablePath(ctx: { path: string; _matchedRoute?: string | RegExp }): string {
  if (typeof ctx._matchedRoute === 'string') return ctx._matchedRoute;
  return ctx.path
    .split('/')
    .map((segment) => (segment.length >= 16 ? ':redacted' : segment))
    .join('/');
}

export function createFacadeApp(options: {
  clients: PlatformClients;
  config: Config;
  logger: Logger;
  areas?: AreaRouter[];
  metrics?: PlatformMetrics;
}): Koa<FacadeState> {
  const app = new Koa<FacadeState>();
  // The client address (abuse limits count failures per address) is the socket's peer, or behind
  // FACADE_TRUSTED_PROXY_HOPS proxies the entry the outermost of them appended to X-Forwarded-For: Koa keeps only
  // the last `maxIpsCount` entries, so what a client writes itself never counts.
  const hops = options.config.FACADE_TRUSTED_PROXY_HOPS;
  app.proxy = hops > 0;
  app.maxIpsCount = hops;
  const areas = options.areas ?? [];
  app.use(async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    // The request's child logger is made when something logs (a child costs its bindings' serialisation and
    // redaction, on every request otherwise).
    let logger: Logger | undefined;
    Object.defineProperty(ctx.state, 'logger', { get: () => (logger ??= options.logger.child({ request_id: requestId })), enumerable: true });
    ctx.state.clients = options.clients;
    ctx.state.config = options.config;
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } catch (error) {
      // Last resort: area routers answer their own envelopes; nothing internal reaches the client.
      ctx.state.logger.error({ err: error }, 'unhandled façade error');
      answerEdge(ctx, areas, 500);
    } finally {
      areaOf(areas, ctx.path)?.area.headers?.(ctx);
      const duration_ms = Number(process.hrtime.bigint() - started) / 1e6;
      // The route pattern only (an unmatched path would make one series per path).
      const route = typeof ctx._matchedRoute === 'string' ? ctx._matchedRoute : 'unmatched';
      options.metrics?.httpRequests.observe({ route, method: ctx.method, status: String(ctx.status) }, duration_ms / 1000);
      nameRequestSpan(ctx, route);
      if (options.logger.isLevelEnabled('info')) ctx.state.logger.info(
        { method: ctx.method, path: loggablePath(ctx), status: ctx.status, duration_ms: Math.round(duration_ms * 10) / 10 },
        'request',
      );
    }
  });
  // One client address holds at most FACADE_MAX_IN_FLIGHT_PER_ADDRESS requests, counted from their headers (their
  // body still arriving) to their answer: many slow bodies from one address take its own share, nobody else's.
  // Probes (/healthz, /readyz) are always answered.
  const perAddress = createAddressLimit(options.config.FACADE_MAX_IN_FLIGHT_PER_ADDRESS);
  app.use(async (ctx, next) => {
    if (PROBES.has(ctx.path)) return next();
    const address = addressGroup(ctx.ip, options.config.AUTH_FAILURE_IPV6_PREFIX);
    if (!perAddress.enter(address)) {
      ctx.set('Retry-After', '1');
      answerEdge(ctx, areas, 503);
      if (hasBody(ctx)) closeAfterAnswer(ctx);
      return;
    }
    ctx.res.once('close', () => perAddress.leave(address));
    await next();
  });
  // The body is read before admission: a slow body (bounded by FACADE_BODY_TIMEOUT_SECONDS, startFacade) holds its
  // socket and its address's share, never an admission slot.
  app.use(async (ctx, next) => {
    ctx.state.rawBody = '';
    if (hasBody(ctx)) {
      try {
        ctx.state.rawBody = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, encoding: 'utf8' });
      } catch (error) {
        const status = (error as { status?: number }).status ?? 400;
        if (status === 413) {
          answerEdge(ctx, areas, 413);
          closeAfterAnswer(ctx);
          return;
        }
        ctx.status = 400;
        ctx.body = { success: false, code: 400, message: 'Bad Request' };
        return;
      }
    }
    await next();
  });
  // Admission control: bounded concurrency and queue; past them 503 in the area's envelope, at once (probes are
  // always answered, so an overloaded process is not taken for a dead one; /readyz reports it saturated).
  const admission = createAdmission({
    max_in_flight: options.config.FACADE_MAX_IN_FLIGHT,
    max_queued: options.config.FACADE_MAX_QUEUED,
    queue_timeout_ms: options.config.FACADE_QUEUE_TIMEOUT_SECONDS * 1000,
  });
  app.use(async (ctx, next) => {
    if (PROBES.has(ctx.path)) return next();
    try {
      await admission.run(() => next());
    } catch (error) {
      if (!(error instanceof AdmissionRefusedError)) throw error;
      options.metrics?.admissionRejections.inc({ server: 'facade', why: error.why });
      ctx.set('Retry-After', '1');
      answerEdge(ctx, areas, 503);
    }
  });
  // Whatever no route answered: a wrong method on a known path is 405 with Allow, anything else 404, each in the
  // envelope of the area owning the path.
  app.use(async (ctx, next) => {
    await next();
    if (ctx.body !== undefined && ctx.body !== null) return;
    if (ctx.status !== 404 && ctx.status !== 405 && ctx.status !== 501) return;
    const owner = areaOf(areas, ctx.path);
    const allowed = owner ? allowedMethods(owner.area, owner.relative) : [];
    if (allowed.length > 0 && !allowed.includes(ctx.method)) {
      ctx.set('Allow', allowed.join(', '));
      answerEdge(ctx, areas, 405);
      return;
    }
    answerEdge(ctx, areas, 404);
  });
  const health = healthRouter({ saturated: () => admission.saturated });
  app.use(health.routes());
  app.use(docsRouter().routes());
  for (const area of areas) {
    const mounted = new Router<FacadeState>({ prefix: area.prefix || undefined });
    mounted.use(area.router.routes());
    app.use(mounted.routes());
  }
  return app;
}

export interface RunningFacade {
  url: string;
  port: number;
  close(graceSeconds?: number): Promise<void>;
}

/** How long the façade waits for a request's parts, seconds (FACADE_HEADERS_TIMEOUT_SECONDS, FACADE_BODY_TIMEOUT_SECONDS). */
export interface FacadeTimeouts {
  headersSeconds: number;
  bodySeconds: number;
}

/** How often Node looks for requests past their deadline, ms (its default, 30 s, would let a deadline of seconds run 30 s). */
const DEADLINE_CHECK_INTERVAL_MS = 1000;

/**
 * Listens on host:port (0 = any free port). `close` stops accepting and waits for in-flight requests. A request
 * whose headers have not arrived within `timeouts.headersSeconds` of its connection's first byte, or whose body has
 * not arrived within `timeouts.bodySeconds` more, is answered 408 by Node and its connection closed.
 */
export async function startFacade(app: Koa<FacadeState>, host: string, port: number, timeouts: FacadeTimeouts = { headersSeconds: 10, bodySeconds: 10 }): Promise<RunningFacade> {
  const server = http.createServer(
    {
      headersTimeout: timeouts.headersSeconds * 1000,
      requestTimeout: (timeouts.headersSeconds + timeouts.bodySeconds) * 1000,
      connectionsCheckingInterval: DEADLINE_CHECK_INTERVAL_MS,
    },
    app.callback(),
  );
  server.keepAliveTimeout = 5000;
  const address = await listenOn(server, port, host);
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    close: async (graceSeconds = 10) => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), graceSeconds * 1000);
      timer.unref();
      await closed;
      clearTimeout(timer);
    },
  };
}
