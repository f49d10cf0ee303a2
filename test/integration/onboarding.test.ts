/**
 * Onboarding: partners, merchants and users through the AdminService RPC client and the
 * onboarding functions, on real PostgreSQL. Every failure path asserts its RPC code, reason and fields.
 */
import { renderFieldProblems } from '../../rest-facade/merchant/contract';
import { createSign, createVerify, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Code } from '@connectrpc/connect';
import { MerchantStatus } from '../../src/gen/payments/admin/v1/admin_pb';
import {
  authenticateMerchant,
  authenticatePartner,
  createMerchant,
  createUser,
  ensureDemoData,
  findMerchantByApiKey,
  findUserByPhone,
  findUserByToken,
  getMerchant,
  getPartner,
  getUser,
  merchantHmacSecret,
  normalizePhone,
  updateUser,
  verifyMerchantApiLogin,
} from '../../src/onboarding';
import { DomainError } from '../../src/errors';
import { readRpcFailure, type RpcFailure } from '../../src/rpc/errors';
import { startTestPlatform, type TestPlatform } from '../support/platform';

function rsaPublicKeyPem(bits = 2048): string {
  return generateKeyPairSync('rsa', { modulusLength: bits }).publicKey.export({ type: 'spki', format: 'pem' }) as string;
}

async function failure(work: Promise<unknown>): Promise<RpcFailure> {
  try {
    await work;
  } catch (error) {
    const failure = readRpcFailure(error);
    // Services answer field problem codes; these are the words the Area C contract renders them in.
    return { ...failure, fields: renderFieldProblems(failure.fields) };
  }
  throw new Error('expected the call to fail');
}

