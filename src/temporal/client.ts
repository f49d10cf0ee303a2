/** Temporal client connection for services (start workflows, send updates and signals). */
import { Client, Connection, type ClientInterceptors } from '@temporalio/client';
import type { TemporalConnectionOptions } from './connection-options';

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  taskQueue: string;
  close(): Promise<void>;
}

/**
 * Connects to `address` (host:port) with `security` (TLS, API key; see connection-options.ts). Throws when the
 * server cannot be reached within 10 s. `interceptors`: the client's (tracing, src/tracing.ts).
 */
export async function connectTemporal(
  address: string,
  namespace: string,
  taskQueue: string,
  security: TemporalConnectionOptions = {},
  interceptors?: ClientInterceptors,
): Promise<TemporalHandle> {
  const connection = await Connection.connect({ address, connectTimeout: '10s', ...security });
  // Connection.connect runs its first call in the connection's AsyncLocalStorage, which (Node 20) switches on a
  // promise hook for every promise the process creates from then on: about a tenth of the api role's CPU (bench
  // `wallet`). Nothing here calls withDeadline/withMetadata/withAbortSignal, the only users of that
  // storage; a later call would simply switch it on again.
  connection.callContextStorage.disable();
  const client = new Client({ connection, namespace, interceptors });
  return { client, connection, taskQueue, close: () => connection.close() };
}
