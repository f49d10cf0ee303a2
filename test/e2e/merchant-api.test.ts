/**
 * Area C over HTTP (interface "Area C"; platform decisions §7 and §8): login, the signed /do-action route
 * and its services, every documented failure, tenant isolation. Real PostgreSQL, Temporal, RPC and façade.
 */
import { signRequestParameters } from '../../src/crypto/rsa2';
import { getUser } from '../../src/onboarding';
import { MESSAGES } from '../../rest-facade/merchant/contract';
import { MerchantClient, onboardMerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { fundUser } from '../support/wallets';

const BAD_REQUEST = { success: false, code: 400, message: 'Bad Request' };

async function newMerchant(platform: TestPlatform, name: string): Promise<MerchantClient> {
  return (await onboardMerchantClient(platform.deps, platform.facadeUrl, name)).client;
}

// Clear of the demo users' 012000001 and 012000002: under test:cluster the database is shared with the demo data.
let phoneCounter = 10_500_000;
function nextPhone(): string {
  phoneCounter += 1;
  return `012${String(phoneCounter).slice(-6)}`;
}

async function createUser(client: MerchantClient, extra: Record<string, unknown> = {}) {
  const response = await client.action('create_user', {
    phone_number: nextPhone(),
    first_name: 'Sok',
    last_name: 'Dara',
    address: 'Phnom Penh',
    currency: 'USD',
    ...extra,
  });
  expect(response.status).toBe(200);
  return response.body.data as { id: number; user_token: string; wallet_ref: string; phone_number: string };
}

async function balances(platform: TestPlatform, userId: number): Promise<{ posted: bigint; available: bigint }> {
  const user = (await getUser(platform.deps.database, String(userId)))!;
  const account = await platform.deps.ledger.getAccount(user.wallet_account_id);
  return { posted: account.posted_units, available: account.available_units };
}

describe('Area C merchant API', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let other: MerchantClient;

  beforeAll(async () => {
    platform = await startTestPlatform();
    merchant = await newMerchant(platform, 'Angkor Mart');
    other = await newMerchant(platform, 'Other Shop');
    expect((await other.login()).status).toBe(200);
  });
  afterAll(() => platform.stop());

  describe('C1 login', () => {
    it('answers the token and the merchant API user with its USD wallet', async () => {
      const response = await merchant.login();
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ success: true, code: 200, message: 'OK' });
      const { token, user } = response.body.data;
      expect(typeof token).toBe('string');
      expect(token.length).toBeGreaterThan(20);
      expect(user).toEqual({
        id: expect.any(Number),
        avatar: expect.any(String),
        fk_soc: expect.any(Number),
        time_zone: 'Asia/Phnom_Penh',
        full_name: 'Angkor Mart',
        balance: 0,
        wallet_ref: expect.any(String),
        wallet_id: expect.any(Number),
        currency: 'USD',
      });
      expect(response.text).toContain('"balance":0');
    });

    it('refuses a wrong password with error.user_name_password', async () => {
      const response = await merchant.post('/login', { user_name: merchant.options.userName, password: 'wrong' });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { user_name_password: ['These credentials do not match our records.'] } });
    });

    it('refuses a wrong user name the same way', async () => {
      const response = await merchant.post('/login', { user_name: 'nobody', password: merchant.options.password });
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { user_name_password: ['These credentials do not match our records.'] } });
    });

    it('reports missing user_name and password under their names', async () => {
      const response = await merchant.post('/login', {});
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        ...BAD_REQUEST,
        error: { user_name: [MESSAGES.required('user_name')], password: [MESSAGES.required('password')] },
      });
    });

    it('refuses a bad signature', async () => {
      const response = await merchant.post(
        '/login',
        { user_name: merchant.options.userName, password: merchant.options.password, sign_type: 'RSA2', sign: 'AAAA' },
        { sign: false },
      );
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { sign: ['invalid sign'] } });
    });

    it('refuses wrong merchant headers with 401', async () => {
      const response = await merchant.post(
        '/login',
        { user_name: merchant.options.userName, password: merchant.options.password },
        { headers: { 'merchant-secret-key': 'wrong' } },
      );
      expect(response.status).toBe(401);
      expect(response.body).toEqual({
        success: false, code: 401, message: 'Unauthorized', error: { merchant: ['The merchant-id or merchant-secret-key is invalid.'] },
      });
    });

    it('opens no session for a captured signed login body sent again', async () => {
      const raw = JSON.stringify(
        signRequestParameters({ user_name: merchant.options.userName, password: merchant.options.password, timestamp: Math.floor(Date.now() / 1000) }, merchant.options.privateKeyPem),
      );
      const first = await merchant.post('/login', {}, { raw });
      expect(first.status).toBe(200);
      const replayed = await merchant.post('/login', {}, { raw });
      expect(replayed.status).toBe(400);
      expect(replayed.body).toEqual({ ...BAD_REQUEST, error: { timestamp: ['This signed login was already used: sign a new one with the current timestamp.'] } });
    });

    it('opens a session for the documented login (no timestamp) every time, and records no replay for it', async () => {
      const raw = JSON.stringify(signRequestParameters({ user_name: merchant.options.userName, password: merchant.options.password }, merchant.options.privateKeyPem));
      const before = await platform.deps.database('merchant_login_requests').count({ count: '*' }).first();
      for (let attempt = 0; attempt < 2; attempt += 1) {
        const response = await merchant.post('/login', {}, { raw });
        expect(response.status).toBe(200);
        expect(typeof response.body.data.token).toBe('string');
      }
      expect(await platform.deps.database('merchant_login_requests').count({ count: '*' }).first()).toEqual(before);
      // Still every other check: the merchant headers, the signature, the credentials.
      expect((await merchant.post('/login', {}, { raw, headers: { 'merchant-secret-key': 'wrong' } })).status).toBe(401);
      const altered = JSON.stringify({ ...JSON.parse(raw), password: 'other' });
      expect((await merchant.post('/login', {}, { raw: altered })).body).toEqual({ ...BAD_REQUEST, error: { sign: ['invalid sign'] } });
    });


    it('refuses a timestamp outside MERCHANT_LOGIN_WINDOW_SECONDS, and one that is no Unix time in seconds', async () => {
      const stale = await merchant.post('/login', { user_name: merchant.options.userName, password: merchant.options.password, timestamp: Math.floor(Date.now() / 1000) - 301 });
      expect(stale.status).toBe(400);
      expect(stale.body).toEqual({ ...BAD_REQUEST, error: { timestamp: ['The timestamp must be within 300 seconds of the current time.'] } });
      const future = await merchant.post('/login', { user_name: merchant.options.userName, password: merchant.options.password, timestamp: String(Math.floor(Date.now() / 1000) + 400) });
      expect(future.body.error).toEqual({ timestamp: ['The timestamp must be within 300 seconds of the current time.'] });
      const millis = await merchant.post('/login', { user_name: merchant.options.userName, password: merchant.options.password, timestamp: Date.now() });
      expect(millis.body.error).toEqual({ timestamp: ['The timestamp must be within 300 seconds of the current time.'] });
      const text = await merchant.post('/login', { user_name: merchant.options.userName, password: merchant.options.password, timestamp: '2026-01-01T00:00:00Z' });
      expect(text.body.error).toEqual({ timestamp: ['The timestamp must be an integer.'] });
    });

    it('opens a session for two logins within one second that differ (by nonce), and records no login body in clear', async () => {
      const [one, two] = await Promise.all([merchant.login(), merchant.login()]);
      expect([one.status, two.status]).toEqual([200, 200]);
      const rows = await platform.deps.database('merchant_login_requests').select('signature_sha256');
      expect(rows.length).toBeGreaterThanOrEqual(2);
      for (const row of rows) expect(row.signature_sha256).toMatch(/^[0-9a-f]{64}$/);
    });

    it('refuses a body that is not a JSON object', async () => {
      const response = await merchant.post('/login', {}, { raw: '[1,2' });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { body: ['The request body must be a JSON object.'] } });
    });
  });

  describe('C2 do-action authentication', () => {
    it('answers 401 without a token', async () => {
      const anonymous = new MerchantClient(merchant.options);
      const response = await anonymous.action('list_fees');
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ success: false, code: 401, message: 'Unauthorized', error: { token: ['The token is required.'] } });
    });

    it('answers 401 with an unknown token', async () => {
      const response = await merchant.action('list_fees', {}, { headers: { authorization: 'Bearer not-a-token' } });
      expect(response.status).toBe(401);
      expect(response.body.error).toEqual({ token: ['The token is invalid.'] });
    });

    it("answers 401 with another merchant's token", async () => {
      const response = await merchant.action('list_fees', {}, { headers: { authorization: `Bearer ${other.token}` } });
      expect(response.status).toBe(401);
      expect(response.body.error).toEqual({ token: ['The token is invalid.'] });
    });

    it('refuses a bad signature (a field changed after signing)', async () => {
      const response = await merchant.post('/do-action', {}, {
        raw: JSON.stringify({ ...(await signedBody(merchant, { service: 'list_banks', page: 1 })), page: 2 }),
      });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { sign: ['invalid sign'] } });
    });

    it('refuses a signed value that reads as more parameters (a=1&b=2 inside a value), on that field, and a name with & or =', async () => {
      const response = await merchant.action('list_fees', { note: 'a=1&b=2' });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { note: ['The note must not contain & followed by = (it would read as another parameter).'] } });
      const name = await merchant.action('list_fees', { 'x=y': 'z' });
      expect(name.body).toEqual({ ...BAD_REQUEST, error: { 'x=y': ['The parameter name x=y must not contain & or =.'] } });
      expect((await merchant.action('list_fees', { note: 'Tom & Jerry' })).status).toBe(200);
    });

    it('refuses a missing sign and a wrong sign_type', async () => {
      const response = await merchant.action('list_fees', { sign_type: 'MD5' }, { sign: false });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { sign_type: ['The sign_type must be RSA2.'], sign: ['invalid sign'] } });
    });

    it('reports an unknown service under `service`', async () => {
      const response = await merchant.action('no_such_service');
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { service: ['The selected service is invalid.'] } });
    });

    it('reports a missing service under `service`', async () => {
      const response = await merchant.post('/do-action', {});
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { service: ['The service field is required.'] } });
    });

    it('echoes X-Request-Id', async () => {
      const response = await fetch(`${platform.facadeUrl}/do-action`, { method: 'POST', headers: { 'x-request-id': 'req-c-1' }, body: '{}' });
      expect(response.headers.get('x-request-id')).toBe('req-c-1');
      expect(response.status).toBe(401);
    });
  });

  describe('list_fees', () => {
    it('answers FEE by channel code and EXCHANGE_RATE', async () => {
      const response = await merchant.action('list_fees');
      expect(response.status).toBe(200);
      const data = response.body.data;
      expect(data.FEE.ABA).toEqual({ fee_payout: { amount: 0.5, currency: 'USD' }, fee_payin: { amount: 0, currency: 'USD' } });
      expect(data.FEE.VISA_MASTER).toEqual({ fee_payin: { amount_percentage: 2.5 } });
      expect(data.FEE.TRANSFER).toEqual({ fee_transfer: 0 });
      expect(data.EXCHANGE_RATE).toEqual({ USD_KHR: 4100, KHR_USD: 0.000244 });
    });

    it('reflects an operator edit of the fee table', async () => {
      await platform.deps.database('fee_schedule').insert({ channel_code: 'WING_TEST', fee: JSON.stringify({ fee_transfer: 0.25 }) });
      const response = await merchant.action('list_fees');
      expect(response.body.data.FEE.WING_TEST).toEqual({ fee_transfer: 0.25 });
    });
  });

  describe('create_user / update_user', () => {
    it('creates a user and answers the user record', async () => {
      const response = await merchant.action('create_user', {
        phone_number: '012 345 001',
        email: 'dara@example.com',
        first_name: 'Dara',
        last_name: 'Sok',
        address: 'Street 271, Phnom Penh',
        currency: 'USD',
        birthday: '1990-04-13',
        gender: 'm',
        description: 'VIP',
      });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({
        id: expect.any(Number),
        email: 'dara@example.com',
        avatar: expect.any(String),
        created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
        updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
        phone_number: '+85512345001',
        gender: 'm',
        first_name: 'Dara',
        last_name: 'Sok',
        full_name: 'Dara Sok',
        address: 'Street 271, Phnom Penh',
        birthday: '1990-04-13',
        currency: 'USD',
        user_token: expect.any(String),
        wallet_ref: expect.any(String),
      });
    });

    it('reports a duplicate phone number and a duplicate email under their names', async () => {
      const phone = await merchant.action('create_user', {
        phone_number: '85512345001', first_name: 'A', last_name: 'B', address: 'C', currency: 'USD',
      });
      expect(phone.status).toBe(400);
      expect(Object.keys(phone.body.error)).toEqual(['phone_number']);
      const email = await merchant.action('create_user', {
        email: 'dara@example.com', first_name: 'A', last_name: 'B', address: 'C', currency: 'USD',
      });
      expect(email.status).toBe(400);
      expect(Object.keys(email.body.error)).toEqual(['email']);
    });

    it('requires one of phone_number and email, and every required field', async () => {
      const response = await merchant.action('create_user', { first_name: 12 });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        ...BAD_REQUEST,
        error: {
          phone_number: [MESSAGES.phoneOrEmail],
          email: [MESSAGES.emailOrPhone],
          first_name: [MESSAGES.string('first_name')],
          last_name: [MESSAGES.required('last_name')],
          address: [MESSAGES.required('address')],
          currency: [MESSAGES.required('currency')],
        },
      });
    });

    it('refuses a malformed phone number and a currency other than USD', async () => {
      const response = await merchant.action('create_user', {
        phone_number: 'abc', first_name: 'A', last_name: 'B', address: 'C', currency: 'EUR',
      });
      expect(response.status).toBe(400);
      expect(response.body.error).toEqual({ currency: [MESSAGES.currency('currency')] });
      const phone = await merchant.action('create_user', { phone_number: 'abc', first_name: 'A', last_name: 'B', address: 'C', currency: 'USD' });
      expect(phone.status).toBe(400);
      expect(Object.keys(phone.body.error)).toEqual(['phone_number']);
    });

    it('updates a user by user_id and by phone_number', async () => {
      const user = await createUser(merchant);
      const byId = await merchant.action('update_user', {
        user_id: user.id, phone_number: user.phone_number, first_name: 'New', last_name: 'Name', address: 'Siem Reap', currency: 'USD',
      });
      expect(byId.status).toBe(200);
      expect(byId.body.data).toMatchObject({ id: user.id, first_name: 'New', full_name: 'New Name', address: 'Siem Reap' });
      const byPhone = await merchant.action('update_user', {
        phone_number: user.phone_number, first_name: 'Again', last_name: 'Name', address: 'Kampot', currency: 'USD', gender: 'f',
      });
      expect(byPhone.status).toBe(200);
      expect(byPhone.body.data).toMatchObject({ id: user.id, first_name: 'Again', address: 'Kampot', gender: 'f' });
    });

    it('update_user requires its fields', async () => {
      const response = await merchant.action('update_user', {});
      expect(response.body).toEqual({
        ...BAD_REQUEST,
        error: {
          phone_number: [MESSAGES.required('phone_number')],
          first_name: [MESSAGES.required('first_name')],
          last_name: [MESSAGES.required('last_name')],
          address: [MESSAGES.required('address')],
          currency: [MESSAGES.required('currency')],
        },
      });
    });

    it("answers another merchant's user as unknown", async () => {
      const foreign = await createUser(other);
      const byId = await merchant.action('update_user', {
        user_id: foreign.id, phone_number: foreign.phone_number, first_name: 'X', last_name: 'Y', address: 'Z', currency: 'USD',
      });
      expect(byId.status).toBe(400);
      expect(byId.body.error).toEqual({ user_id: [MESSAGES.userNotFound('user_id')] });
      const byPhone = await merchant.action('update_user', {
        phone_number: foreign.phone_number, first_name: 'X', last_name: 'Y', address: 'Z', currency: 'USD',
      });
      expect(byPhone.body.error).toEqual({ phone_number: [MESSAGES.userNotFound('phone_number')] });
    });
  });

  describe('transfer', () => {
    it('moves the amount and the fee to the platform in one transaction', async () => {
      const from = await createUser(merchant);
      const to = await createUser(merchant);
      await fundUser(platform, from.id, 10_000n);
      const revenue = await platform.deps.ledger.platformAccount('fee_revenue', 'USD');
      const revenueBefore = revenue.posted_units;
      const response = await merchant.action('transfer', {
        from_user_id: String(from.id), to_user_id: to.id, amount: 12.34, currency: 'USD', fees_amount: 0.5, fees_currency: 'USD',
      });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ success: true, code: 200, message: 'OK', data: { reference: expect.stringMatching(/^TRF[A-Z0-9]{18}$/) } });
      expect((await balances(platform, from.id)).posted).toBe(10_000n - 1234n - 50n);
      expect((await balances(platform, to.id)).posted).toBe(1234n);
      expect((await platform.deps.ledger.getAccount(revenue.id)).posted_units - revenueBefore).toBe(50n);
    });

    it('refuses a user made inactive once a change is announced, though the parties were cached', async () => {
      const from = await createUser(merchant);
      const to = await createUser(merchant);
      await fundUser(platform, from.id, 1_000n);
      const send = () => merchant.action('transfer', { from_user_id: from.id, to_user_id: to.id, amount: 1, currency: 'USD' });
      expect((await send()).status).toBe(200); // both parties are cached now
      await platform.deps.database('users').where({ id: to.id }).update({ status: 'inactive' });
      await platform.deps.database.transaction((trx) => platform.deps.authChanges.publish(trx, {}));
      const refused = await send();
      expect(refused.status).toBe(400);
      expect(refused.body.error).toEqual({ to_user_id: [expect.any(String)] });
      expect((await balances(platform, to.id)).posted).toBe(100n);
    });

    it('requires fees_currency whenever fees_amount is sent', async () => {
      const response = await merchant.action('transfer', { from_user_id: 1, to_user_id: 2, amount: 1, currency: 'USD', fees_amount: 0.1 });
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { fees_currency: [MESSAGES.feesCurrencyRequired] } });
    });

    it('reports every missing or malformed field under its name', async () => {
      const response = await merchant.action('transfer', { from_user_id: 'abc', amount: '1.001', currency: 'KHR' });
      expect(response.body).toEqual({
        ...BAD_REQUEST,
        error: {
          currency: [MESSAGES.currency('currency')],
          from_user_id: [MESSAGES.integer('from_user_id')],
          to_user_id: [MESSAGES.required('to_user_id')],
          amount: ['The amount must have at most 2 decimal places.'],
        },
      });
    });

    it('refuses wrong types', async () => {
      const response = await merchant.action('transfer', { from_user_id: true, to_user_id: [2], amount: { v: 1 }, currency: 840 });
      expect(response.body.error).toEqual({
        currency: [MESSAGES.string('currency')],
        from_user_id: [MESSAGES.integer('from_user_id')],
        to_user_id: [MESSAGES.integer('to_user_id')],
        amount: ['The amount must be a number.'],
      });
    });

    it('refuses insufficient funds on amount and changes nothing', async () => {
      const from = await createUser(merchant);
      const to = await createUser(merchant);
      await fundUser(platform, from.id, 100n);
      const response = await merchant.action('transfer', { from_user_id: from.id, to_user_id: to.id, amount: 1.01, currency: 'USD' });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { amount: [MESSAGES.insufficientFunds] } });
      expect((await balances(platform, from.id)).posted).toBe(100n);
    });

    it("answers an unknown user and another merchant's user alike", async () => {
      const mine = await createUser(merchant);
      const foreign = await createUser(other);
      await fundUser(platform, foreign.id, 1000n);
      const unknown = await merchant.action('transfer', { from_user_id: 999999999, to_user_id: mine.id, amount: 1, currency: 'USD' });
      expect(unknown.body).toEqual({ ...BAD_REQUEST, error: { from_user_id: [MESSAGES.userNotFound('from_user_id')] } });
      const stolen = await merchant.action('transfer', { from_user_id: foreign.id, to_user_id: mine.id, amount: 1, currency: 'USD' });
      expect(stolen.body).toEqual({ ...BAD_REQUEST, error: { from_user_id: [MESSAGES.userNotFound('from_user_id')] } });
      expect((await balances(platform, foreign.id)).posted).toBe(1000n);
    });

    it('refuses a transfer to oneself', async () => {
      const response = await merchant.action('transfer', { from_user_id: 5, to_user_id: '5', amount: 1, currency: 'USD' });
      expect(response.body.error).toEqual({ to_user_id: [MESSAGES.sameUser] });
    });
  });

  describe('list_banks', () => {
    it('answers the first page of 20 with paging fields', async () => {
      const response = await merchant.action('list_banks');
      expect(response.status).toBe(200);
      const data = response.body.data;
      expect(data).toMatchObject({ current_page: 1, from: 1, to: 20, per_page: 20, last_page: 2 });
      expect(data.total).toBeGreaterThanOrEqual(21);
      expect(data.data).toHaveLength(20);
      expect(data.data[0]).toEqual({ id: expect.any(Number), name: 'ABA Bank', region: 'Phnom Penh', city: 'Phnom Penh', logo: '/images/banks/aba.png' });
    });

    it('answers a later page and an empty page', async () => {
      const second = await merchant.action('list_banks', { page: 2, per_page: 20 });
      expect(second.body.data).toMatchObject({ current_page: 2, from: 21, per_page: 20 });
      expect(second.body.data.data.length).toBe(second.body.data.total - 20);
      const empty = await merchant.action('list_banks', { page: 9 });
      expect(empty.body.data).toMatchObject({ current_page: 9, from: null, to: null, data: [] });
    });

    it('validates page and per_page', async () => {
      const response = await merchant.action('list_banks', { page: 'x', per_page: 500 });
      expect(response.body).toEqual({
        ...BAD_REQUEST,
        error: { page: [MESSAGES.integer('page')], per_page: [MESSAGES.maxValue('per_page', 100)] },
      });
    });
  });

  describe('generate_pre_order_token / pay_by_token', () => {
    it('pays a preorder once: seller credited, commission to the platform; the second payment is refused', async () => {
      const seller = await createUser(merchant);
      const payer = await createUser(merchant);
      await fundUser(platform, payer.id, 5_000n);
      const created = await merchant.action('generate_pre_order_token', {
        out_trade_no: 'ORDER-1', seller_code: seller.wallet_ref, description: 'Coffee', amount: 20.05, currency: 'USD',
        commission_rate: 2.5, redirect_url: 'https://shop.example/done', call_back_url: 'https://shop.example/cb',
      });
      expect(created.status).toBe(200);
      const { pre_order_token, pre_order_url } = created.body.data;
      expect(pre_order_url).toBe(`${platform.config.PUBLIC_BASE_URL}/pre-order/${pre_order_token}`);
      const row = await platform.deps.database('preorders').where({ token: pre_order_token }).first();
      expect(row).toMatchObject({ redirect_url: 'https://shop.example/done', call_back_url: 'https://shop.example/cb', commission_rate: '2.5' });

      const revenue = await platform.deps.ledger.platformAccount('fee_revenue', 'USD');
      const paid = await merchant.action('pay_by_token', { pre_order_token, user_id: payer.id });
      expect(paid.status).toBe(200);
      expect(paid.body.data).toEqual({ reference: expect.stringMatching(/^PAY/) });
      // 2.5 % of 20.05 = 0.50125 → 0.50 (half-up)
      expect((await balances(platform, payer.id)).posted).toBe(5_000n - 2005n);
      expect((await balances(platform, seller.id)).posted).toBe(2005n - 50n);
      expect((await platform.deps.ledger.getAccount(revenue.id)).posted_units - revenue.posted_units).toBe(50n);
      const paidRow = await platform.deps.database('preorders').where({ token: pre_order_token }).first();
      expect(paidRow).toMatchObject({ status: 'paid', paid_by_user_id: String(payer.id), payment_reference: paid.body.data.reference });

      const again = await merchant.action('pay_by_token', { pre_order_token, user_id: payer.id });
      expect(again.body).toEqual({ ...BAD_REQUEST, error: { pre_order_token: ['The preorder has already been paid.'] } });
      expect((await balances(platform, payer.id)).posted).toBe(5_000n - 2005n);
    });

    it('two simultaneous payments of one preorder: exactly one succeeds', async () => {
      const seller = await createUser(merchant);
      const payer = await createUser(merchant);
      await fundUser(platform, payer.id, 1_000n);
      const created = await merchant.action('generate_pre_order_token', {
        out_trade_no: 'ORDER-RACE', seller_code: seller.wallet_ref, description: 'x', amount: 2, currency: 'USD',
      });
      const token = created.body.data.pre_order_token;
      const answers = await Promise.all([
        merchant.action('pay_by_token', { pre_order_token: token, user_id: payer.id }),
        merchant.action('pay_by_token', { pre_order_token: token, user_id: payer.id }),
      ]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400]);
      expect(answers.find((answer) => answer.status === 400)!.body.error).toEqual({ pre_order_token: ['The preorder has already been paid.'] });
      expect((await balances(platform, payer.id)).posted).toBe(800n);
    });

    it('pays a preorder whose seller is the merchant itself', async () => {
      const payer = await createUser(merchant);
      await fundUser(platform, payer.id, 1_000n);
      const created = await merchant.action('generate_pre_order_token', {
        out_trade_no: 'ORDER-M', seller_code: merchant.options.merchantId, description: 'Tea', amount: 3, currency: 'USD',
      });
      const paid = await merchant.action('pay_by_token', { pre_order_token: created.body.data.pre_order_token, user_id: payer.id });
      expect(paid.status).toBe(200);
      const login = await merchant.login();
      expect(login.body.data.user.balance).toBe(3);
    });

    it('refuses a duplicate out_trade_no, an unknown seller and missing fields', async () => {
      const seller = await createUser(merchant);
      const fields = { out_trade_no: 'ORDER-DUP', seller_code: seller.wallet_ref, description: 'x', amount: 1, currency: 'USD' };
      expect((await merchant.action('generate_pre_order_token', fields)).status).toBe(200);
      const duplicate = await merchant.action('generate_pre_order_token', fields);
      expect(duplicate.body).toEqual({ ...BAD_REQUEST, error: { out_trade_no: ['The out_trade_no has already been taken.'] } });
      const unknownSeller = await merchant.action('generate_pre_order_token', { ...fields, out_trade_no: 'ORDER-X', seller_code: 'WRNOPE' });
      expect(unknownSeller.body).toEqual({ ...BAD_REQUEST, error: { seller_code: [MESSAGES.userNotFound('seller_code')] } });
      const missing = await merchant.action('generate_pre_order_token', { amount: 0 });
      expect(missing.body.error).toEqual({
        currency: [MESSAGES.required('currency')],
        out_trade_no: [MESSAGES.required('out_trade_no')],
        seller_code: [MESSAGES.required('seller_code')],
        description: [MESSAGES.required('description')],
        amount: ['The amount must be greater than 0.'],
      });
    });

    it("refuses insufficient funds, another merchant's preorder and a missing payer", async () => {
      const seller = await createUser(merchant);
      const payer = await createUser(merchant);
      const created = await merchant.action('generate_pre_order_token', {
        out_trade_no: 'ORDER-POOR', seller_code: seller.wallet_ref, description: 'x', amount: 1, currency: 'USD',
      });
      const token = created.body.data.pre_order_token;
      const poor = await merchant.action('pay_by_token', { pre_order_token: token, user_id: payer.id });
      expect(poor.body).toEqual({ ...BAD_REQUEST, error: { amount: [MESSAGES.insufficientFunds] } });
      const foreignPayer = await createUser(other);
      const foreign = await other.action('pay_by_token', { pre_order_token: token, user_id: foreignPayer.id });
      expect(foreign.body).toEqual({ ...BAD_REQUEST, error: { pre_order_token: ['The selected pre_order_token is invalid.'] } });
      const missing = await merchant.action('pay_by_token', {});
      expect(missing.body.error).toEqual({ pre_order_token: [MESSAGES.required('pre_order_token')] });
    });

    it("without user_id (the interface's request) the merchant's own wallet pays; never its own preorder, never more than it holds", async () => {
      const shop = await newMerchant(platform, 'Paying Shop');
      expect((await shop.login()).status).toBe(200);
      const seller = await createUser(shop);
      const order = async (fields: Record<string, unknown>) =>
        (await shop.action('generate_pre_order_token', { out_trade_no: `ORDER-${Math.random()}`, description: 'x', currency: 'USD', ...fields })).body.data.pre_order_token;
      const userOrder = await order({ seller_code: seller.wallet_ref, amount: 4, commission_rate: 10 });
      expect((await shop.action('pay_by_token', { pre_order_token: userOrder })).body).toEqual({ ...BAD_REQUEST, error: { amount: [MESSAGES.insufficientFunds] } });

      const wallet = (await platform.deps.ledger.findAccount({ owner_type: 'merchant', owner_id: shop.options.merchantId, currency: 'USD', kind: 'wallet' }))!;
      const settlement = await platform.deps.ledger.platformAccount('settlement', 'USD');
      await platform.deps.ledger.transfer({
        idempotency_key: `test-fund-merchant-${shop.options.merchantId}`,
        description: 'test funding',
        postings: [{ account_id: settlement.id, amount_units: -1_000n }, { account_id: wallet.id, amount_units: 1_000n }],
      });
      const paid = await shop.action('pay_by_token', { pre_order_token: userOrder });
      expect(paid.body).toEqual({ success: true, code: 200, message: 'OK', data: { reference: expect.stringMatching(/^PAY/) } });
      expect((await platform.deps.ledger.getAccount(wallet.id)).posted_units).toBe(600n);
      expect((await balances(platform, seller.id)).posted).toBe(360n);
      const row = await platform.deps.database('preorders').where({ token: userOrder }).first();
      expect(row).toMatchObject({ status: 'paid', paid_by_user_id: null, payment_reference: paid.body.data.reference });

      const ownOrder = await order({ seller_code: shop.options.merchantId, amount: 1 });
      const own = await shop.action('pay_by_token', { pre_order_token: ownOrder });
      expect(own.body).toEqual({ ...BAD_REQUEST, error: { pre_order_token: ['The payer must differ from the seller.'] } });
      expect((await platform.deps.ledger.getAccount(wallet.id)).posted_units).toBe(600n);
    });
  });

  describe('block_money / cancel_block_money', () => {
    it('holds money (available drops, balance stays) and releases it once', async () => {
      const user = await createUser(merchant);
      await fundUser(platform, user.id, 1_000n);
      const blocked = await merchant.action('block_money', { user_token: user.user_token, amount: 4, currency: 'USD', reference: 'deposit for bike' });
      expect(blocked.status).toBe(200);
      const ref = blocked.body.data.transaction_ref;
      expect(ref).toMatch(/^BLK[A-Z0-9]{18}$/);
      expect(await balances(platform, user.id)).toEqual({ posted: 1_000n, available: 600n });

      const cancel = await merchant.action('cancel_block_money', { transaction_ref: ref });
      expect(cancel.status).toBe(200);
      expect(cancel.body).toEqual({ success: true, code: 200, message: 'OK', data: [] });
      expect(await balances(platform, user.id)).toEqual({ posted: 1_000n, available: 1_000n });

      const twice = await merchant.action('cancel_block_money', { transaction_ref: ref });
      expect(twice.body).toEqual({ ...BAD_REQUEST, error: { transaction_ref: ['The blocked money has already been cancelled.'] } });
    });

    it('refuses to block more than the available balance', async () => {
      const user = await createUser(merchant);
      await fundUser(platform, user.id, 300n);
      const response = await merchant.action('block_money', { user_token: user.user_token, amount: 3.01, currency: 'USD', reference: 'r' });
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { amount: [MESSAGES.insufficientFunds] } });
    });

    it("answers an unknown user_token, another merchant's user and another merchant's transaction_ref as unknown", async () => {
      const unknown = await merchant.action('block_money', { user_token: 'ut_nope', amount: 1, currency: 'USD', reference: 'r' });
      expect(unknown.body).toEqual({ ...BAD_REQUEST, error: { user_token: [MESSAGES.userNotFound('user_token')] } });
      const foreign = await createUser(other);
      await fundUser(platform, foreign.id, 500n);
      const stolen = await merchant.action('block_money', { user_token: foreign.user_token, amount: 1, currency: 'USD', reference: 'r' });
      expect(stolen.body).toEqual({ ...BAD_REQUEST, error: { user_token: [MESSAGES.userNotFound('user_token')] } });
      const theirs = await other.action('block_money', { user_token: foreign.user_token, amount: 1, currency: 'USD', reference: 'r' });
      expect(theirs.status).toBe(200);
      const cancelTheirs = await merchant.action('cancel_block_money', { transaction_ref: theirs.body.data.transaction_ref });
      expect(cancelTheirs.body).toEqual({ ...BAD_REQUEST, error: { transaction_ref: ['The selected transaction_ref is invalid.'] } });
      expect((await other.action('cancel_block_money', { transaction_ref: theirs.body.data.transaction_ref })).status).toBe(200);
    });

    it('reports missing and malformed fields', async () => {
      const response = await merchant.action('block_money', { amount: -1, currency: 'USD' });
      expect(response.body).toEqual({
        ...BAD_REQUEST,
        error: {
          user_token: [MESSAGES.required('user_token')],
          amount: ['The amount must not be negative.'],
          reference: [MESSAGES.required('reference')],
        },
      });
      const cancel = await merchant.action('cancel_block_money', { transaction_ref: 7 });
      expect(cancel.body).toEqual({ ...BAD_REQUEST, error: { transaction_ref: [MESSAGES.string('transaction_ref')] } });
    });
  });
});

