/** Small TCP helpers for starting local servers, and for stopping a start-up early (a signal during start-up). */
import net from 'node:net';

/** A start-up stopped by a signal (src/cli/signals.ts): whoever started something stops it before rethrowing. */
export class StartupAborted extends Error {
  constructor(signal = 'a signal') {
    super(`start-up stopped by ${signal}`);
    this.name = 'StartupAborted';
  }
}

/** Throws StartupAborted when `abort` fired: a start-up calls it between its steps. */
export function checkAborted(abort: AbortSignal | undefined): void {
  if (abort?.aborted) throw abort.reason instanceof StartupAborted ? abort.reason : new StartupAborted();
}

/**
 * `work`'s outcome, or StartupAborted as soon as `abort` fires. Only for work whose result lives in this process
 * (a connection, a bundle): it goes on unobserved, and the process exits after the start-up stopped.
 */
export function unlessAborted<T>(work: Promise<T>, abort: AbortSignal | undefined): Promise<T> {
  if (!abort) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abort.reason instanceof StartupAborted ? abort.reason : new StartupAborted());
    if (abort.aborted) return onAbort();
    abort.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        abort.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        abort.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}

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

/**
 * Resolves once a TCP connection to host:port succeeds; rejects after `timeoutSeconds`, or with StartupAborted as soon
 * as `abort` fires.
 */
export async function waitForPort(host: string, port: number, timeoutSeconds: number, abort?: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  for (;;) {
    checkAborted(abort);
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
    await unlessAborted(new Promise((resolve) => setTimeout(resolve, 200)), abort);
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
