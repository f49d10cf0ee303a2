/** Small TCP helpers for starting local servers. */
import net from 'node:net';

/** Asks the OS for a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Resolves once a TCP connection to host:port succeeds; rejects after `timeoutSeconds`. */
export async function waitForPort(host: string, port: number, timeoutSeconds: number): Promise<void> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${host}:${port} did not open within ${timeoutSeconds}s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Listens on host:port (0 = any free port). @returns the bound address */
export async function listenOn(server: net.Server, port: number, host: string): Promise<net.AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server.address() as net.AddressInfo;
}

/** The open sockets a server accepts (its `event`: "connection", or "secureConnection" for TLS), kept current. */
export function trackSockets(server: net.Server, event: 'connection' | 'secureConnection' = 'connection'): Set<net.Socket> {
  const sockets = new Set<net.Socket>();
  server.on(event, (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return sockets;
}
