/**
 * Closing a Temporal client connection while one of its calls waits out a retry's backoff (the frontend went away):
 * the close waits for the call to end, so no retry fires on a closed channel ("Channel has been shut down", thrown from
 * a timer where no caller can catch it, which took a test process down as the platform stopped).
 */
import net from 'node:net';
import { connectTemporal } from '../../src/temporal/client';

/** A TCP proxy to Temporal that can be shut, refusing every connection from then on. */
async function startProxy(target: string): Promise<{ address: string; shut(): Promise<void> }> {
  const [host, port] = target.split(':');
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    shut: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

it('waits for a call retrying against a vanished frontend before it closes: no retry fires on a closed channel', async () => {
  const proxy = await startProxy(process.env.PAYMENTS_TEST_TEMPORAL_ADDRESS!);
  const temporal = await connectTemporal(proxy.address, 'default', 'close-test');
  const uncaught: unknown[] = [];
  const record = (error: unknown) => uncaught.push(error);
  process.on('uncaughtException', record);
  try {
    await proxy.shut();
    // The frontend is gone: the call fails UNAVAILABLE and backs off between attempts until its deadline.
    const call = temporal.connection
      .withDeadline(Date.now() + 1_500, () => temporal.connection.workflowService.describeNamespace({ namespace: 'default' }))
      .then(
        () => 'answered',
        (error: Error) => error.message,
      );
    await new Promise((resolve) => setTimeout(resolve, 300));
    await temporal.close();
    expect(await call).not.toBe('answered');
    // Long enough for any retry timer left behind to fire.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(uncaught.map((error) => String(error))).toEqual([]);
  } finally {
    process.off('uncaughtException', record);
  }
}, 30_000);
