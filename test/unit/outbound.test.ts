import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { ConfigError, loadConfig } from '../../src/config';
import { addressClass, createOutboundPolicy, devOutboundDefaults, OutboundRefusedError, outboundOptionsFromConfig, type OutboundOptions } from '../../src/web/outbound';

const closed: OutboundOptions = { allowPrivate: false, allowedHosts: new Set(), platformPorts: new Set([3000, 8080]), requireHttps: false };

/** A resolver that answers `address` for every name (a rebinding name, or a local alias). */
function resolvingTo(address: string): OutboundOptions['lookup'] {
  return ((_host: string, _options: unknown, callback: (error: null, addresses: Array<{ address: string; family: number }>) => void) =>
    callback(null, [{ address, family: address.includes(':') ? 6 : 4 }])) as never;
}

describe('outbound destinations (SSRF guard)', () => {
  it('classifies addresses with ipaddr.js, IPv4-mapped IPv6 as its IPv4 address', () => {
    for (const address of ['8.8.8.8', '2001:4860:4860::8888', '::ffff:8.8.8.8', '2a00:1450:4001::1']) expect([address, addressClass(address)]).toEqual([address, 'public']);
    for (const address of [
      '127.0.0.1',
      '127.1.2.3',
      '::1',
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '100.64.0.1',
      '100.127.255.254',
      '169.254.1.1',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      '0.0.0.0',
      '::',
      '224.0.0.1',
      'ff02::1',
      '255.255.255.255',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      // IPv4-compatible (deprecated), discard, site-local: outside IPv6 global unicast.
      '::7f00:1',
      '100::1',
      'fec0::1',
      // NAT64 and 6to4 carry an IPv4 address a gateway forwards to.
      '64:ff9b::7f00:1',
      '2002:7f00:1::1',
      'not-an-address',
    ]) {
      expect([address, addressClass(address)]).toEqual([address, 'private']);
    }
    for (const address of [
      '169.254.169.254',
      'fd00:ec2::254',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '64:ff9b::a9fe:a9fe',
      '2002:a9fe:a9fe::1',
      '169.254.170.2',
      '100.100.100.200',
      '168.63.129.16',
    ]) {
      expect([address, addressClass(address)]).toEqual([address, 'metadata']);
    }
  });

  it('refuses private, metadata and platform destinations by URL, and allows public ones', async () => {
    const policy = createOutboundPolicy(closed);
    try {
      expect(policy.checkUrl('https://merchant.example/hook')).toBeUndefined();
      expect(policy.checkUrl('http://8.8.8.8:8080/hook')).toBeUndefined();
      expect(policy.checkUrl('http://127.0.0.1:9000/hook')).toBe('private address');
      expect(policy.checkUrl('http://[::1]:9000/hook')).toBe('private address');
      expect(policy.checkUrl('http://[::ffff:7f00:1]/hook')).toBe('private address');
      expect(policy.checkUrl('http://[::127.0.0.1]/hook')).toBe('private address');
      expect(policy.checkUrl('http://0x7f.1/hook')).toBe('private address');
      expect(policy.checkUrl('http://2130706433/hook')).toBe('private address');
      expect(policy.checkUrl('http://localhost/hook')).toBe('private address');
      expect(policy.checkUrl('http://api.LOCALHOST:9000/hook')).toBe('private address');
      expect(policy.checkUrl('http://10.1.2.3/hook')).toBe('private address');
      expect(policy.checkUrl('http://100.64.1.1/hook')).toBe('private address');
      expect(policy.checkUrl('http://169.254.169.254/latest/meta-data/')).toBe('metadata address');
      expect(policy.checkUrl('http://[fd00:ec2::254]/')).toBe('metadata address');
      expect(policy.checkUrl('ftp://merchant.example/hook')).toBe('scheme');
      expect(policy.checkUrl('not a url')).toBe('not a URL');
    } finally {
      await policy.close();
    }
  });

  it('opens private networks or exactly the listed host:port pairs, never metadata, and keeps the platform ports closed', async () => {
    const open = createOutboundPolicy({ ...closed, allowPrivate: true });
    const listed = createOutboundPolicy({ ...closed, allowedHosts: new Set(['127.0.0.1:4000', 'receiver.internal:80', 'localhost:8080']) });
    const live = createOutboundPolicy({ ...closed, requireHttps: true });
    try {
      expect(open.checkUrl('http://127.0.0.1:9000/hook')).toBeUndefined();
      expect(open.checkUrl('http://10.0.0.8/hook')).toBeUndefined();
      expect(open.checkUrl('http://169.254.169.254/')).toBe('metadata address');
      expect(open.checkUrl('http://[::ffff:169.254.169.254]/')).toBe('metadata address');
      expect(open.checkUrl('http://127.0.0.1:3000/api/v1/payins')).toBe('platform port');
      expect(open.checkUrl('http://localhost:8080/')).toBe('platform port');
      expect(open.checkUrl('http://8.8.8.8:8080/')).toBeUndefined();
      open.protectPort(4567);
      expect(open.checkUrl('http://127.0.0.1:4567/')).toBe('platform port');
      expect(listed.checkUrl('http://127.0.0.1:4000/hook')).toBeUndefined();
      expect(listed.checkUrl('http://127.0.0.1:4001/hook')).toBe('private address');
      expect(listed.checkUrl('http://localhost:4000/hook')).toBe('private address');
      expect(listed.checkUrl('http://10.0.0.8:4000/hook')).toBe('private address');
      // Listed explicitly: the operator's choice wins over the platform-port rule, never over metadata.
      expect(listed.checkUrl('http://localhost:8080/hook')).toBeUndefined();
      expect(live.checkUrl('http://merchant.example/hook')).toBe('https required');
      expect(live.checkUrl('https://merchant.example/hook')).toBeUndefined();
    } finally {
      await Promise.all([open.close(), listed.close(), live.close()]);
    }
  });

  it('takes the platform ports, sandbox port in test mode, opened hosts and live mode from the configuration', async () => {
    const options = outboundOptionsFromConfig(
      loadConfig({ PAYMENTS_MODE: 'test', HTTP_PORT: '3001', RPC_PORT: '0', METRICS_PORT: '9464', TEMPORAL_METRICS_PORT: '9465', OUTBOUND_ALLOWED_HOSTS: ' Receiver.Test:4000 , 127.0.0.1:5000,[0:0::1]:80' }),
    );
    expect(options).toMatchObject({
      allowPrivate: false,
      requireHttps: false,
      platformPorts: new Set([3001, 9464, 9465, 3100]),
      allowedHosts: new Set(['receiver.test:4000', '127.0.0.1:5000', '::1:80']),
    });
    const listed = createOutboundPolicy(options);
    expect([listed.checkUrl('http://[::1]/hook'), listed.checkUrl('http://receiver.test:4000/'), listed.checkUrl('http://[::1]:81/hook')]).toEqual([undefined, undefined, 'private address']);
    await listed.close();
    expect(outboundOptionsFromConfig(loadConfig({ PAYMENTS_MODE: 'live', OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' }))).toMatchObject({
      allowPrivate: true,
      requireHttps: true,
      platformPorts: new Set([3000, 8080]),
    });
  });

  it('is opened by npm start only when neither variable is set, and refuses a malformed host list', () => {
    expect(devOutboundDefaults(loadConfig({}), {}).OUTBOUND_ALLOW_PRIVATE_NETWORKS).toBe(true);
    expect(devOutboundDefaults(loadConfig({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false' }), { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false' }).OUTBOUND_ALLOW_PRIVATE_NETWORKS).toBe(false);
    const listed = devOutboundDefaults(loadConfig({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1:3999' }), { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1:3999' });
    expect([listed.OUTBOUND_ALLOW_PRIVATE_NETWORKS, listed.OUTBOUND_ALLOWED_HOSTS]).toEqual([false, '127.0.0.1:3999']);
    for (const value of ['127.0.0.1', 'a:1,,b:2', 'http://a:1', '::1:80', 'a:123456']) expect(() => loadConfig({ OUTBOUND_ALLOWED_HOSTS: value })).toThrow(ConfigError);
  });

  describe('when connecting', () => {
    let receiver: http.Server;
    let port: number;
    const received: string[] = [];
    beforeAll(async () => {
      receiver = http.createServer((incoming, response) => {
        received.push(`${incoming.headers.host} ${incoming.url}`);
        response.writeHead(204).end();
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      port = (receiver.address() as AddressInfo).port;
    });
    afterAll(() => new Promise((resolve) => receiver.close(resolve)));
    beforeEach(() => received.splice(0));

    /** POSTs through the policy's dispatcher: the status, or `refused: <reason>` when the guard stopped it. */
    async function post(policy: ReturnType<typeof createOutboundPolicy>, url: string): Promise<number | string> {
      return request(url, { dispatcher: policy.dispatcher, method: 'POST', body: '{}' }).then(
        async (response) => {
          await response.body.dump();
          return response.statusCode;
        },
        (error: unknown) => {
          if (error instanceof OutboundRefusedError) return `refused: ${error.refusal}`;
          throw error;
        },
      );
    }

    it('refuses a name that resolves to loopback or metadata, and an IP literal, before sending a byte', async () => {
      const loopback = createOutboundPolicy({ ...closed, lookup: resolvingTo('127.0.0.1') });
      const metadata = createOutboundPolicy({ ...closed, allowPrivate: true, lookup: resolvingTo('169.254.169.254') });
      try {
        expect(loopback.checkUrl(`http://rebinding.example:${port}/hook`)).toBeUndefined();
        expect(await post(loopback, `http://rebinding.example:${port}/hook`)).toBe('refused: private address');
        // The dispatcher guards by itself, also where no caller ran checkUrl: IP literals are never looked up.
        expect(await post(loopback, `http://127.0.0.1:${port}/hook`)).toBe('refused: private address');
        expect(await post(loopback, `http://[::ffff:127.0.0.1]:${port}/hook`)).toBe('refused: private address');
        expect(await post(metadata, `http://rebinding.example:${port}/latest/meta-data/`)).toBe('refused: metadata address');
        expect(received).toEqual([]);
      } finally {
        await Promise.all([loopback.close(), metadata.close()]);
      }
    });

    it('refuses a name resolving to a platform port with private networks open, on that port only', async () => {
      const open = createOutboundPolicy({ ...closed, allowPrivate: true, platformPorts: new Set([port]), lookup: resolvingTo('127.0.0.1') });
      try {
        expect(open.checkUrl(`http://platform.example:${port}/`)).toBeUndefined();
        expect(await post(open, `http://platform.example:${port}/`)).toBe('refused: platform port');
        expect(received).toEqual([]);
      } finally {
        await open.close();
      }
      const other = createOutboundPolicy({ ...closed, allowPrivate: true, platformPorts: new Set([port + 1]), lookup: resolvingTo('127.0.0.1') });
      try {
        expect(await post(other, `http://platform.example:${port}/`)).toBe(204);
        expect(received).toEqual([`platform.example:${port} /`]);
      } finally {
        await other.close();
      }
    });

    it('opens exactly the listed host:port when connecting', async () => {
      const listed = createOutboundPolicy({ ...closed, allowedHosts: new Set([`receiver.test:${port}`]), lookup: resolvingTo('127.0.0.1') });
      try {
        expect(await post(listed, `http://receiver.test:${port}/hook`)).toBe(204);
        // Same address, another name or port: refused (the pool's open connection is not reused across origins).
        expect(await post(listed, `http://other.test:${port}/hook`)).toBe('refused: private address');
        expect(await post(listed, `http://receiver.test:${port + 1}/hook`)).toBe('refused: private address');
        expect(await post(listed, `http://127.0.0.1:${port}/hook`)).toBe('refused: private address');
        expect(received).toEqual([`receiver.test:${port} /hook`]);
      } finally {
        await listed.close();
      }
    });
  });
});
