/**
 * Connect clients of the platform services, as the façade and the admin CLI use them (HTTP/2 h2c, Connect
 * protocol). The façade reaches the platform only through these.
 */
import { createClient, type Transport } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { PLATFORM_SERVICE_NAMES, PLATFORM_SERVICES, type PlatformClients } from './services';

export type { PlatformClients } from './services';

/**
 * @param rpc base URL of the RPC server, e.g. http://127.0.0.1:8080 (Connect over HTTP/2 h2c, one reused session),
 *            or a transport (`createInProcessTransport` when the api role runs in this process)
 */
export function createPlatformClients(rpc: string | Transport, options: { httpVersion?: '1.1' | '2' } = {}): PlatformClients {
  const transport = typeof rpc === 'string' ? createConnectTransport({ baseUrl: rpc, httpVersion: options.httpVersion ?? '2' }) : rpc;
  return Object.fromEntries(
    PLATFORM_SERVICE_NAMES.map((name) => [name, createClient(PLATFORM_SERVICES[name], transport)]),
  ) as unknown as PlatformClients;
}
