/**
 * Bad input in Areas A and C gets the area's documented error and changes nothing: NUL and other control
 * characters never reach PostgreSQL, an access token is accepted only as the exact bytes issued, numbers and ids
 * are strict, and hosted-page path parameters are checked before any lookup.
 */
import { createPartner } from '../../src/onboarding/partners';
import { normalizePhone } from '../../src/onboarding/users';
import { encryptField } from '../support/field-encryption';
import { onboardMerchantClient, type MerchantClient } from '../support/merchant-client';
import { generatePartnerKeys, PartnerClient } from '../support/partner-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const BAD_REQUEST = { success: false, code: 400, message: 'Bad Request' };

describe('bad input, Areas A and C', () => {
  let platform: TestPlatform;
  let partner: PartnerClient;
  let floatAccountId: string;
  let merchant: MerchantClient;
  let userId: number;

  beforeAll(async () => {
    platform = await startTestPlatform();
    const keys = generatePartnerKeys();
    const { partner: created, credentials } = await createPartner(platform.deps, { name: 'Bad Input Partner', public_key_pem: keys.publicKeyPem, float_units: 100_000n });
    floatAccountId = created.float_account_id;
    partner = new PartnerClient(platform.facadeUrl, credentials, keys, platform.deps.keys.publicKeyPem);
    expect((await partner.token()).status).toBe(200);
    merchant = (await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Bad Input Shop')).client;
    await merchant.login();
    const user = await merchant.action('create_user', { phone_number: '012400100', first_name: 'Sok', last_name: 'Dara', address: 'Phnom Penh', currency: 'USD' });
    userId = user.body.data.id as number;
  });
  afterAll(() => platform.stop());

  const available = async () => (await platform.deps.ledger.getAccount(floatAccountId)).available_units;

  describe('Area A access token', () => {
    const positions = ['prepend', 'after the header', 'after the payload', 'append'] as const;
    const bytes = ['A', '_', '!', '=', '~', '+', '/', '%', '.', '\u00e9'];
    const tamper = (token: string, position: (typeof positions)[number], byte: string): string => {
      const [header, payload, signature] = token.split('.');
      if (position === 'prepend') return `${byte}${token}`;
      if (position === 'after the header') return `${header}${byte}.${payload}.${signature}`;
      if (position === 'after the payload') return `${header}.${payload}${byte}.${signature}`;
      return `${token}${byte}`;
    };

    it('accepts the issued token byte for byte', async () => {
      const reply = await partner.gateway({ service: 'query.fundTransfer', out_trade_no: 'NEVERSENT' });
      expect(reply.body).toMatchObject({ error_code: 'NOTEXIST' });
    });

    it.each(positions)('refuses the token with one byte added (%s), whatever the byte', async (position) => {
      for (const byte of bytes) {
        const reply = await partner.gateway({ service: 'query.fundTransfer', out_trade_no: 'NEVERSENT' }, { token: tamper(partner.accessToken!, position, byte) });
        expect({ byte, status: reply.status, body: reply.body }).toEqual({
          byte,
          status: 401,
          body: { success: false, error_code: 'UNAUTHENTICATED', error_desc: 'Unauthorized' },
        });
      }
    });
  });

  describe('Area A fields', () => {
    it.each([
      ['a NUL in sender_name', { sender_name: 'Chan\u0000Vanna' }, 'sender_name must not contain control characters'],
      ['a line feed in sender_name', { sender_name: 'Chan\nVanna' }, 'sender_name must not contain control characters'],
      ['a signed receiver_id', { receiver_id: '-96123456' }, 'receiver_id must be a user id or a phone number'],
    ])('answers VALIDATIONERROR for %s and holds nothing', async (_name, overrides, desc) => {
      const before = await available();
      const reply = await partner.gateway({
        service: 'create.unified.fundTransfer',
        out_trade_no: `BAD${Date.now()}`,
        receiver_id: '012400100',
        sender_name: 'Chan Vanna',
        amount: 1,
        currency: 'USD',
        ...overrides,
      });
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ success: false, error_code: 'VALIDATIONERROR', error_desc: desc });
      expect(await available()).toBe(before);
    });
  });

  describe('Area C fields', () => {
    const countRows = async (table: string) => Number((await platform.deps.database(table).count('* as n').first())!.n);

    it('refuses control characters in text fields with the field named, and creates nothing', async () => {
      const users = await countRows('users');
      const reply = await merchant.action('create_user', { phone_number: '012400101', first_name: 'So\u0000k', last_name: 'Da\u0007ra', address: 'Phnom Penh', currency: 'USD' });
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual({
        ...BAD_REQUEST,
        error: { first_name: ['The first_name must not contain control characters.'], last_name: ['The last_name must not contain control characters.'] },
      });
      expect(await countRows('users')).toBe(users);
    });

    it('normalises a phone number only from its documented forms', async () => {
      expect(normalizePhone('-96123456')).toBeUndefined();
      expect(normalizePhone('96123456')).toBeUndefined();
      expect(normalizePhone('012 345 678-')).toBeUndefined();
      expect(normalizePhone('012345678')).toBe('+85512345678');
      const reply = await merchant.action('create_user', { phone_number: '-96123456', first_name: 'Sok', last_name: 'Dara', address: 'Phnom Penh', currency: 'USD' });
      expect(reply.status).toBe(400);
      expect(Object.keys(reply.body.error)).toEqual(['phone_number']);
    });

    it('refuses ids and page numbers with surrounding spaces', async () => {
      const transfer = await merchant.action('transfer', { from_user_id: ` ${userId}`, to_user_id: `${userId} `, amount: 1, currency: 'USD' });
      expect(transfer.status).toBe(400);
      expect(Object.keys(transfer.body.error).sort()).toEqual(['from_user_id', 'to_user_id']);
      const banks = await merchant.action('list_banks', { page: ' 1 ' });
      expect(banks.status).toBe(400);
      expect(Object.keys(banks.body.error)).toEqual(['page']);
    });

    it('refuses a signed bank_number and a NUL in the holder name, and vaults nothing', async () => {
      const key = platform.deps.keys.fieldEncryption.publicKeyPem;
      const instruments = await countRows('instruments');
      const signed = await merchant.action('tokenize_bank_account', {
        user_id: userId,
        holder_name: encryptField(key, 'SOK DARA'),
        bank_id: 1,
        bank_number: encryptField(key, '-12345678'),
        call_back: 'https://merchant.example/activated',
      });
      expect(signed.status).toBe(400);
      expect(Object.keys(signed.body.error)).toEqual(['bank_number']);
      const nul = await merchant.action('tokenize_bank_account', {
        user_id: userId,
        holder_name: encryptField(key, 'SOK\u0000DARA'),
        bank_id: 1,
        bank_number: encryptField(key, '000123456789'),
        call_back: 'https://merchant.example/activated',
      });
      expect(nul.status).toBe(400);
      expect(Object.keys(nul.body.error)).toEqual(['holder_name']);
      expect(await countRows('instruments')).toBe(instruments);
    });
  });

  describe('deep nesting', () => {
    const nested = (depth: number) => `{"service":"transfer","x":${'['.repeat(depth)}${']'.repeat(depth)}}`;

    it('answers a deeply nested Area A body with VALIDATIONERROR, not a fault', async () => {
      const reply = await partner.gateway({}, { rawBody: nested(5000) });
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ success: false, error_code: 'VALIDATIONERROR' });
    });

    it('answers a deeply nested Area C body with 400 on body, not a fault', async () => {
      const reply = await merchant.post('/do-action', {}, { raw: nested(5000) });
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual({ ...BAD_REQUEST, error: { body: ['The request body must be a JSON object.'] } });
    });
  });

  describe('hosted pages', () => {
    it.each(['/pre-order/abc%00def', '/pre-order/abc%00def/pay', '/visa-master/confirm/x%00y', '/instruments/bank-accounts/tok%00x/activation-qr.png'])(
      'answers an HTML 404 for the path parameter in %s',
      async (path) => {
        const method = path.endsWith('/pay') ? 'POST' : 'GET';
        const response = await fetch(`${platform.facadeUrl}${path}`, { method });
        expect(response.status).toBe(404);
        expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      },
    );
  });
});
