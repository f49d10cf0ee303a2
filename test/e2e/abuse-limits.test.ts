/**
 * Abuse limits (docs/security.md "Abuse limits") with their defaults: the 11th failed login of one credential within
 * a minute answers 429 in the area's envelope with Retry-After, even with the right password; an unknown
 * credential is answered exactly like a known one; failures from one address lock it whatever the credentials; the
 * counters live in PostgreSQL, so a second platform process sees them; and a verified caller past its request rate
 * gets 429 too.
 */
import { createAbuseLimits } from '../../src/abuse';
import { createLogger } from '../../src/logger';
import { createMerchant } from '../../src/onboarding/merchants';
import { createPartner } from '../../src/onboarding/partners';
import { runRoles } from '../../src/runtime';
import { formAction, loggedInMerchant, newPreorder, newUser, SANDBOX_CARDS } from '../support/deposit-setup';
import { MerchantClient, onboardMerchantClient } from '../support/merchant-client';
import { generatePartnerKeys, PartnerClient } from '../support/partner-client';
import { startTestPlatform, testConfig, type TestPlatform } from '../support/platform';

// The documented defaults, undoing the test suite's generous ones (test/support/platform.ts).
const DEFAULTS = { AUTH_FAILURES_PER_CREDENTIAL: '10', AUTH_FAILURES_PER_ADDRESS: '50', AUTH_FAILURE_WINDOW_SECONDS: '60' };