describe('Area C unexpected fault', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform();
  });
  afterAll(() => platform.stop());

  it('answers the 500 envelope with no internal detail and echoes the request id', async () => {
    const merchant = await newMerchant(platform, 'Broken Shop');
    expect((await merchant.login()).status).toBe(200);
    await platform.deps.database.schema.renameTable('banks', 'banks_gone');
    try {
      const response = await merchant.action('list_banks', {}, { headers: { 'x-request-id': 'fault-1' } });
      expect(response.status).toBe(500);
      expect(response.body).toEqual({
        success: false, code: 500, message: 'Internal Server Error', error: { server: ['An unexpected error occurred. Please try again later.'] },
      });
      expect(response.text).not.toContain('banks');
    } finally {
      await platform.deps.database.schema.renameTable('banks_gone', 'banks');
    }
  });
});

async function signedBody(client: MerchantClient, body: Record<string, unknown>) {
  const { signRequestParameters } = await import('../../src/crypto/rsa2');
  return signRequestParameters(body, client.options.privateKeyPem);
}

describe('Area C session expiry', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ env: { MERCHANT_SESSION_TTL_SECONDS: '1' } });
  });
  afterAll(() => platform.stop());

  it('answers 401 once MERCHANT_SESSION_TTL_SECONDS have passed', async () => {
    const merchant = await newMerchant(platform, 'Short Session');
    expect((await merchant.login()).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const response = await merchant.action('list_fees');
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ success: false, code: 401, message: 'Unauthorized', error: { token: ['The token has expired.'] } });
  });
});
