/**
 * Area C tokenization over HTTP (interface "Area C" tokenize_*; platform decisions §7;
 *docs/area-c.md): every service's success and documented failure, identical decryption errors for
 * every cause, tenant isolation, the bank-account QR activation with its call_back, and a check that no full card
 * or account number reaches the database or the logs (LOG_LEVEL debug). Real PostgreSQL, Temporal, RPC and façade.
 */
import { MESSAGES, renderFieldProblems } from '../../rest-facade/merchant/contract';
import { constants, generateKeyPairSync, publicEncrypt, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import jsQR from 'jsqr';
import { PNG } from 'pngjs';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { DomainError } from '../../src/errors';
import { activationCode } from '../../src/instruments/activation';
import { findInstrumentByToken, requireInstrument, revealCardNumber, vaultGuestCard } from '../../src/instruments/store';
import { encryptBlock, encryptField, modulusBytes, sourceOfFundsJson, type FieldPadding } from '../support/field-encryption';
import { activationPageUrl, tokenizeBankAccount, tokenizeLocalCard, tokenizeVisaMaster } from '../support/instruments';
import { MerchantClient, onboardMerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const BAD_REQUEST = { success: false, code: 400, message: 'Bad Request' };
const TOKEN_FORMAT = /^tok_[A-Za-z0-9_-]{32}$/;
const PADDINGS: FieldPadding[] = ['oaep-sha256', 'oaep-sha1', 'pkcs1'];

/** Every full number sent in this file, successful or not: none may appear in the database or the logs. */
const SECRET_NUMBERS = new Set<string>();
/** A service call whose field problems are read in the Area C contract's words (services answer codes). */
async function rendered<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof DomainError) throw Object.assign(error, { fields: renderFieldProblems(error.fields) });
    throw error;
  }
}

function secret(number: string): string {
  SECRET_NUMBERS.add(number);
  return number;
}

const VISA = secret('4242424242424242');
const LOCAL_CARD = secret('6200000000000005');
const ACCOUNT = secret('70019283746501');
const SECURITY_CODE = '9183';

interface ReceivedCallBack {
  headers: http.IncomingHttpHeaders;
  body: string;
}

async function newMerchant(platform: TestPlatform, name: string) {
  const { client, credentials } = await onboardMerchantClient(platform.deps, platform.facadeUrl, name);
  expect((await client.login()).status).toBe(200);
  return { client, credentials };
}

let phoneCounter = 20_000_000;
async function createUser(client: MerchantClient): Promise<number> {
  phoneCounter += 1;
  const response = await client.action('create_user', {
    phone_number: `012${String(phoneCounter).slice(-6)}`,
    first_name: 'Sok',
    last_name: 'Dara',
    address: 'Phnom Penh',
    currency: 'USD',
  });
  expect(response.status).toBe(200);
  return response.body.data.id as number;
}