describe('abuse limits', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ env: DEFAULTS });
  });
  afterAll(() => platform.stop());

  /** Sends the login with a wrong password `times` times; returns the statuses. */
  async function failLogins(client: MerchantClient, times: number): Promise<number[]> {
    const statuses: number[] = [];
    for (let index = 0; index < times; index++) statuses.push((await client.post('/login', { user_name: client.options.userName, password: `wrong-${index}` })).status);
    return statuses;
  }

  it('answers the 11th failed C1 login within a minute with 429 and Retry-After, then refuses the right password too', async () => {
    const { client } = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Locked Shop');
    expect(await failLogins(client, 10)).toEqual(Array(10).fill(400));
    const eleventh = await client.post('/login', { user_name: client.options.userName, password: 'wrong-again' });
    expect(eleventh.status).toBe(429);
    const retryAfter = Number(eleventh.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(eleventh.body).toEqual({ success: false, code: 429, message: 'Too Many Requests', error: { request: ['Too many requests. Retry after the time in Retry-After.'] } });
    const right = await client.login();
    expect(right.status).toBe(429);
    expect(await platform.deps.database('merchant_sessions').where({ merchant_id: client.options.merchantId }).count('* as n').first()).toMatchObject({ n: 0n });
  });

  it('answers an unknown merchant id exactly as a known one, at every step', async () => {
    const known = (await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Known Shop')).client;
    const unknown = new MerchantClient({ ...known.options, merchantId: 'M0000000000000000000000UNKNOWN' });
    const [knownStatuses, unknownStatuses] = [await failLogins(known, 11), await failLogins(unknown, 11)];
    expect(unknownStatuses.slice(10)).toEqual(knownStatuses.slice(10));
    expect(knownStatuses.at(-1)).toBe(429);
    const [a, b] = [
      await known.post('/login', { user_name: 'x', password: 'y' }),
      await unknown.post('/login', { user_name: 'x', password: 'y' }),
    ];
    expect(a.text).toBe(b.text);
  });

  it('answers the 11th failed A1 token request with 429 in the Area A envelope', async () => {
    const keys = generatePartnerKeys();
    const { credentials } = await createPartner(platform.deps, { name: 'Locked Partner', public_key_pem: keys.publicKeyPem, float_units: 0n });
    const partner = new PartnerClient(platform.facadeUrl, credentials, keys, platform.deps.keys.publicKeyPem);
    const statuses: number[] = [];
    for (let index = 0; index < 10; index++) statuses.push((await partner.token({ body: { user_name: credentials.user_name, password: `wrong-${index}` } })).status);
    expect(statuses).toEqual(Array(10).fill(401));
    const locked = await partner.token();
    expect(locked).toEqual({ status: 429, body: { success: false, error_code: 'SYSTEMERROR', error_desc: 'Too many requests. Retry after the time in Retry-After.' } });
  });

  it('locks a client address after 50 unknown API keys, whatever the keys, in the Area B envelope', async () => {
    const statuses: number[] = [];
    for (let index = 0; index < 51; index++) {
      const response = await fetch(`${platform.facadeUrl}/api/v1/balance`, { headers: { 'X-API-Key': `guess-${index}` } });
      statuses.push(response.status);
      if (response.status === 429) {
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(await response.json()).toEqual({ success: false, message: 'Too many requests. Retry after the time in Retry-After.', errors: null });
      } else {
        await response.arrayBuffer();
      }
    }
    expect(statuses.slice(0, 50)).toEqual(Array(50).fill(401));
    expect(statuses[50]).toBe(429);
  });

  it('locks the hosted card form of a preorder token after 10 refused submissions, as an HTML 429', async () => {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let index = 0; index < 11; index++) {
      last = await fetch(`${platform.facadeUrl}/pre-order/po_UNKNOWN0000000000000000000000/pay`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'holder_name=A&card_number=4242424242424242&expiry_month=12&expiry_year=39&security_code=123',
      });
      statuses.push(last.status);
      if (index < 10) await last.arrayBuffer();
    }
    expect(statuses).toEqual([...Array(10).fill(404), 429]);
    expect(last!.headers.get('content-type')).toMatch(/^text\/html/);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await last!.text()).toContain('Too many attempts');
  });

  it('counts declined cards of a hosted preorder page: after 10 the card form answers 429', async () => {
    const client = await loggedInMerchant(platform, 'Card Testing Target');
    const seller = await newUser(client, 'Seller');
    const preorder = await newPreorder(client, { seller_code: seller.wallet_ref, amount: 1 });
    const pay = () =>
      fetch(`${platform.facadeUrl}/pre-order/${preorder.pre_order_token}/pay`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `holder_name=Tester&card_number=${SANDBOX_CARDS.declined}&expiry_month=12&expiry_year=39&security_code=123`,
      });
    for (let index = 0; index < 10; index++) {
      const page = await pay();
      expect(page.status).toBe(200);
      const action = formAction(await page.text())!.replace(`${platform.config.PUBLIC_BASE_URL}${platform.config.MERCHANT_PREFIX}`, platform.facadeUrl);
      const submitted = await fetch(action, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
      await submitted.arrayBuffer();
    }
    const locked = await pay();
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('locks the activation pages for an address after 50 unknown codes', async () => {
    const statuses: number[] = [];
    for (let index = 0; index < 51; index++) {
      const response = await fetch(`${platform.facadeUrl}/instruments/bank-accounts/activate/guess${index}`);
      statuses.push(response.status);
      await response.arrayBuffer();
    }
    expect(statuses).toEqual([...Array(50).fill(404), 429]);
  });

  it('shares the counters between processes: a second platform process sees the lockout', async () => {
    const { client } = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Shared Lock Shop');
    await failLogins(client, 10);
    const other = await runRoles(
      testConfig({ ...DEFAULTS, DATABASE_URL: platform.config.DATABASE_URL!, TEMPORAL_TASK_QUEUE: platform.config.TEMPORAL_TASK_QUEUE, PLATFORM_KEY_DIR: platform.config.PLATFORM_KEY_DIR }),
      ['api', 'facade'],
      createLogger('silent'),
    );
    try {
      const elsewhere = new MerchantClient({ ...client.options, baseUrl: other.facadeUrl! });
      expect((await elsewhere.login()).status).toBe(429);
    } finally {
      await other.stop();
    }
  });

  it('lets a credential try again once its window has passed, and a success clears its failures', async () => {
    const limits = createAbuseLimits(platform.deps.database, { ...platform.deps.config, AUTH_FAILURES_PER_CREDENTIAL: 2, AUTH_FAILURE_WINDOW_SECONDS: 1 });
    await limits.recordFailure('merchant_login', 'window-test', '198.51.100.7');
    await limits.recordFailure('merchant_login', 'window-test', '198.51.100.7');
    await expect(limits.checkAttempt('merchant_login', 'window-test', '198.51.100.7')).rejects.toMatchObject({ reason: 'RATE_LIMITED' });
    await new Promise((resolve) => setTimeout(resolve, 1200));
    await expect(limits.checkAttempt('merchant_login', 'window-test', '198.51.100.7')).resolves.toBeUndefined();
    await limits.recordFailure('merchant_login', 'window-test', '198.51.100.8');
    await limits.recordSuccess('merchant_login', 'window-test');
    await limits.recordFailure('merchant_login', 'window-test', '198.51.100.8');
    await expect(limits.checkAttempt('merchant_login', 'window-test', '198.51.100.8')).resolves.toBeUndefined();
  });

  it('answers a verified merchant past REQUESTS_PER_CALLER_PER_MINUTE with 429', async () => {
    const limited = await runRoles(
      testConfig({ ...DEFAULTS, REQUESTS_PER_CALLER_PER_MINUTE: '5', DATABASE_URL: platform.config.DATABASE_URL!, TEMPORAL_TASK_QUEUE: platform.config.TEMPORAL_TASK_QUEUE, PLATFORM_KEY_DIR: platform.config.PLATFORM_KEY_DIR }),
      ['api', 'facade'],
      createLogger('silent'),
    );
    try {
      const { credentials } = await createMerchant(platform.deps, { name: 'Busy Shop', callback_url: 'https://busy.example/hook' });
      const statuses: number[] = [];
      let retryAfter = '';
      for (let index = 0; index < 6; index++) {
        const response = await fetch(`${limited.facadeUrl}/api/v1/balance`, { headers: { 'X-API-Key': credentials.api_key } });
        statuses.push(response.status);
        retryAfter = response.headers.get('retry-after') ?? '';
        await response.arrayBuffer();
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      expect(Number(retryAfter)).toBeGreaterThan(0);
    } finally {
      await limited.stop();
    }
  });
});
