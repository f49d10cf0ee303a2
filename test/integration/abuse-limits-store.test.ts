/**
 * The abuse limits' store (src/abuse) against real PostgreSQL: IPv6 clients counted per network, IPv4-mapped
 * addresses as their IPv4 address, and expired counters deleted by rate-limiter-flexible's clean-up.
 */
import { addressGroup, createAbuseLimits, RATE_LIMIT_TABLE } from '../../src/abuse';
import { createDatabase, type Knex } from '../../src/db/knex';
import { createTestDatabase, testConfig } from '../support/platform';

describe('abuse limits store', () => {
  let drop: () => Promise<void>;
  let database: Knex;
  const config = { ...testConfig(), AUTH_FAILURES_PER_CREDENTIAL: 100, AUTH_FAILURES_PER_ADDRESS: 3, AUTH_FAILURE_WINDOW_SECONDS: 60 };

  beforeAll(async () => {
    const created = await createTestDatabase();
    drop = created.drop;
    database = createDatabase(created.url, 5);
  });
  afterAll(async () => {
    await database.destroy();
    await drop();
  });

  it('counts an IPv6 client per /64 network and an IPv4-mapped address as its IPv4 address', async () => {
    const limits = createAbuseLimits(database, config);
    const fail = async (credential: string, address: string) => (await limits.beginAttempt('merchant_login', credential, address)).failed();
    await fail('M1', '2001:db8:1:2::1');
    await fail('M2', '2001:db8:1:2:aaaa::2');
    await fail('M3', '2001:db8:1:2:ffff:ffff:ffff:fffe');
    await expect(limits.beginAttempt('merchant_login', 'M4', '2001:db8:1:2:1234::9')).rejects.toMatchObject({ reason: 'RATE_LIMITED' });
    await expect(limits.beginAttempt('merchant_login', 'M4', '2001:db8:1:3::1')).resolves.toBeDefined();

    await fail('M5', '198.51.100.20');
    await fail('M6', '::ffff:198.51.100.20');
    await fail('M7', '198.51.100.20');
    await expect(limits.beginAttempt('merchant_login', 'M8', '::ffff:c633:6414')).rejects.toMatchObject({ reason: 'RATE_LIMITED' });
    await expect(limits.beginAttempt('merchant_login', 'M8', '198.51.100.21')).resolves.toBeDefined();

    expect(addressGroup('2001:DB8:1:2:3:4:5:6', 48)).toBe('2001:db8:1::/48');
    expect(addressGroup('unknown', 64)).toBe('unknown');
  });

  it('deletes counters whose window ended over an hour ago, on the library timer', async () => {
    const now = Date.now();
    await database(RATE_LIMIT_TABLE).insert([
      { key: 'api_key:stale', points: 4, expire: now - 2 * 3_600_000 },
      { key: 'req:live', points: 1, expire: now + 60_000 },
    ]);
    // Only setTimeout is faked, to bring the library's five-minute timer forward; its query runs for real.
    jest.useFakeTimers({ doNotFake: ['Date', 'hrtime', 'nextTick', 'performance', 'queueMicrotask', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval'] });
    try {
      createAbuseLimits(database, config);
      jest.advanceTimersByTime(300_000);
    } finally {
      jest.useRealTimers();
    }
    const keys = async () => (await database(RATE_LIMIT_TABLE).whereIn('key', ['api_key:stale', 'req:live']).pluck('key')) as string[];
    for (let waited = 0; (await keys()).includes('api_key:stale') && waited < 5000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await keys()).toEqual(['req:live']);
  });

  it('takes a caller’s request rate in leases of 1 % of the limit, concurrent requests sharing one, and never past the limit', async () => {
    const limits = createAbuseLimits(database, { ...config, REQUESTS_PER_CALLER_PER_MINUTE: 1000 });
    const points = async (caller: string) =>
      Number((await database(RATE_LIMIT_TABLE).where({ key: `req:${caller}` }).first('points'))?.points ?? 0);
    // 25 requests, 8 of them at once: three leases of 10 points, one counter write each (per request: 25).
    await Promise.all(Array.from({ length: 8 }, () => limits.consumeRequest('merchant:lease')));
    for (let index = 0; index < 17; index++) await limits.consumeRequest('merchant:lease');
    expect(await points('merchant:lease')).toBe(30);

    // A second process spends its own leases on the same counter; past 1000 points every process refuses.
    const other = createAbuseLimits(database, { ...config, REQUESTS_PER_CALLER_PER_MINUTE: 1000 });
    let served = 25;
    let refused = 0;
    for (let index = 0; index < 1100; index++) {
      try {
        await (index % 2 ? limits : other).consumeRequest('merchant:lease');
        served += 1;
      } catch (error) {
        expect(error).toMatchObject({ reason: 'RATE_LIMITED' });
        refused += 1;
      }
    }
    expect(served).toBeLessThanOrEqual(1000);
    // Refused early by at most one unspent lease per process (10 points each).
    expect(served).toBeGreaterThanOrEqual(1000 - 2 * 10);
    expect(refused).toBeGreaterThan(0);
  });
});
