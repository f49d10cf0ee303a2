/**
 * Connect clients of the platform services, as the façade and the admin CLI use them (HTTP/2 h2c, Connect
 * protocol). The façade reaches the platform only through these.
 */
import { createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { HealthService } from '../gen/payments/health/v1/health_pb';

export interface PlatformClients {
  health: Client<typeof HealthService>;
}

/** @param rpcUrl base URL of the RPC server, e.g. http://127.0.0.1:8080 */
export function createPlatformClients(rpcUrl: string, options: { httpVersion?: '1.1' | '2' } = {}): PlatformClients {
  const transport = createConnectTransport({ baseUrl: rpcUrl, httpVersion: options.httpVersion ?? '2' });
  return {
    health: createClient(HealthService, transport),
  };
}
