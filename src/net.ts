/** Small TCP helpers for starting local servers, and for stopping a start-up early (a signal during start-up). */
import { readFileSync } from 'node:fs';
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

/** The lowest port freePort hands out: above the registered services a developer's machine commonly runs. */
const FREE_PORT_LOW = 10_000;
/** Tries before freePort falls back to a port the OS picks. */
const FREE_PORT_TRIES = 64;

/**
 * A free TCP port on 127.0.0.1, chosen below the kernel's ephemeral range (net.ipv4.ip_local_port_range): a port the
 * OS handed out with port 0 is free again once closed, and any outgoing connection or port-0 listener (a Temporal
 * server's internal services, another test's client) may take it before the caller binds it. Below that range only
 * another explicit bind can. Falls back to a port the OS picks when the range leaves no room or every try is taken.
 */
export async function freePort(): Promise<number> {
  const ephemeralLow = ephemeralRangeLow();
  for (let attempt = 0; attempt < FREE_PORT_TRIES && ephemeralLow > FREE_PORT_LOW; attempt += 1) {
    const candidate = FREE_PORT_LOW + Math.floor(Math.random() * (ephemeralLow - FREE_PORT_LOW));
    if ((await tryListen(candidate)) !== null) return candidate;
  }
  const port = await tryListen(0);
  if (port === null) throw new Error('no free TCP port on 127.0.0.1');
  return port;
}

/** The first port of the kernel's ephemeral range; 32768 (Linux's default) where it cannot be read. */
function ephemeralRangeLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Binds and closes 127.0.0.1:port; the port bound, or null when it is taken. */
function tryListen(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : null));
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
