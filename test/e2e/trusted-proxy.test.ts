/**
 * The client address behind reverse proxies (docs/security.md "Abuse limits"): with FACADE_TRUSTED_PROXY_HOPS=1 the
 * address a failure is counted under is the X-Forwarded-For entry the proxy appended (the right-most one), so two
 * clients behind one proxy are locked apart and an entry a client writes itself does not move its count; without the
 * setting the header is ignored and every request counts under the socket's peer.
 */
import { startTestPlatform, type TestPlatform } from '../support/platform';

const LIMIT = 3;
const SETTINGS = { AUTH_FAILURES_PER_ADDRESS: String(LIMIT), AUTH_FAILURE_WINDOW_SECONDS: '60' };

/** Area B balance with an unknown API key, as forwarded by a proxy that sent `forwardedFor`. */
async function unknownKeyFrom(platform: TestPlatform, forwardedFor: string, index: number): Promise<number> {
  const response = await fetch(`${platform.facadeUrl}/api/v1/balance`, {
    headers: { 'X-API-Key': `proxy-guess-${forwardedFor}-${index}`, 'X-Forwarded-For': forwardedFor },
  });
  await response.arrayBuffer();
  return response.status;
}

describe('behind one trusted proxy (FACADE_TRUSTED_PROXY_HOPS=1)', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ roles: ['api', 'facade'], env: { ...SETTINGS, FACADE_TRUSTED_PROXY_HOPS: '1' } });
  });
  afterAll(() => platform.stop());

  it('counts failures under the address the proxy appended, each client apart, whatever the client wrote before it', async () => {
    const first: number[] = [];
    for (let index = 0; index <= LIMIT; index++) first.push(await unknownKeyFrom(platform, '198.51.100.7', index));
    expect(first).toEqual([...Array(LIMIT).fill(401), 429]);
    // Another client behind the same proxy is not locked by the first one's failures.
    expect(await unknownKeyFrom(platform, '198.51.100.8', 0)).toBe(401);
    // The first client writing another address in front of the proxy's entry is still itself.
    expect(await unknownKeyFrom(platform, '198.51.100.8, 198.51.100.7', 99)).toBe(429);
  });
});

describe('with no trusted proxy (the default)', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ roles: ['api', 'facade'], env: SETTINGS });
  });
  afterAll(() => platform.stop());

  it('ignores X-Forwarded-For: every request counts under the socket peer', async () => {
    const statuses: number[] = [];
    for (let index = 0; index <= LIMIT; index++) statuses.push(await unknownKeyFrom(platform, `203.0.113.${index + 1}`, index));
    expect(statuses).toEqual([...Array(LIMIT).fill(401), 429]);
  });
});
