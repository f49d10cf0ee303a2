import { addressClass, createOutboundPolicy, type OutboundOptions } from '../../src/web/outbound';

const closed: OutboundOptions = { allowPrivate: false, allowedHosts: new Set(), platformPorts: new Set([3000, 8080]), requireHttps: false };

describe('outbound destinations (SSRF guard)', () => {
  it('classifies addresses with ipaddr.js, IPv4-mapped IPv6 as its IPv4 address', () => {
    for (const address of ['8.8.8.8', '2001:4860:4860::8888', '::ffff:8.8.8.8']) expect([address, addressClass(address)]).toEqual([address, 'public']);
    for (const address of ['127.0.0.1', '::1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '100.64.0.1', '169.254.1.1', 'fe80::1', 'fc00::1', '0.0.0.0', '::', '224.0.0.1', '::ffff:127.0.0.1', '::ffff:10.0.0.1']) {
      expect([address, addressClass(address)]).toEqual([address, 'private']);
    }
    for (const address of ['169.254.169.254', 'fd00:ec2::254', '::ffff:169.254.169.254']) expect([address, addressClass(address)]).toEqual([address, 'metadata']);
  });

  it('refuses private, metadata and platform destinations by URL, and allows public ones', async () => {
    const policy = createOutboundPolicy(closed);
    try {
      expect(policy.checkUrl('https://merchant.example/hook')).toBeUndefined();
      expect(policy.checkUrl('http://8.8.8.8:8080/hook')).toBeUndefined();
      expect(policy.checkUrl('http://127.0.0.1:9000/hook')).toBe('private address');
      expect(policy.checkUrl('http://[::1]:9000/hook')).toBe('private address');
      expect(policy.checkUrl('http://[::ffff:7f00:1]/hook')).toBe('private address');
      expect(policy.checkUrl('http://localhost/hook')).toBe('private address');
      expect(policy.checkUrl('http://10.1.2.3/hook')).toBe('private address');
      expect(policy.checkUrl('http://169.254.169.254/latest/meta-data/')).toBe('metadata address');
      expect(policy.checkUrl('http://[fd00:ec2::254]/')).toBe('metadata address');
      expect(policy.checkUrl('ftp://merchant.example/hook')).toBe('scheme');
      expect(policy.checkUrl('not a url')).toBe('not a URL');
    } finally {
      await policy.close();
    }
  });

  it('opens private networks or listed host:port pairs, never metadata, and keeps the platform ports closed', async () => {
    const open = createOutboundPolicy({ ...closed, allowPrivate: true });
    const listed = createOutboundPolicy({ ...closed, allowedHosts: new Set(['127.0.0.1:4000', 'receiver.internal:80']) });
    const live = createOutboundPolicy({ ...closed, requireHttps: true });
    try {
      expect(open.checkUrl('http://127.0.0.1:9000/hook')).toBeUndefined();
      expect(open.checkUrl('http://169.254.169.254/')).toBe('metadata address');
      expect(open.checkUrl('http://127.0.0.1:3000/api/v1/payins')).toBe('platform port');
      expect(open.checkUrl('http://localhost:8080/')).toBe('platform port');
      expect(listed.checkUrl('http://127.0.0.1:4000/hook')).toBeUndefined();
      expect(listed.checkUrl('http://127.0.0.1:4001/hook')).toBe('private address');
      expect(live.checkUrl('http://merchant.example/hook')).toBe('https required');
      expect(live.checkUrl('https://merchant.example/hook')).toBeUndefined();
    } finally {
      await Promise.all([open.close(), listed.close(), live.close()]);
    }
  });
});
