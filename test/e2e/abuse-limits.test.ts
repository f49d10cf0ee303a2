/**
 * Abuse limits (docs/security.md "Abuse limits") with their defaults: the 11th failed login of one credential from one
 * address within a minute answers 429 in the area's envelope with Retry-After, even with the right password, while
 * the owner's login from another address works; one credential is throttled across addresses only past a much higher
 * limit; an unknown credential is answered exactly like a known one; failures from one address lock it whatever the
 * credentials; the
 * counters live in PostgreSQL, so a second platform process sees them; attempts arriving at once are counted before
 * they are checked, so no more than the limit are ever checked; and a verified caller past its request rate gets 429
 * too. Tests that need their own client address connect from another loopback address (127.0.0.0/8).
 */
import { createPrivateKey } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { createAbuseLimits } from '../../src/abuse';
import { signRequestParameters } from '../../src/crypto/rsa2';
import { createLogger } from '../../src/logger';
import { createMerchant } from '../../src/onboarding/merchants';
import { createPartner } from '../../src/onboarding/partners';
import { runRoles } from '../../src/runtime';
import { formAction, loggedInMerchant, newPreorder, newUser, SANDBOX_CARDS } from '../support/deposit-setup';
import { freshLogin, MerchantClient, onboardMerchantClient } from '../support/merchant-client';
import { generatePartnerKeys, PartnerClient } from '../support/partner-client';
import { startTestPlatform, testConfig, type TestPlatform } from '../support/platform';

// The documented defaults, undoing the test suite's generous ones (test/support/platform.ts).
const DEFAULTS = { AUTH_FAILURES_PER_CREDENTIAL: '10', AUTH_FAILURES_PER_CREDENTIAL_TOTAL: '1000', AUTH_FAILURES_PER_ADDRESS: '50', AUTH_FAILURE_WINDOW_SECONDS: '60' };

