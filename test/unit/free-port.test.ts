/**
 * freePort hands out ports the OS never hands out by itself: below the kernel's ephemeral range, so no outgoing
 * connection or port-0 listener started between the choice and the caller's bind can take it (the dev stack's HTTP
 * port was once taken by a Temporal dev server's internal listener that way).
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { freePort } from '../../src/net';

const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

describe('freePort', () => {
  it('chooses ports below the ephemeral range, each one bindable', async () => {
    const ports = await Promise.all(Array.from({ length: 16 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(ephemeralLow);
    }
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(ports[0], '127.0.0.1', () => resolve());
    });
    await new Promise((resolve) => server.close(resolve));
  });

  it('never chooses a port that is being listened on', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', () => resolve()));
    const takenPort = (taken.address() as net.AddressInfo).port;
    const ports = await Promise.all(Array.from({ length: 32 }, () => freePort()));
    expect(ports).not.toContain(takenPort);
    await new Promise((resolve) => taken.close(resolve));
  });
});
