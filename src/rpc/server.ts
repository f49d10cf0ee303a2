/**
 * The Connect RPC server (platform decisions §1: Connect, gRPC and gRPC-Web protocols, HTTP/1.1 and HTTP/2 on one
 * port). In clear text each connection is routed by its first bytes: the HTTP/2 preface goes to an h2c server,
 * anything else to an HTTP/1.1 server; with TLS (RPC_TLS_CERT, RPC_TLS_KEY) one secure HTTP/2 server answers both
 * by ALPN, and with RPC_TLS_CLIENT_CA it requires a client certificate signed by that CA (mTLS). Every call passes
 * the credential check of `auth.ts` first, is recorded by the audit trail when privileged (`audit.ts`), then needs
 * its procedure's scope; a message over `readMaxBytes` is refused with ResourceExhausted.
 */
import { AdmissionRefusedError, createAdmission, type Admission, type AdmissionLimits } from '../admission';
import { COMMON_REASONS, reasonError } from '../errors';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { Code, ConnectError, createContextValues, type ConnectRouter, type Interceptor, type Transport } from '@connectrpc/connect';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { Logger } from '../logger';
import { reasonLabel, type PlatformMetrics } from '../metrics';
import { listenOn, trackSockets } from '../net';
import type { Tracing } from '../tracing';
import type { CredentialVerifier } from '../service-credentials';
import { type AuditLog, auditInterceptor } from './audit';
import { authenticationInterceptor, authorizationInterceptor, peerKey, peerOf } from './auth';
import { callerKey, IN_PROCESS_FACADE } from './caller';
import { createDirectTransport } from './in-process-transport';
import { readRpcFailure } from './errors';
import { errorInterceptor, validationInterceptor } from './interceptors';

export interface RunningServer {
  /** Base URL, e.g. http://127.0.0.1:8080 */
  url: string;
  port: number;
  /** Stops accepting connections, lets in-flight requests finish (up to `graceSeconds`), then closes. */
  close(graceSeconds?: number): Promise<void>;
}

const HTTP2_PREFACE = Buffer.from('PRI * HTTP/2.0');

/**
 * The interceptors of every platform RPC, outermost first: the trace span (when tracing), metrics, error mapping,
 * admission control (network calls), who the caller is (its credential over the network; the façade in process),
 * the audit trail, whether the caller may call the procedure, then request validation.
 * @param caller how the caller is known: a verifier of network credentials, or `in-process` (the façade)
 */
export function rpcInterceptors(
  logger: Logger,
  caller: CredentialVerifier | 'in-process',
  options: { metrics?: PlatformMetrics; tracing?: Tracing; admission?: Admission; audit?: AuditLog } = {},
): Interceptor[] {
  const { metrics, tracing, admission, audit } = options;
  return [
    ...(tracing ? [tracing.rpcServerInterceptor] : []),
    ...(metrics ? [metricsInterceptor(metrics)] : []),
    errorInterceptor(logger),
    ...(admission ? [admissionInterceptor(admission, metrics)] : []),
    caller === 'in-process' ? inProcessCallerInterceptor : authenticationInterceptor(caller, logger),
    ...(audit ? [auditInterceptor(audit, logger)] : []),
    authorizationInterceptor(logger),
    validationInterceptor,
  ];
}

/** In-process calls come from the façade of this process: the services see it as their caller. */
const inProcessCallerInterceptor: Interceptor = (next) => async (request) => {
  request.contextValues.set(callerKey, IN_PROCESS_FACADE);
  return next(request);
};

/** Bounded concurrency: a call past the in-flight and queue bounds is UNAVAILABLE at once, retry after 1 s. */
function admissionInterceptor(admission: Admission, metrics: PlatformMetrics | undefined): Interceptor {
  return (next) => async (request) => {
    try {
      return await admission.run(() => next(request));
    } catch (error) {
      if (!(error instanceof AdmissionRefusedError)) throw error;
      metrics?.admissionRejections.inc({ server: 'rpc', why: error.why });
      const busy = reasonError(COMMON_REASONS, 'UNAVAILABLE', 'busy: refused by admission control');
      busy.retryAfterSeconds = 1;
      throw busy;
    }
  };
}

