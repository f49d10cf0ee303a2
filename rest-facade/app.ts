/**
 * The Koa façade (platform decisions §1): request id, logging, raw body capture and limits, then one router per
 * area. It holds no business logic: every fact comes from a Connect client (`ctx.state.clients`).
 */
import Router from '@koa/router';
import Koa from 'koa';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import getRawBody from 'raw-body';
import type { Config } from '../src/config';
import type { Logger } from '../src/logger';
import type { PlatformClients } from '../src/rpc/clients';
import { docsRouter } from './docs';
import { healthRouter } from './health';

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 1_048_576;

export interface FacadeState {
  requestId: string;
  logger: Logger;
  /** The request body as received (UTF-8), for signature checks and lossless JSON parsing. */
  rawBody: string;
  clients: PlatformClients;
  config: Config;
}

export type FacadeContext = Koa.ParameterizedContext<FacadeState>;

/** A router for one area, mounted under its prefix. */
export interface AreaRouter {
  prefix: string;
  router: Router<FacadeState>;
}

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

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
}): Koa<FacadeState> {
  const app = new Koa<FacadeState>();
  app.proxy = false;
  app.use(async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    const requestId = REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.logger = options.logger.child({ request_id: requestId });
    ctx.state.clients = options.clients;
    ctx.state.config = options.config;
    ctx.set('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    try {
      await next();
    } catch (error) {
      // Last resort: area routers answer their own envelopes; nothing internal reaches the client.
      ctx.state.logger.error({ err: error }, 'unhandled façade error');
      ctx.status = 500;
      ctx.body = { success: false, code: 500, message: 'Internal Server Error' };
    } finally {
      const duration_ms = Number(process.hrtime.bigint() - started) / 1e6;
      ctx.state.logger.info(
        { method: ctx.method, path: loggablePath(ctx), status: ctx.status, duration_ms: Math.round(duration_ms * 10) / 10 },
        'request',
      );
    }
  });
  app.use(async (ctx, next) => {
    ctx.state.rawBody = '';
    if (ctx.method === 'POST' || ctx.method === 'PUT' || ctx.method === 'PATCH') {
      try {
        ctx.state.rawBody = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, encoding: 'utf8' });
      } catch (error) {
        const status = (error as { status?: number }).status ?? 400;
        ctx.status = status === 413 ? 413 : 400;
        ctx.body = { success: false, code: ctx.status, message: status === 413 ? 'Payload Too Large' : 'Bad Request' };
        return;
      }
    }
    await next();
  });
  const health = healthRouter();
  app.use(health.routes());
  app.use(docsRouter().routes());
  for (const area of options.areas ?? []) {
    const mounted = new Router<FacadeState>({ prefix: area.prefix || undefined });
    mounted.use(area.router.routes(), area.router.allowedMethods());
    app.use(mounted.routes());
  }
  return app;
}

export interface RunningFacade {
  url: string;
  port: number;
  close(graceSeconds?: number): Promise<void>;
}

/** Listens on host:port (0 = any free port). `close` stops accepting and waits for in-flight requests. */
export async function startFacade(app: Koa<FacadeState>, host: string, port: number): Promise<RunningFacade> {
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 5000;
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as net.AddressInfo;
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