describe('abuse limits', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ env: DEFAULTS });
  });
  afterAll(() => platform.stop());

  /** POSTs `client`'s signed C1 login with `password` from the local address `from`; answers status and Retry-After. */
  function loginFrom(from: string, client: MerchantClient, password: string): Promise<{ status: number; retryAfter?: string; text: string }> {
    const url = new URL(`${client.options.baseUrl}/login`);
    const body = JSON.stringify(signRequestParameters(freshLogin({ user_name: client.options.userName, password }), createPrivateKey(client.options.privateKeyPem)));
    return new Promise((resolve, reject) => {
      const sent = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', localAddress: from, headers: client.headers() }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, retryAfter: response.headers['retry-after'], text }));
      });
      sent.on('error', reject);
      sent.end(body);
    });
  }

  /** A client for an unknown merchant id (`M` + 29 characters), signing with `like`'s key. */
  function unknownMerchant(like: MerchantClient, index: number): MerchantClient {
    return new MerchantClient({ ...like.options, merchantId: `M${String(index).padStart(29, 'X')}` });
  }

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
    const raw = await fetch(`${platform.facadeUrl}/partnerapi/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'partner-id': credentials.partner_id, 'partner-secret-key': credentials.partner_secret_key },
      body: JSON.stringify({ user_name: credentials.user_name, password: credentials.password }),
    });
    expect(raw.status).toBe(429);
    expect(Number(raw.headers.get('retry-after'))).toBeGreaterThan(0);
    await raw.arrayBuffer();
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
    const deposits = () => platform.deps.database('deposits').where({ pre_order_token: preorder.pre_order_token }).count('* as n').first();
    const before = await deposits();
    const locked = await pay();
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await deposits()).toEqual(before);
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
    const fail = async (address: string) => (await limits.beginAttempt('merchant_login', 'window-test', address)).failed();
    await fail('198.51.100.7');
    await fail('198.51.100.7');
    await expect(limits.beginAttempt('merchant_login', 'window-test', '198.51.100.7')).rejects.toMatchObject({ reason: 'RATE_LIMITED' });
    await new Promise((resolve) => setTimeout(resolve, 1200));
    await fail('198.51.100.8');
    await (await limits.beginAttempt('merchant_login', 'window-test', '198.51.100.8')).succeeded();
    await fail('198.51.100.8');
    await expect(limits.beginAttempt('merchant_login', 'window-test', '198.51.100.8')).resolves.toBeDefined();
  });

  it('checks at most 10 passwords of 30 wrong C1 logins arriving at once; the rest answer 429', async () => {
    const { client } = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Flooded Shop');
    const answers = await Promise.all(Array.from({ length: 30 }, (_, index) => loginFrom('127.0.0.2', client, `wrong-${index}`)));
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([...Array(10).fill(400), ...Array(20).fill(429)]);
    expect((await loginFrom('127.0.0.2', client, client.options.password)).status).toBe(429);
  });

  it('checks at most 10 secrets of 30 wrong A1 token requests arriving at once', async () => {
    const keys = generatePartnerKeys();
    const { credentials } = await createPartner(platform.deps, { name: 'Flooded Partner', public_key_pem: keys.publicKeyPem, float_units: 0n });
    const partner = new PartnerClient(platform.facadeUrl, credentials, keys, platform.deps.keys.publicKeyPem);
    const answers = await Promise.all(Array.from({ length: 30 }, (_, index) => partner.token({ body: { user_name: credentials.user_name, password: `wrong-${index}` } })));
    expect(answers.map((answer) => answer.status).sort()).toEqual([...Array(10).fill(401), ...Array(20).fill(429)]);
  });

  it('locks a client address after 50 failed C1 logins across merchant ids, right password included; successes use none of them', async () => {
    const { client } = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Shared Address Shop');
    for (let index = 0; index < 49; index++) expect((await loginFrom('127.0.0.3', unknownMerchant(client, index), 'guess')).status).not.toBe(429);
    // Two successes neither count against the address nor clear its failures.
    expect((await loginFrom('127.0.0.3', client, client.options.password)).status).toBe(200);
    expect((await loginFrom('127.0.0.3', client, client.options.password)).status).toBe(200);
    expect((await loginFrom('127.0.0.3', unknownMerchant(client, 49), 'guess')).status).not.toBe(429);
    const locked = await loginFrom('127.0.0.3', client, client.options.password);
    expect(locked.status).toBe(429);
    expect(Number(locked.retryAfter)).toBeGreaterThan(0);
    expect(JSON.parse(locked.text)).toMatchObject({ success: false, code: 429 });
    // Another address, same merchant: its own count.
    expect((await loginFrom('127.0.0.4', client, client.options.password)).status).toBe(200);
  });

  it('counts attempts of two limiter instances on one database together, and gives back attempts that decided nothing', async () => {
    const config = { ...platform.deps.config, AUTH_FAILURES_PER_CREDENTIAL: 5, AUTH_FAILURES_PER_CREDENTIAL_TOTAL: 7, AUTH_FAILURES_PER_ADDRESS: 1000, AUTH_FAILURE_WINDOW_SECONDS: 60 };
    const [one, two] = [createAbuseLimits(platform.deps.database, config), createAbuseLimits(platform.deps.database, config)];
    const outcomes = async (attempts: Array<() => Promise<unknown>>) => {
      const settled = await Promise.allSettled(attempts.map((attempt) => attempt()));
      return {
        admitted: settled.filter((outcome) => outcome.status === 'fulfilled').length,
        refused: settled.filter((outcome) => outcome.status === 'rejected').map((outcome) => (outcome as PromiseRejectedResult).reason),
      };
    };
    const limited = (count: number) => Array(count).fill(expect.objectContaining({ reason: 'RATE_LIMITED', retryAfterSeconds: expect.any(Number) }));
    // Twenty at once from one address: the pair's 5 are checked, the rest refused (with the other counts far off, so
    // that the order in which concurrent attempts reach each count cannot matter).
    const roomy = { ...config, AUTH_FAILURES_PER_CREDENTIAL_TOTAL: 1000 };
    const [oneRoomy, twoRoomy] = [createAbuseLimits(platform.deps.database, roomy), createAbuseLimits(platform.deps.database, roomy)];
    const paired = await outcomes(Array.from({ length: 20 }, (_, index) => () => (index % 2 ? oneRoomy : twoRoomy).beginAttempt('partner_token', 'P-raced', '198.51.100.1')));
    expect(paired).toEqual({ admitted: 5, refused: limited(15) });
    // Twenty at once from twenty addresses: the credential's 7 across addresses.
    const spread = await outcomes(Array.from({ length: 20 }, (_, index) => () => (index % 2 ? one : two).beginAttempt('merchant_login', 'M-raced', `198.51.100.${index}`)));
    expect(spread).toEqual({ admitted: 7, refused: limited(13) });

    // Withdrawn attempts (an internal error) and refused ones use up nothing of the address's 3.
    const [three, four] = [createAbuseLimits(platform.deps.database, { ...config, AUTH_FAILURES_PER_ADDRESS: 3 }), createAbuseLimits(platform.deps.database, { ...config, AUTH_FAILURES_PER_ADDRESS: 3 })];
    for (let index = 0; index < 5; index++) await (await three.beginAttempt('merchant_login', 'M-withdrawn', '203.0.113.9')).withdrawn();
    await (await four.beginAttempt('merchant_login', 'M-withdrawn', '203.0.113.9')).failed();
    await (await three.beginAttempt('merchant_login', 'M-other', '203.0.113.9')).failed();
    for (let index = 0; index < 3; index++) await expect(four.beginAttempt('merchant_login', 'M-raced', '203.0.113.9')).rejects.toMatchObject({ reason: 'RATE_LIMITED' });
    await (await three.beginAttempt('merchant_login', 'M-third', '203.0.113.9')).failed();
    await expect(four.beginAttempt('merchant_login', 'M-fourth', '203.0.113.9')).rejects.toMatchObject({ reason: 'RATE_LIMITED' });
  });

  it('runs at most PASSWORD_HASHING_CONCURRENCY password checks at once, and drops a queued one whose caller has gone', async () => {
    const limits = createAbuseLimits(platform.deps.database, { ...platform.deps.config, PASSWORD_HASHING_CONCURRENCY: 2 });
    let running = 0;
    let most = 0;
    const check = () =>
      limits.hashing(async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running--;
      });
    await Promise.all(Array.from({ length: 6 }, check));
    expect(most).toBe(2);

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const busy = [limits.hashing(() => held), limits.hashing(() => held)];
    const gone = new AbortController();
    let ran = false;
    const queued = limits.hashing(async () => {
      ran = true;
    }, gone.signal);
    gone.abort(new Error('deadline passed'));
    release();
    await Promise.all(busy);
    await expect(queued).rejects.toThrow('deadline passed');
    expect(ran).toBe(false);
    await expect(limits.hashing(async () => 'checked', new AbortController().signal)).resolves.toBe('checked');
  });

  it('answers a verified merchant (API key or session) or partner past REQUESTS_PER_CALLER_PER_MINUTE with 429', async () => {
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

      // Area C with a session: an action the façade refuses itself (unknown service) counts as well.
      const { client } = await onboardMerchantClient(platform.deps, limited.facadeUrl!, 'Busy Session Shop');
      expect((await client.login()).status).toBe(200);
      const actions = [];
      for (let index = 0; index < 4; index++) actions.push((await client.action('list_fees')).status);
      actions.push((await client.action('no_such_service')).status);
      const limitedAction = await client.action('list_fees');
      expect([...actions, limitedAction.status]).toEqual([200, 200, 200, 200, 400, 429]);
      expect(Number(limitedAction.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(limitedAction.body).toEqual({ success: false, code: 429, message: 'Too Many Requests', error: { request: ['Too many requests. Retry after the time in Retry-After.'] } });

      // Area A gateway calls of a partner with a token (the token request itself is not counted).
      const keys = generatePartnerKeys();
      const { credentials: partnerCredentials } = await createPartner(platform.deps, { name: 'Busy Partner', public_key_pem: keys.publicKeyPem, float_units: 0n });
      const partner = new PartnerClient(limited.facadeUrl!, partnerCredentials, keys, platform.deps.keys.publicKeyPem);
      expect((await partner.token()).status).toBe(200);
      const gateway = [];
      for (let index = 0; index < 6; index++) gateway.push(await partner.gateway({ service: 'query.fundTransfer', out_trade_no: `BUSY${index}` }));
      expect(gateway.slice(0, 5).map((reply) => reply.status)).not.toContain(429);
      expect(gateway[5]).toMatchObject({ status: 429, body: { success: false, error_code: 'SYSTEMERROR', error_desc: 'Too many requests. Retry after the time in Retry-After.' } });
    } finally {
      await limited.stop();
    }
  });
});

/**
 * Lockouts an attacker cannot aim: failures lock the pair (credential, client address), so ten wrong attempts naming
 * a partner or merchant from one address leave its owner's right request from another address working. Addresses
 * are simulated behind one trusted proxy (FACADE_TRUSTED_PROXY_HOPS=1): the X-Forwarded-For entry is the client.
 */
describe('lockouts an attacker cannot aim', () => {
  let platform: TestPlatform;
  const ATTACKER = '198.51.100.66';
  const OWNER = '203.0.113.5';
  beforeAll(async () => {
    platform = await startTestPlatform({ env: { ...DEFAULTS, FACADE_TRUSTED_PROXY_HOPS: '1' } });
  });
  afterAll(() => platform.stop());

  const from = (address: string) => ({ 'x-forwarded-for': address });

  it('A1: ten wrong token requests for a partner from one address leave its owner’s token request from another address working', async () => {
    const keys = generatePartnerKeys();
    const { credentials } = await createPartner(platform.deps, { name: 'Aimed-at Partner', public_key_pem: keys.publicKeyPem, float_units: 0n });
    const partner = new PartnerClient(platform.facadeUrl, credentials, keys, platform.deps.keys.publicKeyPem);
    const statuses: number[] = [];
    for (let index = 0; index < 11; index++) statuses.push((await partner.token({ headers: from(ATTACKER), body: { user_name: credentials.user_name, password: `wrong-${index}` } })).status);
    expect(statuses).toEqual([...Array(10).fill(401), 429]);
    // The attacker's address stays locked for this partner, even with the right password.
    expect((await partner.token({ headers: from(ATTACKER) })).status).toBe(429);
    const owner = await partner.token({ headers: from(OWNER) });
    expect(owner.status).toBe(200);
    expect(owner.body).toMatchObject({ success: true, data: { access_token: expect.any(String) } });
  });

  it('C1: ten wrong logins for a merchant from one address leave its owner’s login from another address working', async () => {
    const { client } = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Aimed-at Shop');
    const statuses: number[] = [];
    for (let index = 0; index < 11; index++) {
      statuses.push((await client.post('/login', { user_name: client.options.userName, password: `wrong-${index}` }, { headers: from(ATTACKER) })).status);
    }
    expect(statuses).toEqual([...Array(10).fill(400), 429]);
    const owner = await client.post('/login', { user_name: client.options.userName, password: client.options.password }, { headers: from(OWNER) });
    expect(owner.status).toBe(200);
    expect(owner.body).toMatchObject({ success: true, data: { token: expect.any(String) } });
  });

  it('Area B: an address locked after unknown API keys leaves the owner’s key working from another address', async () => {
    const { credentials } = await createMerchant(platform.deps, { name: 'Aimed-at Payins', callback_url: 'https://aimed.example/hook' });
    const balance = async (apiKey: string, address: string) => {
      const response = await fetch(`${platform.facadeUrl}/api/v1/balance`, { headers: { 'X-API-Key': apiKey, ...from(address) } });
      await response.arrayBuffer();
      return response.status;
    };
    const statuses: number[] = [];
    for (let index = 0; index < 51; index++) statuses.push(await balance(`${credentials.api_key.slice(0, -4)}${String(index).padStart(4, '0')}`, ATTACKER));
    expect(statuses).toEqual([...Array(50).fill(401), 429]);
    expect(await balance(credentials.api_key, OWNER)).toBe(200);
  });

  it('throttles one credential across addresses only past its much higher limit', async () => {
    const limits = createAbuseLimits(platform.deps.database, { ...platform.deps.config, AUTH_FAILURES_PER_CREDENTIAL: 2, AUTH_FAILURES_PER_CREDENTIAL_TOTAL: 5 });
    const attempt = (address: string) => limits.beginAttempt('merchant_login', 'M-spread', address);
    // Two failures per address lock that address for the credential; other addresses go on.
    await (await attempt('198.51.100.1')).failed();
    await (await attempt('198.51.100.1')).failed();
    await expect(attempt('198.51.100.1')).rejects.toMatchObject({ reason: 'RATE_LIMITED' });
    await (await attempt('198.51.100.2')).failed();
    await (await attempt('198.51.100.2')).failed();
    // A success from a third address clears nothing but its own pair, and gives its point back.
    await (await attempt('198.51.100.3')).succeeded();
    await (await attempt('198.51.100.3')).failed();
    // Five failures of the credential from every address together: now every address is refused for it.
    await expect(attempt('198.51.100.4')).rejects.toMatchObject({ reason: 'RATE_LIMITED', retryAfterSeconds: expect.any(Number) });
    // Other credentials are not touched.
    await expect(limits.beginAttempt('merchant_login', 'M-other', '198.51.100.4')).resolves.toBeDefined();
  });
});
