/** Temporal client connection for services (start workflows, send updates and signals). */
import { Client, Connection } from '@temporalio/client';

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  taskQueue: string;
  close(): Promise<void>;
}

/** Connects to `address` (host:port). Throws when the server cannot be reached within 10 s. */
export async function connectTemporal(address: string, namespace: string, taskQueue: string): Promise<TemporalHandle> {
  const connection = await Connection.connect({ address, connectTimeout: '10s' });
  const client = new Client({ connection, namespace });
  return { client, connection, taskQueue, close: () => connection.close() };
}
