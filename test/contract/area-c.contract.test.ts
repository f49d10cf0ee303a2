/**
 * Area C as the interface documents it (payment-services-interface.md "Area C", "Authentication / Area C",
 * "Errors / Area C"; platform decisions §2, §7 and §8), requests built from those documents only: the merchant
 * headers, the session token as `Authorization: Bearer`, and bodies holding exactly the documented fields, signed with
 * the §7 canonical query string and encrypted fields under the `platform_public_key` the merchant was given. No
 * `timestamp`, `nonce`, `request_id` or `Idempotency-Key`. Every service of the interface's table is called as
 * documented and answers the documented envelope; the documented errors answer theirs. Changing one of these tests
 * is a breaking change (docs/compatibility.md).
 *
 * The merchant's users are funded the documented way: a local card deposit confirmed with the sandbox OTP
 * (`SANDBOX_OTP`, default 123456).
 */
import { randomBytes, randomInt } from 'node:crypto';
import { freePort } from '../../src/net';
import { startMerchantReceiver, type MerchantReceiver } from '../support/merchant-receiver';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { AreaCMerchant, send, type MerchantCredentials, type Reply } from './support/clients';
import { decodeResult, encryptField, firstForm, hiddenResult, scanQr } from './support/merchant-side';
import { expectLedgerBalanced, registerMerchant } from './support/onboarding';

const SANDBOX_OTP = '123456';
const APPROVED_CARD = '4242424242424242';
const DECLINED_CARD = '4000000000000002';
const LOCAL_CARD = '6200000000000005';
const DATE_TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

const phone = () => `012${randomInt(100_000, 999_999)}`;
const orderNo = () => `order-${randomBytes(6).toString('hex')}`;

/** The success envelope: exactly success, code, message, data; `data` returned. */
function expectOk(reply: Reply): any { // eslint-disable-line @typescript-eslint/no-explicit-any
  if (reply.status !== 200) throw new Error(`expected 200, got ${reply.status}: ${reply.text}`);
  expect(Object.keys(reply.json).sort()).toEqual(['code', 'data', 'message', 'success']);
  expect(reply.json).toMatchObject({ success: true, code: 200, message: 'OK' });
  return reply.json.data;
}

/** The failure envelope: exactly success, code, message, error; `error` maps fields to arrays of message strings. */
function expectFailure(reply: Reply, status: 400 | 401, fields?: string[]): Record<string, string[]> {
  expect(reply.status).toBe(status);
  expect(Object.keys(reply.json).sort()).toEqual(['code', 'error', 'message', 'success']);
  expect(reply.json).toMatchObject({ success: false, code: status, message: status === 400 ? 'Bad Request' : 'Unauthorized' });
  const error = reply.json.error as Record<string, string[]>;
  expect(Object.keys(error).length).toBeGreaterThan(0);
  for (const messages of Object.values(error)) {
    expect(messages.length).toBeGreaterThan(0);
    for (const message of messages) expect(typeof message).toBe('string');
  }
  if (fields) expect(Object.keys(error).sort()).toEqual([...fields].sort());
  return error;
}

const USER_RECORD_FIELDS = ['id', 'email', 'avatar', 'created_at', 'updated_at', 'phone_number', 'gender', 'last_name', 'full_name', 'address', 'birthday', 'currency'];