describe('Area C tokenization', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let merchantHmacSecret: string;
  let other: MerchantClient;
  let userId: number;
  let secondUserId: number;
  let otherUserId: number;
  let bankId: number;
  let publicKey: string;
  const logLines: string[] = [];
  let callBackServer: http.Server;
  let callBackUrl: string;
  const received: ReceivedCallBack[] = [];

  const countInstruments = async () => Number((await platform.deps.database('instruments').count('* as count').first())!.count);

  beforeAll(async () => {
    platform = await startTestPlatform({
      env: { LOG_LEVEL: 'debug', WEBHOOK_TIMEOUT_SECONDS: '3' },
      logDestination: { write: (line: string) => void logLines.push(line) },
    });
    publicKey = platform.deps.keys.fieldEncryption.publicKeyPem;
    const first = await newMerchant(platform, 'Angkor Mart');
    merchant = first.client;
    merchantHmacSecret = first.credentials.hmac_secret;
    expect(first.credentials.field_encryption_public_key).toBe(publicKey);
    expect(first.credentials.platform_public_key).toBe(publicKey);
    expect(first.credentials.platform_public_key).not.toBe(platform.deps.keys.publicKeyPem);
    other = (await newMerchant(platform, 'Other Shop')).client;
    userId = await createUser(merchant);
    secondUserId = await createUser(merchant);
    otherUserId = await createUser(other);
    const banks = await merchant.action('list_banks', { per_page: 1 });
    bankId = banks.body.data.data[0].id;
    callBackServer = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        received.push({ headers: request.headers, body });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => callBackServer.listen(0, '127.0.0.1', resolve));
    callBackUrl = `http://127.0.0.1:${(callBackServer.address() as AddressInfo).port}/bank-account-activated`;
  });
  afterAll(async () => {
    await new Promise((resolve) => callBackServer?.close(resolve));
    await platform?.stop();
  });

  const localCardFields = (overrides: Record<string, unknown> = {}) => ({
    user_id: userId,
    holder_name: encryptField(publicKey, 'SOK DARA'),
    bank_id: String(bankId),
    bank_code: encryptField(publicKey, LOCAL_CARD),
    ...overrides,
  });
  const bankAccountFields = (overrides: Record<string, unknown> = {}) => ({
    user_id: userId,
    holder_name: encryptField(publicKey, 'SOK DARA'),
    bank_id: bankId,
    bank_number: encryptField(publicKey, ACCOUNT),
    call_back: callBackUrl,
    ...overrides,
  });
  const visaMasterFields = (card: Parameters<typeof sourceOfFundsJson>[0] = { number: VISA }, overrides: Record<string, unknown> = {}) => ({
    user_id: userId,
    holder_name: encryptField(publicKey, 'SOK DARA'),
    sourceOfFunds: encryptField(publicKey, sourceOfFundsJson({ securityCode: SECURITY_CODE, ...card })),
    ...overrides,
  });

  /** Ciphertexts of `plaintext` that must all fail with the same error: every cause the issue lists. */
  function undecryptable(plaintext: string): Array<[string, string]> {
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }) as string;
    const good = encryptField(publicKey, plaintext);
    return [
      ['not base64', `${plaintext}!`],
      ['under another key', encryptField(otherKey, plaintext)],
      ['with a padding not accepted (OAEP SHA-512)', publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha512' }, Buffer.from(plaintext)).toString('base64')],
      ['without padding', publicEncrypt({ key: publicKey, padding: constants.RSA_NO_PADDING }, Buffer.alloc(256, 3)).toString('base64')],
      ['truncated', Buffer.from(good, 'base64').subarray(0, 128).toString('base64')],
      ['an empty plaintext', encryptField(publicKey, '')],
    ];
  }

  describe('tokenize_local_card', () => {
    it.each(PADDINGS)('vaults the card (padding %s): token, brand, last 4; the number only encrypted', async (padding) => {
      const response = await merchant.action('tokenize_local_card', {
        ...localCardFields(),
        holder_name: encryptField(publicKey, 'សុខ ដារា', padding),
        bank_code: encryptField(publicKey, LOCAL_CARD, padding),
      });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ success: true, code: 200, message: 'OK', data: { token: expect.stringMatching(TOKEN_FORMAT) } });
      const row = await platform.deps.database('instruments').where({ token: response.body.data.token }).first();
      expect(row).toMatchObject({ kind: 'local_card', holder_name: 'សុខ ដារា', last4: '0005', brand: 'unionpay', status: 'active', expiry_month: null });
      expect(String(row.user_id)).toBe(String(userId));
      expect(Number(row.bank_id)).toBe(bankId);
      expect(row.number_encrypted).toMatch(/^v2\.k[0-9a-z]+\./);
      const instrument = (await findInstrumentByToken(platform.deps.database, merchant.options.merchantId, row.token))!;
      await expect(revealCardNumber(platform.deps, instrument)).resolves.toBe(LOCAL_CARD);
    });

    it('accepts bank_id as a JSON integer', async () => {
      const response = await merchant.action('tokenize_local_card', localCardFields({ bank_id: bankId }));
      expect(response.status).toBe(200);
    });

    it('answers every decryption failure of bank_code with the identical error, and stores nothing', async () => {
      const before = await countInstruments();
      const bodies = new Set<string>();
      for (const [, ciphertext] of undecryptable(LOCAL_CARD)) {
        const response = await merchant.action('tokenize_local_card', localCardFields({ bank_code: ciphertext }));
        expect(response.status).toBe(400);
        expect(response.body).toEqual({ ...BAD_REQUEST, error: { bank_code: ['The bank_code could not be decrypted.'] } });
        bodies.add(response.text);
      }
      expect(bodies.size).toBe(1);
      expect(await countInstruments()).toBe(before);
    });

    it('refuses an invalid card number (Luhn) under bank_code with the decryption error (no padding oracle)', async () => {
      const response = await merchant.action('tokenize_local_card', localCardFields({ bank_code: encryptField(publicKey, secret('6200000000000006')) }));
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { bank_code: ['The bank_code could not be decrypted.'] } });
    });

    it('refuses an unlisted or malformed bank_id', async () => {
      for (const value of ['999999', 'ABA', -1]) {
        const response = await merchant.action('tokenize_local_card', localCardFields({ bank_id: value }));
        expect(response.body).toEqual({ ...BAD_REQUEST, error: { bank_id: ['The selected bank_id is invalid.'] } });
      }
    });

    it('lists every failing field at once', async () => {
      const response = await merchant.action('tokenize_local_card', localCardFields({ holder_name: 'x', bank_id: '999999', bank_code: encryptField(publicKey, secret('1234567890123')) }));
      expect(response.body).toEqual({
        ...BAD_REQUEST,
        error: {
          holder_name: ['The holder_name could not be decrypted.'],
          bank_id: ['The selected bank_id is invalid.'],
          bank_code: ['The bank_code could not be decrypted.'],
        },
      });
    });

    it('reports missing fields under their names', async () => {
      const response = await merchant.action('tokenize_local_card', {});
      expect(response.body).toEqual({
        ...BAD_REQUEST,
        error: {
          user_id: [MESSAGES.required('user_id')],
          holder_name: [MESSAGES.required('holder_name')],
          bank_id: [MESSAGES.required('bank_id')],
          bank_code: [MESSAGES.required('bank_code')],
        },
      });
    });

    it("refuses another merchant's user exactly like an unknown user", async () => {
      const foreign = await merchant.action('tokenize_local_card', localCardFields({ user_id: otherUserId }));
      const unknown = await merchant.action('tokenize_local_card', localCardFields({ user_id: 987654321 }));
      expect(foreign.body).toEqual({ ...BAD_REQUEST, error: { user_id: ['The selected user_id is invalid.'] } });
      expect(unknown.text).toBe(foreign.text);
    });

    it('authenticates first: no session token → 401, bad signature → 400 sign', async () => {
      const noToken = await merchant.post('/do-action', { service: 'tokenize_local_card', ...localCardFields() }, { headers: { authorization: '' } });
      expect(noToken.status).toBe(401);
      expect(noToken.body.error).toEqual({ token: ['The token is required.'] });
      const badSign = await merchant.post('/do-action', { service: 'tokenize_local_card', ...localCardFields(), sign_type: 'RSA2', sign: 'AAAA' }, { sign: false });
      expect(badSign.status).toBe(400);
      expect(badSign.body.error).toEqual({ sign: ['invalid sign'] });
    });
  });

  describe('tokenize_visa_master', () => {
    it.each(PADDINGS)('vaults the card with brand and expiry (padding %s)', async (padding) => {
      const response = await merchant.action('tokenize_visa_master', {
        user_id: userId,
        holder_name: encryptField(publicKey, 'SOK DARA', padding),
        sourceOfFunds: encryptField(publicKey, sourceOfFundsJson({ number: VISA, securityCode: SECURITY_CODE, month: '7', year: '2039' }), padding),
      });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({ token: expect.stringMatching(TOKEN_FORMAT) });
      const row = await platform.deps.database('instruments').where({ token: response.body.data.token }).first();
      expect(row).toMatchObject({ kind: 'visa_master', last4: '4242', brand: 'visa', expiry_month: 7, expiry_year: 2039, status: 'active', bank_id: null });
      // The security code is never stored: no column other than the ciphertext holds it.
      for (const [column, value] of Object.entries(row)) {
        if (column !== 'number_encrypted') expect(String(value)).not.toContain(SECURITY_CODE);
      }
    });

    it('reads a 2-digit year as 20yy and accepts a mastercard', async () => {
      const token = await tokenizeVisaMaster(merchant, platform, userId, { number: secret('5555555555554444'), month: '12', year: '38' });
      const row = await platform.deps.database('instruments').where({ token }).first();
      expect(row).toMatchObject({ brand: 'mastercard', last4: '4444', expiry_month: 12, expiry_year: 2038 });
    });

    it('answers every decryption failure of sourceOfFunds with the identical error', async () => {
      const before = await countInstruments();
      for (const [name, ciphertext] of undecryptable(sourceOfFundsJson({ number: VISA }))) {
        const response = await merchant.action('tokenize_visa_master', visaMasterFields(undefined, { sourceOfFunds: ciphertext }));
        expect([name, response.body]).toEqual([name, { ...BAD_REQUEST, error: { sourceOfFunds: ['The sourceOfFunds could not be decrypted.'] } }]);
      }
      expect(await countInstruments()).toBe(before);
    });

    it('answers every decryption failure of holder_name with the identical error', async () => {
      for (const [name, ciphertext] of undecryptable('SOK DARA')) {
        const response = await merchant.action('tokenize_visa_master', visaMasterFields(undefined, { holder_name: ciphertext }));
        expect([name, response.body]).toEqual([name, { ...BAD_REQUEST, error: { holder_name: ['The holder_name could not be decrypted.'] } }]);
      }
    });

    it('refuses a past expiry with the decryption error (no padding oracle)', async () => {
      const lastMonth = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 1, 1));
      const response = await merchant.action(
        'tokenize_visa_master',
        visaMasterFields({ number: VISA, month: String(lastMonth.getUTCMonth() + 1), year: String(lastMonth.getUTCFullYear()) }),
      );
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { sourceOfFunds: ['The sourceOfFunds could not be decrypted.'] } });
    });

    it('accepts the current month (valid through its end)', async () => {
      const now = new Date();
      const response = await merchant.action('tokenize_visa_master', visaMasterFields({ number: VISA, month: String(now.getUTCMonth() + 1), year: String(now.getUTCFullYear()) }));
      expect(response.status).toBe(200);
    });

    it('refuses an invalid card number and a bad security code with the one decryption error', async () => {
      const response = await merchant.action('tokenize_visa_master', visaMasterFields({ number: secret('4242424242424241'), securityCode: '12' }));
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { sourceOfFunds: ['The sourceOfFunds could not be decrypted.'] } });
    });

    it('refuses a wrong shape (not JSON, type other than CARD, no provided.card, bad expiry) with the decryption error', async () => {
      const cases = [
        '4242424242424242',
        JSON.stringify({ type: 'BANK', provided: { card: { number: VISA, securityCode: '123', expiry: { month: '1', year: '39' } } } }),
        JSON.stringify({ type: 'CARD', provided: {} }),
        JSON.stringify({ type: 'CARD', provided: { card: { number: VISA, securityCode: '123', expiry: { month: '13', year: '39' } } } }),
        JSON.stringify({ type: 'CARD', provided: { card: { number: VISA, securityCode: '123' } } }),
      ];
      for (const plaintext of cases) {
        const response = await merchant.action('tokenize_visa_master', visaMasterFields(undefined, { sourceOfFunds: encryptField(publicKey, plaintext) }));
        expect(response.body).toEqual({ ...BAD_REQUEST, error: { sourceOfFunds: ['The sourceOfFunds could not be decrypted.'] } });
      }
    });

    it('is no padding oracle: PKCS#1 v1.5-conformant garbage and random bytes get byte-identical answers', async () => {
      // A Bleichenbacher-style probe: ciphertexts whose padding is valid (they decrypt, to bytes the field's check
      // refuses) against ciphertexts that are random numbers (their padding fails). Both must look the same.
      const wrongPlaintexts: Record<string, string[]> = {
        sourceOfFunds: ['{"type":"CARD"}', 'x', '4242424242424242'],
        holder_name: ['   ', ' \t '],
        bank_code: ['x', '4242424242424241'],
        bank_number: ['12345', 'acct'],
      };
      const random = () => Buffer.concat([Buffer.from([0]), randomBytes(255)]).toString('base64');
      const send = (field: string, ciphertext: string) =>
        field === 'bank_code'
          ? merchant.action('tokenize_local_card', localCardFields({ bank_code: ciphertext }))
          : field === 'bank_number'
            ? merchant.action('tokenize_bank_account', bankAccountFields({ bank_number: ciphertext }))
            : merchant.action('tokenize_visa_master', visaMasterFields(undefined, { [field]: ciphertext }));
      for (const [field, plaintexts] of Object.entries(wrongPlaintexts)) {
        const answers = new Set<string>();
        const ciphertexts = [...plaintexts.map((plaintext) => encryptField(publicKey, plaintext, 'pkcs1')), random(), random(), random()];
        for (const ciphertext of ciphertexts) {
          const response = await send(field, ciphertext);
          expect([field, response.status]).toEqual([field, 400]);
          answers.add(response.text);
        }
        expect([field, [...answers]]).toEqual([field, [JSON.stringify({ ...BAD_REQUEST, error: { [field]: [`The ${field} could not be decrypted.`] } })]]);
      }
    });

    it('refuses a sourceOfFunds sent as a plain JSON object (not encrypted)', async () => {
      const response = await merchant.action('tokenize_visa_master', visaMasterFields(undefined, { sourceOfFunds: { type: 'CARD' } }));
      expect(response.body).toEqual({ ...BAD_REQUEST, error: { sourceOfFunds: [MESSAGES.string('sourceOfFunds')] } });
    });
  });

  describe('tokenize_bank_account and its QR activation', () => {
    it('vaults the account pending activation and answers bank_number, qr_image, need_verify', async () => {
      const response = await merchant.action('tokenize_bank_account', bankAccountFields());
      expect(response.status).toBe(200);
      const { token } = response.body.data;
      expect(response.body.data).toEqual({
        token: expect.stringMatching(TOKEN_FORMAT),
        bank_number: '6501',
        qr_image: `${platform.config.PUBLIC_BASE_URL}${platform.config.MERCHANT_PREFIX}/instruments/bank-accounts/${token}/activation-qr.png`,
        need_verify: true,
      });
      const row = await platform.deps.database('instruments').where({ token }).first();
      expect(row).toMatchObject({ kind: 'bank_account', status: 'pending_activation', last4: '6501', brand: null, call_back_url: callBackUrl });
      await expect(rendered(requireInstrument(platform.deps.database, { merchantId: merchant.options.merchantId, token }))).rejects.toMatchObject({
        reason: 'INSTRUMENT_NOT_ACTIVATED',
        fields: { token: ['The bank account is not activated yet.'] },
      });
    });

    it('activation: scan the QR, open the page, press the button → active, call_back notified once', async () => {
      const account = await tokenizeBankAccount(merchant, platform, userId, { number: ACCOUNT, bankId, callBack: callBackUrl });
      const qrUrl = account.qr_image.replace(platform.config.PUBLIC_BASE_URL, platform.facadeUrl);
      const qr = await fetch(qrUrl);
      expect(qr.status).toBe(200);
      expect(qr.headers.get('content-type')).toBe('image/png');
      const png = PNG.sync.read(Buffer.from(await qr.arrayBuffer()));
      const scanned = jsQR(Uint8ClampedArray.from(png.data), png.width, png.height)!.data;
      const code = activationCode(platform.deps.keys.dataKey, account.token);
      expect(scanned).toBe(`${platform.config.PUBLIC_BASE_URL}${platform.config.MERCHANT_PREFIX}/instruments/bank-accounts/activate/${code}`);

      const pageUrl = scanned.replace(platform.config.PUBLIC_BASE_URL, platform.facadeUrl);
      expect(pageUrl).toBe(activationPageUrl(platform, account.token));
      const page = await fetch(pageUrl);
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain('<button type="submit">Activate account</button>');
      expect(html).toContain(`<form method="post" action="${scanned}">`);
      expect(html).toContain('6501');
      expect(html).not.toContain(ACCOUNT);

      const callBacksBefore = received.length;
      const activated = await fetch(pageUrl, { method: 'POST' });
      expect(activated.status).toBe(200);
      expect(await activated.text()).toContain('Your bank account is now activated.');
      const row = await platform.deps.database('instruments').where({ token: account.token }).first();
      expect(row.status).toBe('active');
      expect(row.activated_at).toBeInstanceOf(Date);
      await expect(
        requireInstrument(platform.deps.database, { merchantId: merchant.options.merchantId, token: account.token, userId: String(userId) }),
      ).resolves.toMatchObject({ kind: 'bank_account', status: 'active', last4: '6501' });

      await waitFor(() => received.length > callBacksBefore);
      const delivered = received[callBacksBefore]!;
      expect(JSON.parse(delivered.body)).toEqual({ event: 'bank_account.activated', token: account.token, bank_number: '6501', user_id: userId });
      expect(delivered.headers['x-signature']).toBe(hmacSha256Hex(merchantHmacSecret, delivered.body));

      // Once: a second press changes nothing and notifies nobody.
      const again = await fetch(pageUrl, { method: 'POST' });
      expect(again.status).toBe(200);
      expect(await again.text()).toContain('This bank account is already activated.');
      const pageAfter = await (await fetch(pageUrl)).text();
      expect(pageAfter).toContain('This bank account is already activated.');
      expect(pageAfter).not.toContain('<button');
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(received.length).toBe(callBacksBefore + 1);
    });

    it('activation succeeds even when the call_back cannot be reached (best effort, logged)', async () => {
      const account = await tokenizeBankAccount(merchant, platform, userId, { number: ACCOUNT, callBack: 'http://127.0.0.1:9/unreachable' });
      const response = await fetch(activationPageUrl(platform, account.token), { method: 'POST' });
      expect(response.status).toBe(200);
      expect((await platform.deps.database('instruments').where({ token: account.token }).first()).status).toBe('active');
      await waitFor(() => logLines.some((line) => line.includes('bank account activation call_back failed')));
    });

    it('answers 404 for an unknown activation code or QR token', async () => {
      const base = `${platform.facadeUrl}${platform.config.MERCHANT_PREFIX}/instruments/bank-accounts`;
      for (const url of [`${base}/activate/${'A'.repeat(43)}`, `${base}/activate/short`]) {
        const get = await fetch(url);
        expect(get.status).toBe(404);
        expect(await get.text()).toContain('This activation link is invalid.');
        expect((await fetch(url, { method: 'POST' })).status).toBe(404);
      }
      expect((await fetch(`${base}/tok_${'A'.repeat(32)}/activation-qr.png`)).status).toBe(404);
      // A card token has no activation QR.
      const cardToken = await tokenizeLocalCard(merchant, platform, userId, { number: LOCAL_CARD, bankId });
      expect((await fetch(`${base}/${cardToken}/activation-qr.png`)).status).toBe(404);
    });

    it('refuses a short account number (with the decryption error), a non-http call_back and an undecryptable bank_number', async () => {
      const short = await merchant.action('tokenize_bank_account', bankAccountFields({ bank_number: encryptField(publicKey, '12345'), call_back: 'ftp://merchant.example/x' }));
      expect(short.body).toEqual({
        ...BAD_REQUEST,
        error: { call_back: ['The call_back format is invalid.'], bank_number: ['The bank_number could not be decrypted.'] },
      });
      const missing = await merchant.action('tokenize_bank_account', bankAccountFields({ call_back: undefined }));
      expect(missing.body).toEqual({ ...BAD_REQUEST, error: { call_back: [MESSAGES.required('call_back')] } });
      for (const [, ciphertext] of undecryptable(ACCOUNT)) {
        const response = await merchant.action('tokenize_bank_account', bankAccountFields({ bank_number: ciphertext }));
        expect(response.body).toEqual({ ...BAD_REQUEST, error: { bank_number: ['The bank_number could not be decrypted.'] } });
      }
    });
  });

  describe('tenant isolation of tokens', () => {
    it("a token of another merchant or another user is answered like an unknown token", async () => {
      const token = await tokenizeVisaMaster(merchant, platform, userId, { number: VISA });
      const database = platform.deps.database;
      expect(await findInstrumentByToken(database, merchant.options.merchantId, token)).toMatchObject({ token, userId: String(userId), kind: 'visa_master' });
      expect(await findInstrumentByToken(database, other.options.merchantId, token)).toBeUndefined();
      expect(await findInstrumentByToken(database, merchant.options.merchantId, 'tok_unknown')).toBeUndefined();
      const invalid = { reason: 'INSTRUMENT_NOT_FOUND', fields: { token: ['The selected token is invalid.'] } };
      await expect(rendered(requireInstrument(database, { merchantId: other.options.merchantId, token }))).rejects.toMatchObject(invalid);
      await expect(rendered(requireInstrument(database, { merchantId: merchant.options.merchantId, token, userId: String(secondUserId) }))).rejects.toMatchObject(invalid);
      await expect(rendered(requireInstrument(database, { merchantId: merchant.options.merchantId, token, kinds: ['local_card'] }))).rejects.toMatchObject(invalid);
      await expect(rendered(requireInstrument(database, { merchantId: merchant.options.merchantId, token, userId: String(userId) }))).resolves.toMatchObject({ token });
    });

    it("another merchant's user cannot be given an instrument (visa_master, bank_account)", async () => {
      const visa = await merchant.action('tokenize_visa_master', visaMasterFields(undefined, { user_id: otherUserId }));
      expect(visa.body).toEqual({ ...BAD_REQUEST, error: { user_id: ['The selected user_id is invalid.'] } });
      const account = await merchant.action('tokenize_bank_account', bankAccountFields({ user_id: otherUserId }));
      expect(account.body).toEqual({ ...BAD_REQUEST, error: { user_id: ['The selected user_id is invalid.'] } });
    });
  });

  describe('guest cards of the hosted page (vaultGuestCard)', () => {
    it('vaults a guest card without user, and refuses invalid numbers and past expiry', async () => {
      const guest = await vaultGuestCard(platform.deps, { merchantId: merchant.options.merchantId, holderName: ' Guest ', number: '4242 4242 4242 4242', expiryMonth: 12, expiryYear: 39 });
      expect(guest).toMatchObject({ userId: null, kind: 'visa_master', holderName: 'Guest', last4: '4242', brand: 'visa', expiryMonth: 12, expiryYear: 2039 });
      await expect(revealCardNumber(platform.deps, guest)).resolves.toBe(VISA);
      const error = await vaultGuestCard(platform.deps, { merchantId: merchant.options.merchantId, holderName: '', number: secret('4242424242424243'), expiryMonth: 1, expiryYear: 2020 }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(DomainError);
      expect(renderFieldProblems((error as DomainError).fields)).toEqual({
        holder_name: ['The holder_name field is required.'],
        number: ['The card number is invalid.'],
        expiry: ['The card has expired.'],
      });
    });
  });

  describe('no PKCS#1 v1.5 padding oracle, not even one request wide', () => {
    // The attacker's probe: a conformant 00 02 … 00 "Qz?" block (a valid PKCS#1 v1.5 encryption of garbage) and a
    // block whose padding is not conformant (no separator after 00 02). Any difference between the two answers tells
    // conformant from non-conformant padding, which is all a Bleichenbacher attack needs.
    const k = () => modulusBytes(publicKey);
    const probes = () => ({
      conformant: encryptField(publicKey, 'Qz?', 'pkcs1'),
      nonConformant: encryptBlock(publicKey, Buffer.concat([Buffer.from([0, 2]), Buffer.alloc(k() - 2, 0x5a)])),
    });
    const services: Array<[string, (holderName: string) => Record<string, unknown>]> = [
      ['tokenize_local_card', (holderName) => localCardFields({ holder_name: holderName })],
      ['tokenize_bank_account', (holderName) => bankAccountFields({ holder_name: holderName })],
      ['tokenize_visa_master', (holderName) => visaMasterFields(undefined, { holder_name: holderName })],
    ];

    it.each(services)('%s: holder_name "Qz?" in a conformant block and a non-conformant block answer the same status and bytes', async (service, fields) => {
      const before = await countInstruments();
      const { conformant, nonConformant } = probes();
      const answers = [];
      for (const ciphertext of [conformant, nonConformant]) {
        const response = await merchant.action(service, fields(ciphertext));
        answers.push({ status: response.status, text: response.text });
      }
      expect(answers[0]).toEqual(answers[1]);
      expect(answers[0]).toEqual({ status: 400, text: JSON.stringify({ ...BAD_REQUEST, error: { holder_name: ['The holder_name could not be decrypted.'] } }) });
      expect(await countInstruments()).toBe(before);
    });

    it('still vaults real names of any script sent in every padding (apostrophes, hyphens, periods, commas)', async () => {
      const names = ["Seán O'Brien-Smith", 'J. R. R. Tolkien', 'Nguyễn Văn A', 'Smith, John', 'สมชาย ใจดี', '王芳', 'محمد علي', 'Ngô Đình-Diệm', 'ស្រី មុំ', 'Zoë Åström'];
      for (const [index, name] of names.entries()) {
        const padding = PADDINGS[index % PADDINGS.length]!;
        const token = await tokenizeVisaMaster(merchant, platform, userId, { holderName: name, padding });
        expect([name, (await platform.deps.database('instruments').where({ token }).first()).holder_name]).toEqual([name, name]);
      }
    });
  });

  describe('no full number in the database or the logs', () => {
    it('dumps every table and every log line (LOG_LEVEL debug): only last 4 digits appear', async () => {
      const database = platform.deps.database;
      const tables = (await database('information_schema.tables').where({ table_schema: 'public', table_type: 'BASE TABLE' }).pluck('table_name')) as string[];
      expect(tables).toContain('instruments');
      let dump = '';
      for (const table of tables) {
        const rows = (await database.raw(`SELECT t::text AS row FROM "${table}" t`)).rows as Array<{ row: string }>;
        dump += `${table}\n${rows.map((row) => row.row).join('\n')}\n`;
      }
      const logs = logLines.join('');
      // The capture works and saw the instrument activity at debug level.
      expect(platform.config.LOG_LEVEL).toBe('debug');
      expect(logLines.length).toBeGreaterThan(20);
      expect(logs).toContain('"level":20');
      expect(logs).toContain('instrument tokenized');
      expect(logs).toContain('"last4":"4242"');
      expect(dump).toMatch(/tok_[A-Za-z0-9_-]{32}/); // the dump holds the instruments rows
      expect(await countInstruments()).toBeGreaterThan(10);
      expect(SECRET_NUMBERS.size).toBeGreaterThanOrEqual(5);
      // Request logs name the route pattern, never the token or activation code in the path.
      expect(logs).toContain('"path":"/instruments/bank-accounts/:token/activation-qr.png"');
      expect(logs).toContain('"path":"/instruments/bank-accounts/activate/:code"');
      expect(logs).not.toMatch(/"path":"[^"]*(tok_|\/activate\/[A-Za-z0-9_-]{16})/);
      for (const number of SECRET_NUMBERS) {
        expect([number, dump.includes(number)]).toEqual([number, false]);
        expect([number, logs.includes(number)]).toEqual([number, false]);
      }
    });
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