/** Observes every RPC's duration and outcome code (`ok`, or the Connect code's name), and each refusal's reason. */
function metricsInterceptor(metrics: PlatformMetrics): Interceptor {
  return (next) => async (request) => {
    const procedure = `${request.service.typeName}/${request.method.name}`;
    const end = metrics.rpcRequests.startTimer({ procedure });
    try {
      const response = await next(request);
      end({ code: 'ok' });
      return response;
    } catch (error) {
      end({ code: Code[ConnectError.from(error).code] ?? 'unknown' });
      metrics.refusals.inc({ reason: reasonLabel(readRpcFailure(error).reason) });
      throw error;
    }
  };
}

/** TLS material of the RPC listener (PEM text). With `clientCa`, a client certificate signed by it is required. */
export interface RpcTls {
  cert: string;
  key: string;
  clientCa?: string;
}

/**
 * A Connect transport to the platform routes in this process (the façade when the api role runs beside it): the
 * same interceptors as the network server but admission and the credential check (its caller is the façade, with
 * the façade's scope), and with `tracing` the caller's client span and the server's span, as over the network; no
 * loopback hop and no message encoding (src/rpc/in-process-transport.ts).
 */
export function createInProcessTransport(
  routes: (router: ConnectRouter) => void,
  logger: Logger,
  metrics?: PlatformMetrics,
  tracing?: Tracing,
  audit?: AuditLog,
): Transport {
  return createDirectTransport(routes, rpcInterceptors(logger, 'in-process', { metrics, tracing, audit }), tracing ? [tracing.rpcClientInterceptor] : []);
}

/** Starts the RPC server; `port` 0 picks a free one. */
export async function startRpcServer(options: {
  routes: (router: ConnectRouter) => void;
  host: string;
  port: number;
  logger: Logger;
  /** Checks the bearer token of every call that presents no verified client certificate. */
  verifier: CredentialVerifier;
  /** Largest accepted request message, bytes. */
  readMaxBytes: number;
  tls?: RpcTls;
  metrics?: PlatformMetrics;
  tracing?: Tracing;
  /** Admission control of network calls (in-process calls were admitted by the façade). */
  admission?: AdmissionLimits;
  /** Where the audit trail goes (src/rpc/audit.ts). */
  audit?: AuditLog;
}): Promise<RunningServer> {
  const handler = connectNodeAdapter({
    routes: options.routes,
    interceptors: rpcInterceptors(options.logger, options.verifier, {
      metrics: options.metrics,
      tracing: options.tracing,
      admission: options.admission && createAdmission(options.admission),
      audit: options.audit,
    }),
    readMaxBytes: options.readMaxBytes,
    contextValues: (request) => createContextValues().set(peerKey, peerOf(request)),
  });
  if (options.tls) return startTlsServer(handler, options.host, options.port, options.tls);
  const http1 = http.createServer(handler);
  const h2c = http2.createServer({}, handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2c.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  const server = net.createServer((socket) => {
    socket.once('readable', () => {
      const head: Buffer | null = socket.read(HTTP2_PREFACE.length) ?? socket.read();
      if (head === null) return;
      socket.unshift(head);
      const target = head.subarray(0, HTTP2_PREFACE.length).equals(HTTP2_PREFACE) ? h2c : http1;
      target.emit('connection', socket);
    });
  });
  const sockets = trackSockets(server);
  const address = await listenOn(server, options.port, options.host);
  return {
    url: `http://${options.host}:${address.port}`,
    port: address.port,
    close: async (graceSeconds = 10) => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      http1.closeIdleConnections();
      for (const session of sessions) session.close();
      const timer = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceSeconds * 1000);
      timer.unref();
      http1.close();
      await closed;
      clearTimeout(timer);
    },
  };
}

/** The TLS listener: HTTP/2 and HTTP/1.1 by ALPN; with a client CA, connections without a valid certificate fail. */
async function startTlsServer(
  handler: ReturnType<typeof connectNodeAdapter>,
  host: string,
  port: number,
  tls: RpcTls,
): Promise<RunningServer> {
  const server = http2.createSecureServer(
    {
      cert: tls.cert,
      key: tls.key,
      allowHTTP1: true,
      ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
    },
    handler,
  );
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  const sockets = trackSockets(server, 'secureConnection');
  const address = await listenOn(server, port, host);
  return {
    url: `https://${host}:${address.port}`,
    port: address.port,
    close: async (graceSeconds = 10) => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.close();
      const timer = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceSeconds * 1000);
      timer.unref();
      await closed;
      clearTimeout(timer);
    },
  };
}
