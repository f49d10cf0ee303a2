/**
 * Connect clients of the platform services, as the façade and the admin CLI use them (HTTP/2 h2c, Connect
 * protocol). The façade reaches the platform only through these.
 */
import { createClient, type Transport } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { PLATFORM_SERVICE_NAMES, PLATFORM_SERVICES, type PlatformClients } from './services';

export type { PlatformClients } from './services';

/**
 * A transport that gives every call without its own deadline `timeoutMs`: a call that outlives it fails with
 * `Code.DeadlineExceeded` (the façade answers its area's system error, and the call is safe to retry).
 */
export function withDefaultDeadline(transport: Transport, timeoutMs: number): Transport {
  return {
    unary: (method, signal, callTimeoutMs, header, input, contextValues) =>
      transport.unary(method, signal, callTimeoutMs ?? timeoutMs, header, input, contextValues),
    stream: (method, signal, callTimeoutMs, header, input, contextValues) =>
      transport.stream(method, signal, callTimeoutMs ?? timeoutMs, header, input, contextValues),
  };
}

/**
 * @param rpc base URL of the RPC server, e.g. http://127.0.0.1:8080 (Connect over HTTP/2 h2c, one reused session),
 *            or a transport (`createInProcessTransport` when the api role runs in this process)
 * @param options.timeoutMs the deadline of every call that names none (REQUEST_TIMEOUT_SECONDS for the façade)
 */
export function createPlatformClients(rpc: string | Transport, options: { httpVersion?: '1.1' | '2'; timeoutMs?: number } = {}): PlatformClients {
  const base = typeof rpc === 'string' ? createConnectTransport({ baseUrl: rpc, httpVersion: options.httpVersion ?? '2' }) : rpc;
  const transport = options.timeoutMs ? withDefaultDeadline(base, options.timeoutMs) : base;
  return Object.fromEntries(
    PLATFORM_SERVICE_NAMES.map((name) => [name, createClient(PLATFORM_SERVICES[name], transport)]),
  ) as unknown as PlatformClients;
}