async function domainFailure(work: Promise<unknown>): Promise<DomainError> {
  try {
    await work;
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

/** Every text column of every onboarding table, concatenated. */
async function allStoredText(platform: TestPlatform): Promise<string> {
  const tables = await Promise.all(['partners', 'merchants', 'users'].map((table) => platform.deps.database(table).select('*')));
  return JSON.stringify(tables, (_key, value) => (typeof value === 'bigint' ? value.toString() : value));
}

describe('onboarding', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform();
  });
  afterAll(() => platform.stop());

  describe('partners', () => {
    it('creates a partner with a funded float and authenticates only the exact four credentials', async () => {
      const created = await platform.clients.admin.createPartner({ name: 'Acme Remit', publicKeyPem: rsaPublicKeyPem(), floatAmount: '1000.50' });
      expect(created.partnerId).toMatch(/^P[A-Z0-9]{15}$/);
      expect(created.platformPublicKey).toBe(platform.deps.keys.publicKeyPem);
      // Signing and field encryption are separate key pairs.
      expect(created.fieldEncryptionPublicKey).toBe(platform.deps.keys.fieldEncryption.publicKeyPem);
      expect(created.fieldEncryptionPublicKey).not.toBe(created.platformPublicKey);
      const good = {
        partner_id: created.partnerId,
        partner_secret_key: created.partnerSecretKey,
        user_name: created.userName,
        password: created.password,
      };
      const partner = await authenticatePartner(platform.deps.database, good);
      expect(partner).toMatchObject({ id: created.partnerId, name: 'Acme Remit', status: 'active', float_account_id: created.floatAccountId });
      for (const wrong of [
        { ...good, partner_id: 'PUNKNOWN' },
        { ...good, partner_secret_key: `${good.partner_secret_key}x` },
        { ...good, user_name: `${good.user_name}x` },
        { ...good, password: `${good.password}x` },
        { ...good, password: '' },
      ]) {
        await expect(authenticatePartner(platform.deps.database, wrong)).resolves.toBeUndefined();
      }
      await platform.deps.database('partners').where({ id: created.partnerId }).update({ status: 'suspended' });
      await expect(authenticatePartner(platform.deps.database, good)).resolves.toBeUndefined();
      await platform.deps.database('partners').where({ id: created.partnerId }).update({ status: 'active' });

      const balances = await platform.clients.admin.getWalletBalances({ owner: { partnerId: created.partnerId } });
      expect(balances.wallets).toEqual([
        expect.objectContaining({ currency: 'USD', kind: 'partner_float', balance: '1000.50', balanceUnits: 100050n, availableUnits: 100050n, decimals: 2 }),
      ]);
      expect((await getPartner(platform.deps.database, created.partnerId))?.float_account_id).toBe(created.floatAccountId);

      const stored = await allStoredText(platform);
      expect(stored).not.toContain(created.partnerSecretKey);
      expect(stored).not.toContain(created.password);
    });

    it('refuses a malformed or short public key and a bad float, creating nothing', async () => {
      const before = await platform.deps.database('partners').count<{ count: bigint }[]>('* as count');
      const bad = await failure(platform.clients.admin.createPartner({ name: 'X', publicKeyPem: 'not a key' }));
      expect(bad).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_PUBLIC_KEY', fields: { public_key_pem: ['must be an RSA public key in PEM form'] } });
      const short = await failure(platform.clients.admin.createPartner({ name: 'X', publicKeyPem: rsaPublicKeyPem(1024) }));
      expect(short).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_PUBLIC_KEY', fields: { public_key_pem: ['must be an RSA key of 2048 bits or more'] } });
      const float = await failure(platform.clients.admin.createPartner({ name: 'X', publicKeyPem: rsaPublicKeyPem(), floatAmount: '1.005' }));
      expect(float).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_AMOUNT', fields: { float_amount: ['The float_amount must have at most 2 decimal places.'] } });
      const noName = await failure(platform.clients.admin.createPartner({ name: '', publicKeyPem: rsaPublicKeyPem() }));
      expect(noName).toMatchObject({ code: Code.InvalidArgument, reason: 'VALIDATION_FAILED' });
      expect(Object.keys(noName.fields)).toEqual([expect.stringMatching(/name$/)]);
      const after = await platform.deps.database('partners').count<{ count: bigint }[]>('* as count');
      expect(after).toEqual(before);
    });
  });

  describe('merchants', () => {
    it('generates a key pair when none is given and returns the private key once', async () => {
      const created = await platform.clients.admin.createMerchant({ name: 'Shop', callbackUrl: 'https://shop.example/hook' });
      expect(created.privateKey).toContain('BEGIN PRIVATE KEY');
      expect(created.signatureHeader).toBe('X-Signature');
      // A merchant's platform key is the one it encrypts Area C fields with (docs/compatibility.md): never the signing key.
      expect(created.platformPublicKey).toBe(platform.deps.keys.fieldEncryption.publicKeyPem);
      expect(created.fieldEncryptionPublicKey).toBe(created.platformPublicKey);
      const merchant = await getMerchant(platform.deps.database, created.merchantId);
      expect(merchant).toMatchObject({ name: 'Shop', status: 'active', callback_url: 'https://shop.example/hook', payin_fee_percent: '1.0', api_user_name: created.apiUserName });
      const signature = createSign('sha256').update('hello').sign(created.privateKey!);
      expect(createVerify('sha256').update('hello').verify(merchant!.public_key_pem, signature)).toBe(true);

      const balances = await platform.clients.admin.getWalletBalances({ owner: { merchantId: created.merchantId } });
      expect(balances.wallets.map((wallet) => [wallet.currency, wallet.kind, wallet.balance])).toEqual([
        ['USD', 'wallet', '0.00'],
        ['KHR', 'wallet', '0.00'],
        ['USDT', 'wallet', '0.000000'],
      ]);

      const stored = await allStoredText(platform);
      for (const secret of [created.apiKey, created.apiPassword, created.merchantSecretKey, created.hmacSecret, created.privateKey!]) {
        expect(stored).not.toContain(secret);
      }
    });

    it('keeps a supplied public key, looks merchants up by API key and checks their credentials', async () => {
      const publicKeyPem = rsaPublicKeyPem();
      const { merchant, credentials } = await createMerchant(platform.deps, {
        name: 'Keyed',
        callback_url: 'http://127.0.0.1:9/cb',
        signature_header: 'X-Shop-Signature',
        public_key_pem: publicKeyPem,
        payin_fee_percent: '2.75',
      });
      expect(credentials.private_key).toBeUndefined();
      expect(merchant.public_key_pem).toBe(publicKeyPem);
      expect(merchant).toMatchObject({ signature_header: 'X-Shop-Signature', payin_fee_percent: '2.75' });

      await expect(findMerchantByApiKey(platform.deps.database, credentials.api_key)).resolves.toMatchObject({ id: merchant.id });
      await expect(findMerchantByApiKey(platform.deps.database, `${credentials.api_key}x`)).resolves.toBeUndefined();
      await expect(findMerchantByApiKey(platform.deps.database, '')).resolves.toBeUndefined();

      const headers = { merchant_id: merchant.id, merchant_secret_key: credentials.merchant_secret_key };
      await expect(authenticateMerchant(platform.deps.database, headers)).resolves.toMatchObject({ id: merchant.id });
      await expect(authenticateMerchant(platform.deps.database, { ...headers, merchant_secret_key: 'wrong' })).resolves.toBeUndefined();
      await expect(authenticateMerchant(platform.deps.database, { ...headers, merchant_id: 'MUNKNOWN' })).resolves.toBeUndefined();

      const login = { user_name: credentials.api_user_name, password: credentials.api_password };
      await expect(verifyMerchantApiLogin(platform.deps.database, merchant.id, login)).resolves.toBe(true);
      await expect(verifyMerchantApiLogin(platform.deps.database, merchant.id, { ...login, password: 'wrong' })).resolves.toBe(false);
      await expect(verifyMerchantApiLogin(platform.deps.database, merchant.id, { ...login, user_name: 'wrong' })).resolves.toBe(false);
      await expect(verifyMerchantApiLogin(platform.deps.database, 'MUNKNOWN', login)).resolves.toBe(false);

      await expect(merchantHmacSecret(platform.deps, merchant.id)).resolves.toBe(credentials.hmac_secret);
      expect((await domainFailure(merchantHmacSecret(platform.deps, 'MUNKNOWN'))).reason).toBe('MERCHANT_NOT_FOUND');
    });

    it('suspends and resumes a merchant; a suspended one is found by API key but does not authenticate', async () => {
      const { merchant, credentials } = await createMerchant(platform.deps, { name: 'Toggle', callback_url: 'https://t.example/cb' });
      const suspended = await platform.clients.admin.setMerchantStatus({ merchantId: merchant.id, status: MerchantStatus.SUSPENDED });
      expect(suspended).toMatchObject({ merchantId: merchant.id, status: 'suspended' });
      await expect(findMerchantByApiKey(platform.deps.database, credentials.api_key)).resolves.toMatchObject({ status: 'suspended' });
      const headers = { merchant_id: merchant.id, merchant_secret_key: credentials.merchant_secret_key };
      await expect(authenticateMerchant(platform.deps.database, headers)).resolves.toBeUndefined();
      await expect(
        verifyMerchantApiLogin(platform.deps.database, merchant.id, { user_name: credentials.api_user_name, password: credentials.api_password }),
      ).resolves.toBe(false);
      const resumed = await platform.clients.admin.setMerchantStatus({ merchantId: merchant.id, status: MerchantStatus.ACTIVE });
      expect(resumed.status).toBe('active');
      await expect(authenticateMerchant(platform.deps.database, headers)).resolves.toMatchObject({ status: 'active' });

      const unknown = await failure(platform.clients.admin.setMerchantStatus({ merchantId: 'MUNKNOWN', status: MerchantStatus.SUSPENDED }));
      expect(unknown).toMatchObject({ code: Code.NotFound, reason: 'MERCHANT_NOT_FOUND' });
      const unspecified = await failure(platform.clients.admin.setMerchantStatus({ merchantId: merchant.id, status: MerchantStatus.UNSPECIFIED }));
      expect(unspecified.code).toBe(Code.InvalidArgument);
      expect(Object.keys(unspecified.fields)).toEqual([expect.stringMatching(/status$/)]);
    });

    it('refuses a bad callback URL, signature header and fee percent', async () => {
      const url = await failure(platform.clients.admin.createMerchant({ name: 'M', callbackUrl: 'ftp://x' }));
      expect(url).toMatchObject({ code: Code.InvalidArgument, reason: 'VALIDATION_FAILED', fields: { callback_url: ['callback_url must be an http or https URL'] } });
      const header = await failure(platform.clients.admin.createMerchant({ name: 'M', callbackUrl: 'https://x.example', signatureHeader: 'Bad Header' }));
      expect(Object.keys(header.fields)).toEqual(['signature_header']);
      const reserved = await failure(platform.clients.admin.createMerchant({ name: 'M', callbackUrl: 'https://x.example', signatureHeader: 'X-Webhook-Id' }));
      expect(Object.keys(reserved.fields)).toEqual(['signature_header']);
      for (const payinFeePercent of ['-1', '101', 'abc', '1.1234567']) {
        const fee = await failure(platform.clients.admin.createMerchant({ name: 'M', callbackUrl: 'https://x.example', payinFeePercent }));
        expect(fee).toMatchObject({ code: Code.InvalidArgument, fields: { payin_fee_percent: [expect.any(String)] } });
      }
      const key = await failure(platform.clients.admin.createMerchant({ name: 'M', callbackUrl: 'https://x.example', publicKeyPem: 'junk' }));
      expect(key).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_PUBLIC_KEY', fields: { public_key_pem: [expect.any(String)] } });
    });
  });

  describe('users', () => {
    it('normalizes phone numbers in local, international and +855 forms', () => {
      expect(normalizePhone('012345678')).toBe('+85512345678');
      expect(normalizePhone('85512345678')).toBe('+85512345678');
      expect(normalizePhone('+85512345678')).toBe('+85512345678');
      expect(normalizePhone('+855 12 345 678')).toBe('+85512345678');
      expect(normalizePhone('012-345-678')).toBe('+85512345678');
      expect(normalizePhone('12345')).toBeUndefined();
      expect(normalizePhone('abc')).toBeUndefined();
      expect(normalizePhone('')).toBeUndefined();
    });

    it('creates users with a wallet and refuses duplicate phones in any form, naming the field', async () => {
      const created = await platform.clients.admin.createUser({ phoneNumber: '012345678', firstName: 'Sok', lastName: 'Dara' });
      expect(created).toMatchObject({ phoneNumber: '+85512345678', currency: 'USD', eligible: true });
      expect(created.userId).toMatch(/^\d+$/);
      const user = await getUser(platform.deps.database, created.userId);
      expect(user).toMatchObject({ full_name: 'Sok Dara', phone_number: '+85512345678', user_token: created.userToken, wallet_ref: created.walletRef, status: 'active' });
      const wallet = await platform.deps.ledger.getAccount(user!.wallet_account_id);
      expect(wallet).toMatchObject({ owner_type: 'user', owner_id: created.userId, currency: 'USD', kind: 'wallet' });

      for (const phoneNumber of ['85512345678', '+85512345678', '012 345 678']) {
        const duplicate = await failure(platform.clients.admin.createUser({ phoneNumber, firstName: 'A', lastName: 'B' }));
        expect(duplicate).toMatchObject({
          code: Code.AlreadyExists,
          reason: 'DUPLICATE_PHONE_NUMBER',
          fields: { phone_number: ['The phone number has already been taken.'] },
        });
      }
      for (const form of ['012345678', '85512345678', '+85512345678']) {
        await expect(findUserByPhone(platform.deps.database, form)).resolves.toMatchObject({ id: created.userId });
      }
      await expect(findUserByToken(platform.deps.database, created.userToken)).resolves.toMatchObject({ id: created.userId });
      await expect(findUserByToken(platform.deps.database, 'ut_unknown')).resolves.toBeUndefined();
      await expect(getUser(platform.deps.database, 'not-a-number')).resolves.toBeUndefined();

      const international = await platform.clients.admin.createUser({ phoneNumber: '85512000111', firstName: 'A', lastName: 'B', notEligible: true });
      expect(international).toMatchObject({ phoneNumber: '+85512000111', eligible: false });
      const plus = await platform.clients.admin.createUser({ phoneNumber: '+855 96 123 4567', firstName: 'A', lastName: 'B', currency: 'KHR' });
      expect(plus).toMatchObject({ phoneNumber: '+855961234567', currency: 'KHR' });
    });

    it('refuses a duplicate email (ignoring case), an invalid phone, and neither phone nor email', async () => {
      await createUser(platform.deps, { email: 'Vanna@Example.com', first_name: 'V', last_name: 'K', currency: 'USD' });
      const duplicate = await failure(platform.clients.admin.createUser({ email: 'vanna@example.com', firstName: 'A', lastName: 'B' }));
      expect(duplicate).toMatchObject({ code: Code.AlreadyExists, reason: 'DUPLICATE_EMAIL', fields: { email: ['The email has already been taken.'] } });

      const invalid = await failure(platform.clients.admin.createUser({ phoneNumber: '12345', firstName: 'A', lastName: 'B' }));
      expect(invalid).toMatchObject({ code: Code.InvalidArgument, reason: 'VALIDATION_FAILED', fields: { phone_number: ['The phone number is invalid.'] } });

      const neither = await failure(platform.clients.admin.createUser({ firstName: 'A', lastName: 'B' }));
      expect(neither.code).toBe(Code.InvalidArgument);
      expect(Object.keys(neither.fields).sort()).toEqual(['email', 'phone_number']);

      const several = await domainFailure(
        createUser(platform.deps, { phone_number: '0', email: 'nope', first_name: '', last_name: 'B', currency: 'EUR' as never, birthday: '2001-02-30' }),
      );
      expect(Object.keys(several.fields).sort()).toEqual(['birthday', 'currency', 'email', 'first_name', 'phone_number']);

      const merchant = await domainFailure(
        createUser(platform.deps, { phone_number: '012999111', first_name: 'A', last_name: 'B', currency: 'USD', merchant_id: 'MUNKNOWN' }),
      );
      expect(merchant).toMatchObject({ kind: 'not_found', reason: 'MERCHANT_NOT_FOUND' });
      await expect(findUserByPhone(platform.deps.database, '012999111')).resolves.toBeUndefined();
    });

    it("updates a user only for its own merchant, with the same duplicate errors", async () => {
      const { merchant } = await createMerchant(platform.deps, { name: 'Owner', callback_url: 'https://o.example/cb' });
      const user = await createUser(platform.deps, { phone_number: '012777001', first_name: 'A', last_name: 'B', currency: 'USD', merchant_id: merchant.id });
      await createUser(platform.deps, { phone_number: '012777002', email: 'taken@example.com', first_name: 'C', last_name: 'D', currency: 'USD' });

      const other = await domainFailure(updateUser(platform.deps, { user_id: user.id, merchant_id: 'MOTHER', first_name: 'X' }));
      expect(other).toMatchObject({ kind: 'not_found', reason: 'USER_NOT_FOUND' });
      const unknown = await domainFailure(updateUser(platform.deps, { user_id: '999999999', merchant_id: merchant.id, first_name: 'X' }));
      expect(unknown.reason).toBe('USER_NOT_FOUND');
      const phone = await domainFailure(updateUser(platform.deps, { user_id: user.id, merchant_id: merchant.id, phone_number: '855 12 777 002' }));
      expect(phone).toMatchObject({ kind: 'already_exists', reason: 'DUPLICATE_PHONE_NUMBER', fields: { phone_number: [expect.any(String)] } });
      const email = await domainFailure(updateUser(platform.deps, { user_id: user.id, merchant_id: merchant.id, email: 'TAKEN@example.com' }));
      expect(email).toMatchObject({ kind: 'already_exists', reason: 'DUPLICATE_EMAIL', fields: { email: [expect.any(String)] } });

      const updated = await updateUser(platform.deps, {
        user_id: user.id,
        merchant_id: merchant.id,
        phone_number: '012777001',
        first_name: 'New',
        last_name: 'Name',
        birthday: '1990-05-17',
        address: 'Siem Reap',
      });
      expect(updated).toMatchObject({ full_name: 'New Name', birthday: '1990-05-17', address: 'Siem Reap', phone_number: '+85512777001', user_token: user.user_token });
    });
  });

  describe('demo data (npm start)', () => {
    it('creates the demo records once and writes their credentials to a 0600 file', async () => {
      const directory = mkdtempSync(path.join(tmpdir(), 'demo-'));
      try {
        const first = await ensureDemoData(platform.deps, directory);
        expect(first).toEqual({ path: path.join(directory, 'demo-credentials.json'), created: true });
        expect(statSync(first.path).mode & 0o777).toBe(0o600);
        const file = JSON.parse(readFileSync(first.path, 'utf8')) as {
          partner: { partner_id: string; partner_secret_key: string; user_name: string; password: string; private_key: string };
          merchant: { merchant_id: string; api_key: string; private_key: string };
          users: Array<{ user_id: string; phone_number: string; balance: string }>;
        };
        await expect(authenticatePartner(platform.deps.database, file.partner)).resolves.toMatchObject({ name: 'Demo Partner' });
        expect(file.partner.private_key).toContain('BEGIN PRIVATE KEY');
        await expect(findMerchantByApiKey(platform.deps.database, file.merchant.api_key)).resolves.toMatchObject({ id: file.merchant.merchant_id });
        expect(file.users).toHaveLength(2);
        for (const user of file.users) {
          const balances = await platform.clients.admin.getWalletBalances({ owner: { userId: user.user_id } });
          expect(balances.wallets).toEqual([expect.objectContaining({ currency: 'USD', balance: user.balance, balanceUnits: 50000n })]);
        }
        const float = await platform.clients.admin.getWalletBalances({ owner: { partnerId: file.partner.partner_id } });
        expect(float.wallets[0]).toMatchObject({ balance: '10000.00' });

        const second = await ensureDemoData(platform.deps, directory);
        expect(second).toEqual({ path: first.path, created: false });
        await expect(platform.deps.database('partners').where({ name: 'Demo Partner' }).count<{ count: bigint }[]>('* as count')).resolves.toEqual([
          { count: 1n },
        ]);
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    });
  });

  describe('wallet credit, balances and the ledger check', () => {
    it('credits from settlement once per reference and reports the balance', async () => {
      const user = await createUser(platform.deps, { phone_number: '012888001', first_name: 'W', last_name: 'C', currency: 'USD' });
      const request = { owner: { userId: user.id }, amount: '25.50', currency: 'USD', reference: `credit-${user.id}` };
      const first = await platform.clients.admin.creditWallet(request);
      expect(first).toMatchObject({ balance: '25.50', balanceUnits: 2550n, currency: 'USD' });
      const again = await platform.clients.admin.creditWallet(request);
      expect(again.transactionRef).toBe(first.transactionRef);
      expect(again.balance).toBe('25.50');
      const conflict = await failure(platform.clients.admin.creditWallet({ ...request, amount: '30' }));
      expect(conflict.reason).toBe('IDEMPOTENCY_CONFLICT');

      const balances = await platform.clients.admin.getWalletBalances({ owner: { userId: user.id } });
      expect(balances.wallets).toEqual([expect.objectContaining({ currency: 'USD', balance: '25.50', balanceUnits: 2550n, availableUnits: 2550n })]);
    });

    it('refuses bad credits without moving money', async () => {
      const user = await createUser(platform.deps, { phone_number: '012888002', first_name: 'W', last_name: 'C', currency: 'USD' });
      const base = { owner: { userId: user.id }, amount: '1.00', currency: 'USD', reference: `bad-${user.id}` };
      expect(await failure(platform.clients.admin.creditWallet({ ...base, amount: '1.001' }))).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_AMOUNT' });
      expect(await failure(platform.clients.admin.creditWallet({ ...base, amount: '0' }))).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_AMOUNT' });
      expect(await failure(platform.clients.admin.creditWallet({ ...base, amount: '-5' }))).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_AMOUNT' });
      expect(await failure(platform.clients.admin.creditWallet({ ...base, currency: 'EUR' }))).toMatchObject({
        code: Code.InvalidArgument,
        reason: 'INVALID_CURRENCY',
        fields: { currency: ['currency must be one of USD, KHR, USDT'] },
      });
      expect(await failure(platform.clients.admin.creditWallet({ ...base, currency: 'KHR' }))).toMatchObject({ code: Code.NotFound, reason: 'WALLET_NOT_FOUND' });
      expect(await failure(platform.clients.admin.creditWallet({ ...base, owner: { userId: '999999999' } }))).toMatchObject({ code: Code.NotFound, reason: 'USER_NOT_FOUND' });
      expect(await failure(platform.clients.admin.creditWallet({ ...base, owner: { merchantId: 'MUNKNOWN' } }))).toMatchObject({ code: Code.NotFound, reason: 'MERCHANT_NOT_FOUND' });
      expect(await failure(platform.clients.admin.creditWallet({ ...base, owner: { partnerId: 'PUNKNOWN' } }))).toMatchObject({ code: Code.NotFound, reason: 'PARTNER_NOT_FOUND' });
      expect(await failure(platform.clients.admin.creditWallet({ ...base, owner: {} }))).toMatchObject({ code: Code.InvalidArgument, fields: { owner: [expect.any(String)] } });
      expect(await failure(platform.clients.admin.creditWallet({ ...base, owner: { userId: user.id, merchantId: 'M' } }))).toMatchObject({
        code: Code.InvalidArgument,
        fields: { owner: [expect.any(String)] },
      });
      expect(await failure(platform.clients.admin.getWalletBalances({ owner: { userId: '999999999' } }))).toMatchObject({ code: Code.NotFound, reason: 'USER_NOT_FOUND' });
      const balances = await platform.clients.admin.getWalletBalances({ owner: { userId: user.id } });
      expect(balances.wallets.map((wallet) => wallet.balanceUnits)).toEqual([0n]);
    });

    it('reports a balanced ledger', async () => {
      const check = await platform.clients.admin.checkLedger({});
      expect(check).toMatchObject({ ok: true, imbalances: [] });
      expect(check.accounts).toBeGreaterThan(0n);
      expect(check.entries).toBeGreaterThan(0n);
    });
  });
});