describe('Area C contract', () => {
  let platform: TestPlatform;
  let credentials: MerchantCredentials;
  let merchant: AreaCMerchant;
  let callbacks: MerchantReceiver;
  /** The merchant's own wallet_ref (login's user). */
  let merchantWalletRef: string;
  let bankId: number;
  const users: Record<'a' | 'b', { id: number; phone_number: string; email: string; user_token: string; wallet_ref: string }> = {} as never;

  const encrypt = (plaintext: string) => encryptField(credentials.platform_public_key, plaintext);

  async function createUser(fields: Record<string, unknown>) {
    return expectOk(await merchant.action('create_user', { first_name: 'Sokha', last_name: 'Chan', address: 'Phnom Penh', currency: 'USD', ...fields }));
  }

  /** A local card deposit of `amount` USD confirmed with the OTP (credits `userId`, or pays the preorder). */
  async function depositByLocalCard(cardToken: string, userId: number, amount: number, preOrderToken?: string) {
    const data = expectOk(
      await merchant.action('deposit_by_local_card', { token: cardToken, amount, currency: 'USD', ...(preOrderToken ? { pre_order_token: preOrderToken } : {}) }),
    );
    expect(data).toMatchObject({ reference: expect.any(String), token: expect.any(String), token_type: 1, need_verify_trx: true });
    expect(data).toHaveProperty('html_confirm_payment');
    expect(expectOk(await merchant.action('confirm_payments', { user_id: userId, token: data.token, password: SANDBOX_OTP }))).toEqual([]);
    return data;
  }

  async function preorder(fields: Record<string, unknown>) {
    const data = expectOk(
      await merchant.action('generate_pre_order_token', { out_trade_no: orderNo(), description: 'Two coffees', currency: 'USD', ...fields }),
    );
    expect(data).toMatchObject({ pre_order_token: expect.any(String), pre_order_url: expect.stringMatching(/^https?:\/\//) });
    return data as { pre_order_token: string; pre_order_url: string };
  }

  beforeAll(async () => {
    const port = await freePort();
    platform = await startTestPlatform({ env: { HTTP_PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` } });
    callbacks = await startMerchantReceiver();
    credentials = await registerMerchant(platform, callbacks.url);
    callbacks.configure({ hmac_secret: credentials.hmac_secret, signature_header: credentials.signature_header });
    merchant = new AreaCMerchant(platform.facadeUrl, credentials);
  });
  afterAll(async () => {
    await expectLedgerBalanced(platform);
    await platform.stop();
    await callbacks.close();
  });

  describe('C1 POST /login', () => {
    it('opens a session for the documented body (user_name, password, sign_type, sign)', async () => {
      const reply = await merchant.login();
      const data = expectOk(reply);
      expect(reply.headers.get('x-request-id')).toBeTruthy();
      expect(Object.keys(data).sort()).toEqual(['token', 'user']);
      expect(typeof data.token).toBe('string');
      expect(data.user).toMatchObject({
        id: expect.any(Number),
        avatar: expect.any(String),
        fk_soc: expect.any(Number),
        full_name: expect.any(String),
        balance: expect.any(Number),
        wallet_ref: expect.any(String),
        wallet_id: expect.any(Number),
        currency: expect.any(String),
      });
      expect(Number.isInteger(data.user.id) && Number.isInteger(data.user.fk_soc) && Number.isInteger(data.user.wallet_id)).toBe(true);
      expect(data.user.time_zone === null || typeof data.user.time_zone === 'string').toBe(true);
      merchantWalletRef = data.user.wallet_ref;
    });

    it('opens a session again for the same documented body (a client logging in again)', async () => {
      const again = new AreaCMerchant(platform.facadeUrl, credentials);
      expectOk(await again.login());
      expectOk(await again.action('list_fees'));
      expectOk(await merchant.action('list_fees'));
    });

    it('answers wrong credentials 400 with error.user_name_password', async () => {
      expectFailure(await new AreaCMerchant(platform.facadeUrl, credentials).login({ user_name: credentials.api_user_name, password: 'wrong' }), 400, ['user_name_password']);
      expectFailure(await new AreaCMerchant(platform.facadeUrl, credentials).login({ user_name: 'nobody', password: credentials.api_password }), 400, ['user_name_password']);
    });
  });

  describe('C2 POST /do-action', () => {
    it('answers a call without the session token 401 on token', async () => {
      expectFailure(await new AreaCMerchant(platform.facadeUrl, credentials).action('list_fees'), 401, ['token']);
    });

    it('reports an unknown service under the field service', async () => {
      expectFailure(await merchant.action('no_such_service'), 400, ['service']);
    });

    it('list_fees: the FEE object and the exchange rates', async () => {
      const data = expectOk(await merchant.action('list_fees'));
      expect(typeof data.FEE).toBe('object');
      const rates = data.EXCHANGE_RATE ?? data.FEE.EXCHANGE_RATE;
      expect(rates).toMatchObject({ USD_KHR: expect.any(Number), KHR_USD: expect.any(Number) });
    });

    it('list_banks: a page of bank entries, 20 per page unless per_page says otherwise', async () => {
      const data = expectOk(await merchant.action('list_banks'));
      expect(Object.keys(data)).toEqual(expect.arrayContaining(['current_page', 'data', 'from', 'last_page', 'per_page', 'to', 'total']));
      expect(data).toMatchObject({ current_page: 1, per_page: 20, from: 1 });
      expect(data.data.length).toBeGreaterThan(0);
      for (const bank of data.data) {
        expect(bank).toMatchObject({ id: expect.any(Number), name: expect.any(String), region: expect.any(String), city: expect.any(String), logo: expect.any(String) });
      }
      bankId = data.data[0].id;
      const second = expectOk(await merchant.action('list_banks', { page: 2, per_page: 5 }));
      expect(second).toMatchObject({ current_page: 2, per_page: 5, from: 6 });
    });

    it('create_user: the user record, with a phone number or an email', async () => {
      const phoneNumber = phone();
      const a = await createUser({ phone_number: phoneNumber, birthday: '1990-04-17', gender: 'm', description: 'first customer' });
      expect(Object.keys(a)).toEqual(expect.arrayContaining(USER_RECORD_FIELDS));
      expect(a).toMatchObject({ id: expect.any(Number), last_name: 'Chan', address: 'Phnom Penh', birthday: '1990-04-17', gender: 'm', currency: 'USD' });
      expect(a.created_at).toMatch(DATE_TIME);
      expect(a.updated_at).toMatch(DATE_TIME);
      expect(a.email).toBeNull();
      const email = `${randomBytes(4).toString('hex')}@customer.example`;
      const b = await createUser({ email, first_name: 'Dara' });
      expect(b).toMatchObject({ email, phone_number: null });
      users.a = { ...a, phone_number: phoneNumber };
      users.b = { ...b, email };
    });

    it('create_user: a duplicate phone number under phone_number, a duplicate email under email', async () => {
      const fields = { first_name: 'Sokha', last_name: 'Chan', address: 'Phnom Penh', currency: 'USD' };
      expectFailure(await merchant.action('create_user', { ...fields, phone_number: users.a.phone_number }), 400, ['phone_number']);
      expectFailure(await merchant.action('create_user', { ...fields, email: users.b.email }), 400, ['email']);
      expectFailure(await merchant.action('create_user', fields), 400);
      expectFailure(await merchant.action('create_user', { phone_number: phone() }), 400);
    });

    it('update_user: the updated user record', async () => {
      const data = expectOk(
        await merchant.action('update_user', { phone_number: users.a.phone_number, first_name: 'Sokha', last_name: 'Chann', address: 'Siem Reap', currency: 'USD' }),
      );
      expect(Object.keys(data)).toEqual(expect.arrayContaining(USER_RECORD_FIELDS));
      expect(data).toMatchObject({ id: users.a.id, last_name: 'Chann', address: 'Siem Reap', currency: 'USD' });
      expectFailure(await merchant.action('update_user', { phone_number: users.a.phone_number }), 400);
    });

    let localCard: string;
    it('tokenize_local_card: a token', async () => {
      const data = expectOk(
        await merchant.action('tokenize_local_card', { user_id: users.a.id, holder_name: encrypt('SOKHA CHAN'), bank_id: String(bankId), bank_code: encrypt(LOCAL_CARD) }),
      );
      expect(data).toMatchObject({ token: expect.any(String) });
      localCard = data.token;
    });

    it('deposit_by_local_card and confirm_payments: the deposit, then an empty array', async () => {
      await depositByLocalCard(localCard, users.a.id, 50);
    });

    it('transfer: a reference, with and without a fee', async () => {
      const plain = expectOk(await merchant.action('transfer', { from_user_id: String(users.a.id), to_user_id: String(users.b.id), amount: 10, currency: 'USD' }));
      expect(plain).toEqual({ reference: expect.any(String) });
      const withFee = expectOk(
        await merchant.action('transfer', { from_user_id: String(users.a.id), to_user_id: String(users.b.id), amount: 5.25, currency: 'USD', fees_amount: 0.5, fees_currency: 'USD' }),
      );
      expect(withFee).toEqual({ reference: expect.any(String) });
      expectFailure(
        await merchant.action('transfer', { from_user_id: String(users.a.id), to_user_id: String(users.b.id), amount: 1_000_000, currency: 'USD' }),
        400,
      );
      expectFailure(await merchant.action('transfer', { from_user_id: String(users.a.id), to_user_id: String(users.b.id), amount: 1, currency: 'USD', fees_amount: 0.1 }), 400);
    });

    it("answers another merchant's user as an unknown one (decisions §7)", async () => {
      const other = new AreaCMerchant(platform.facadeUrl, await registerMerchant(platform, callbacks.url));
      expectOk(await other.login());
      const stranger = expectOk(await other.action('create_user', { phone_number: phone(), first_name: 'Bopha', last_name: 'Sok', address: 'Kampot', currency: 'USD' }));
      const reply = await merchant.action('transfer', { from_user_id: String(users.a.id), to_user_id: String(stranger.id), amount: 1, currency: 'USD' });
      expect(Object.keys(expectFailure(reply, 400))).toEqual(['to_user_id']);
      const unknown = await merchant.action('transfer', { from_user_id: String(users.a.id), to_user_id: '999999999', amount: 1, currency: 'USD' });
      expect(unknown.json.error).toEqual(reply.json.error);
    });

    it('block_money and cancel_block_money: a transaction_ref, then an empty array', async () => {
      const blocked = expectOk(await merchant.action('block_money', { user_token: users.a.user_token, amount: 3, currency: 'USD', reference: 'Deposit for order 7' }));
      expect(blocked).toEqual({ transaction_ref: expect.any(String) });
      expect(expectOk(await merchant.action('cancel_block_money', { transaction_ref: blocked.transaction_ref }))).toEqual([]);
    });

    it('generate_pre_order_token, and pay_by_token with only pre_order_token', async () => {
      // The merchant's wallet receives a paid preorder of its own (a deposit), then pays a user's preorder by token.
      const own = await preorder({ seller_code: merchantWalletRef, amount: 20, call_back_url: callbacks.url });
      await depositByLocalCard(localCard, users.a.id, 20, own.pre_order_token);
      const users_b = await preorder({ seller_code: users.b.wallet_ref, amount: 4, commission_rate: 2.5 });
      const paid = expectOk(await merchant.action('pay_by_token', { pre_order_token: users_b.pre_order_token }));
      expect(paid).toEqual({ reference: expect.any(String) });
    });

    it('tokenize_bank_account, its QR activation, deposit_by_bank_account and confirm_payments', async () => {
      const data = expectOk(
        await merchant.action('tokenize_bank_account', {
          user_id: users.a.id,
          holder_name: encrypt('SOKHA CHAN'),
          bank_id: bankId,
          bank_number: encrypt('001234567890'),
          call_back: callbacks.url,
        }),
      );
      expect(data).toMatchObject({ token: expect.any(String), bank_number: '7890', qr_image: expect.any(String), need_verify: expect.any(Boolean) });
      if (data.need_verify && data.qr_image) {
        const image = await fetch(data.qr_image);
        expect(image.status).toBe(200);
        const activation = scanQr(Buffer.from(await image.arrayBuffer()));
        const page = await send(activation, { method: 'GET' });
        expect(page.status).toBe(200);
        const form = firstForm(page.text);
        const activated = await fetch(new URL(form.action, activation), { method: 'POST', body: form.fields });
        expect(activated.status).toBe(200);
      }
      const deposit = expectOk(await merchant.action('deposit_by_bank_account', { token: data.token, amount: 7, currency: 'USD', user_id: users.a.id }));
      expect(deposit).toMatchObject({ reference: expect.any(String), token: expect.any(String), token_type: expect.any(Number), need_verify_trx: expect.any(Boolean) });
      if (deposit.need_verify_trx) {
        expect(expectOk(await merchant.action('confirm_payments', { user_id: users.a.id, token: deposit.token, password: SANDBOX_OTP }))).toEqual([]);
      }
    });

    let visaMaster: string;
    it('tokenize_visa_master: a token', async () => {
      const sourceOfFunds = { type: 'CARD', provided: { card: { number: APPROVED_CARD, securityCode: '123', expiry: { month: '12', year: '2039' } } } };
      const data = expectOk(
        await merchant.action('tokenize_visa_master', { user_id: users.b.id, sourceOfFunds: encrypt(JSON.stringify(sourceOfFunds)), holder_name: encrypt('DARA CHAN') }),
      );
      expect(data).toMatchObject({ token: expect.any(String) });
      visaMaster = data.token;
    });

    it('answers a field that does not decrypt, and a card past its expiry, 400 on that field (decisions §7)', async () => {
      const card = (year: string) => encrypt(JSON.stringify({ type: 'CARD', provided: { card: { number: APPROVED_CARD, securityCode: '123', expiry: { month: '01', year } } } }));
      const garbage = await merchant.action('tokenize_visa_master', { user_id: users.b.id, sourceOfFunds: card('2039'), holder_name: Buffer.from('not a ciphertext').toString('base64') });
      expectFailure(garbage, 400, ['holder_name']);
      const expired = await merchant.action('tokenize_visa_master', { user_id: users.b.id, sourceOfFunds: card('2020'), holder_name: encrypt('DARA CHAN') });
      expectFailure(expired, 400, ['sourceOfFunds']);
    });

    it('deposit_by_visa_master without a preorder: html_confirm_payment answers the hidden input result (mobile)', async () => {
      const deposit = expectOk(await merchant.action('deposit_by_visa_master', { security_code: encrypt('123'), token: visaMaster, amount: 6, currency: 'USD' }));
      expect(deposit).toMatchObject({ reference: expect.any(String), token: expect.any(String), token_type: expect.any(Number), need_verify_trx: expect.any(Boolean), html_confirm_payment: expect.any(String) });
      const form = firstForm(deposit.html_confirm_payment);
      const page = await fetch(form.action, { method: 'POST', body: form.fields, redirect: 'manual' });
      expect(page.status).toBe(200);
      const result = hiddenResult(await page.text());
      expect(result).toBeDefined();
      expect(decodeResult(result!)).toEqual({ success: true, code: 200, message: expect.any(String), data: { transaction_ref: expect.any(String) } });
    });

    it('deposit_by_visa_master with the declined test card: the result says success false (decisions §7)', async () => {
      const sourceOfFunds = { type: 'CARD', provided: { card: { number: DECLINED_CARD, securityCode: '123', expiry: { month: '12', year: '2039' } } } };
      const token = expectOk(
        await merchant.action('tokenize_visa_master', { user_id: users.b.id, sourceOfFunds: encrypt(JSON.stringify(sourceOfFunds)), holder_name: encrypt('DARA CHAN') }),
      ).token;
      const deposit = expectOk(await merchant.action('deposit_by_visa_master', { security_code: encrypt('123'), token, amount: 6, currency: 'USD' }));
      const form = firstForm(deposit.html_confirm_payment);
      const page = await fetch(form.action, { method: 'POST', body: form.fields, redirect: 'manual' });
      expect(decodeResult(hiddenResult(await page.text())!)).toMatchObject({ success: false });
    });

    it('deposit_by_visa_master for a preorder with redirect_url: the payer is redirected with result (web)', async () => {
      const order = await preorder({ seller_code: merchantWalletRef, amount: 8, redirect_url: 'https://shop.example/paid?order=9' });
      const deposit = expectOk(
        await merchant.action('deposit_by_visa_master', { security_code: encrypt('123'), token: visaMaster, pre_order_token: order.pre_order_token, amount: 8, currency: 'USD' }),
      );
      const form = firstForm(deposit.html_confirm_payment);
      const answer = await fetch(form.action, { method: 'POST', body: form.fields, redirect: 'manual' });
      expect([301, 302, 303, 307]).toContain(answer.status);
      const location = new URL(answer.headers.get('location')!);
      expect(`${location.origin}${location.pathname}`).toBe('https://shop.example/paid');
      expect(decodeResult(location.searchParams.get('result')!)).toEqual({ success: true, code: 200, message: expect.any(String), data: { transaction_ref: expect.any(String) } });
    });
  });
});
