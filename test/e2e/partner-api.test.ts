/**
 * Area A over HTTP (payment-services-interface.md "Area A", platform decisions §6): A1 token, A2 gateway
 * with RSA2 both ways, every row of the Area A error table, concurrency, worker restart and expiry.
 *
 * The platform runs roles api + facade; the worker is started here, so a test can stop it and start a new one.
 * A second api + facade pair on the same database and task queue runs with ACCESS_TOKEN_TTL_SECONDS=3 and
 * PRE_TRANSFER_TTL_SECONDS=2 for the lifetime tests.
 */
import { readFileSync } from 'node:fs';
import { createLogger } from '../../src/logger';
import { freePort } from '../../src/net';
import { createPartner, createUser, type User } from '../../src/onboarding';
import { runRoles, type RunningPlatform } from '../../src/runtime';
import { startWorker, type RunningWorker } from '../../src/worker';
import { generatePartnerKeys, PartnerClient, type GatewayReply } from '../support/partner-client';
import { startTestPlatform, testConfig, type TestPlatform } from '../support/platform';

const CREATE = 'create.unified.fundTransfer';
const CONFIRM = 'confirm.fundTransfer';
const QUERY = 'query.fundTransfer';
const FLOAT_UNITS = 1_000_000n; // USD 10,000.00

let platform: TestPlatform;
let worker: RunningWorker;
let short: RunningPlatform;
let partner: PartnerClient;
let shortPartner: PartnerClient;
let otherPartner: PartnerClient;
let floatAccountId: string;
let receiver: User;
let sequence = 0;

function nextRef(prefix = 'ORD'): string {
  sequence += 1;
  return `${prefix}${Date.now()}${sequence}`;
}

function startOurWorker(): Promise<RunningWorker> {
  return startWorker(platform.deps, {
    address: platform.config.TEMPORAL_ADDRESS!,
    bundle: { code: readFileSync(process.env.PAYMENTS_TEST_WORKFLOW_BUNDLE!, 'utf8') },
  });
}

async function available(accountId: string): Promise<bigint> {
  return (await platform.deps.ledger.getAccount(accountId)).available_units;
}

async function walletOf(user: User): Promise<bigint> {
  return (await platform.deps.ledger.getAccount(user.wallet_account_id)).posted_units;
}

let phoneSequence = 0;
async function newUser(overrides: Partial<Parameters<typeof createUser>[1]> = {}): Promise<User> {
  phoneSequence += 1;
  return createUser(platform.deps, {
    phone_number: `0123456${String(phoneSequence).padStart(2, '0')}`,
    first_name: 'Dara',
    last_name: 'Sok',
    currency: 'USD',
    ...overrides,
  });
}

function createBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    service: CREATE,
    out_trade_no: nextRef(),
    receiver_id: receiver.id,
    sender_name: 'Chan Vanna',
    amount: 12.5,
    currency: 'USD',
    ...overrides,
  };
}

/** Asserts an Area A failure envelope, signed by the platform. */
function expectError(reply: GatewayReply, status: number, error_code: string, error_desc?: string): void {
  expect(reply.status).toBe(status);
  expect(Object.keys(reply.body).sort()).toEqual(['error_code', 'error_desc', 'sign', 'sign_type', 'success']);
  expect(reply.body.success).toBe(false);
  expect(reply.body.error_code).toBe(error_code);
  if (error_desc !== undefined) expect(reply.body.error_desc).toBe(error_desc);
  expect(reply.body.sign_type).toBe('RSA2');
  expect(reply.signValid).toBe(true);
}

function expectOk(reply: GatewayReply): Record<string, unknown> {
  expect(reply.status).toBe(200);
  expect(Object.keys(reply.body).sort()).toEqual(['code', 'data', 'message', 'sign', 'sign_type', 'success']);
  expect(reply.body).toMatchObject({ success: true, message: 'OK', sign_type: 'RSA2' });
  expect(String(reply.body.code)).toBe('200');
  expect(reply.signValid).toBe(true);
  const data = reply.body.data as Record<string, unknown>;
  // Numbers are parsed losslessly: make them comparable.
  return Object.fromEntries(Object.entries(data).map(([key, value]) => [key, typeof value === 'object' && value !== null ? String(value) : value]));
}

async function newPartnerClient(baseUrl: string, floatUnits = FLOAT_UNITS): Promise<{ client: PartnerClient; float_account_id: string }> {
  const keys = generatePartnerKeys();
  const { partner: created, credentials } = await createPartner(platform.deps, {
    name: `Partner ${nextRef('')}`,
    public_key_pem: keys.publicKeyPem,
    float_units: floatUnits,
  });
  const client = new PartnerClient(baseUrl, credentials, keys, platform.deps.keys.publicKeyPem);
  expect((await client.token()).status).toBe(200);
  return { client, float_account_id: created.float_account_id };
}

beforeAll(async () => {
  platform = await startTestPlatform({ roles: ['api', 'facade'] });
  worker = await startOurWorker();
  short = await runRoles(
    testConfig({
      DATABASE_URL: platform.config.DATABASE_URL!,
      TEMPORAL_TASK_QUEUE: platform.config.TEMPORAL_TASK_QUEUE,
      PLATFORM_KEY_DIR: platform.config.PLATFORM_KEY_DIR,
      ACCESS_TOKEN_TTL_SECONDS: '3',
      PRE_TRANSFER_TTL_SECONDS: '2',
    }),
    ['api', 'facade'],
    createLogger('silent'),
  );
  const main = await newPartnerClient(platform.facadeUrl);
  partner = main.client;
  floatAccountId = main.float_account_id;
  otherPartner = (await newPartnerClient(platform.facadeUrl)).client;
  shortPartner = (await newPartnerClient(short.facadeUrl!)).client;
  receiver = await newUser();
});

afterAll(async () => {
  await short?.stop();
  await worker?.shutdown();
  await platform?.stop();
});

describe('A1 token', () => {
  it('issues a JWT with expire_in = ACCESS_TOKEN_TTL_SECONDS in the §6 envelope, unsigned', async () => {
    const { status, body } = await partner.token();
    expect(status).toBe(200);
    expect(body).toEqual({ success: true, code: 200, message: 'OK', data: { access_token: expect.any(String), expire_in: 7200 } });
    const token = (body.data as { access_token: string }).access_token;
    expect(token.split('.')).toHaveLength(3);
    expect(token.length).toBeLessThanOrEqual(1200);
  });

  const unauthorized = { success: false, error_code: 'UNAUTHENTICATED', error_desc: 'Unauthorized' };
  it.each<[string, { headers?: Record<string, string>; body?: Record<string, unknown> }, string | undefined]>([
    ['a wrong password', { body: { user_name: 'x', password: 'wrong' } }, 'password'],
    ['a wrong secret key', { headers: { 'partner-secret-key': 'wrong' } }, undefined],
    ['an unknown partner id', { headers: { 'partner-id': 'PNOSUCHPARTNER' } }, undefined],
    ['a missing partner-id', { headers: { 'partner-id': '' } }, undefined],
    ['an oversize partner-id', { headers: { 'partner-id': 'P'.repeat(65) } }, undefined],
    ['an oversize partner-secret-key', { headers: { 'partner-secret-key': 'k'.repeat(129) } }, undefined],
    ['a missing body', { body: {} }, undefined],
    ['an oversize password', { body: { user_name: 'x', password: 'p'.repeat(65) } }, undefined],
  ])('answers 401 UNAUTHENTICATED for %s', async (_name, overrides, keepUser) => {
    const body = overrides.body && keepUser ? { ...overrides.body, user_name: partner.credentials.user_name } : overrides.body;
    const probe = new PartnerClient(partner.baseUrl, partner.credentials, partner.keys, partner.platformPublicKeyPem);
    const { status, body: answer } = await probe.token({ ...overrides, body });
    expect(status).toBe(401);
    expect(answer).toEqual(unauthorized);
  });
});

describe('A2 gateway: token and signature', () => {
  const unauthorized = { success: false, error_code: 'UNAUTHENTICATED', error_desc: 'Unauthorized' };

  it.each([
    ['no Authorization header', null],
    ['a malformed token', 'not-a-jwt'],
    ['a token signed by someone else', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJQMSIsImV4cCI6OTk5OTk5OTk5OX0.c2lnbmF0dXJl'],
    ['an oversize Authorization header', 'a'.repeat(1200)],
  ])('answers 401 UNAUTHENTICATED (unsigned) for %s', async (_name, token) => {
    const reply = await partner.gateway(createBody(), { token });
    expect(reply.status).toBe(401);
    expect(reply.body).toEqual(unauthorized);
  });

  it('refuses a token past its lifetime (ACCESS_TOKEN_TTL_SECONDS=3)', async () => {
    expect((await shortPartner.token()).body).toMatchObject({ data: { expire_in: 3 } });
    const fresh = await shortPartner.gateway({ service: QUERY, out_trade_no: 'UNKNOWN1' });
    expectError(fresh, 400, 'NOTEXIST');
    await new Promise((resolve) => setTimeout(resolve, 3100));
    const stale = await shortPartner.gateway({ service: QUERY, out_trade_no: 'UNKNOWN1' });
    expect(stale.status).toBe(401);
    expect(stale.body).toEqual(unauthorized);
  });

  it('answers 401 once the partner is suspended, at the token and the gateway', async () => {
    const { client } = await newPartnerClient(platform.facadeUrl);
    await platform.deps.database('partners').where({ id: client.credentials.partner_id }).update({ status: 'suspended' });
    const reply = await client.gateway({ service: QUERY, out_trade_no: 'A1' });
    expect(reply.status).toBe(401);
    expect(reply.body).toEqual(unauthorized);
    const token = await client.token();
    expect(token.status).toBe(401);
    expect(token.body).toEqual(unauthorized);
  });

  it('answers invalid sign for a missing sign', async () => {
    expectError(await partner.gateway(createBody(), { tamper: ({ sign: _sign, ...rest }) => rest }), 400, 'VALIDATIONERROR', 'invalid sign');
  });

  it('answers invalid sign for a non-base64 sign', async () => {
    expectError(await partner.gateway(createBody(), { tamper: (body) => ({ ...body, sign: 'not base64 at all!' }) }), 400, 'VALIDATIONERROR', 'invalid sign');
  });

  it('answers invalid sign when a field changed after signing, and moves nothing', async () => {
    const before = await available(floatAccountId);
    const reply = await partner.gateway(createBody(), { tamper: (body) => ({ ...body, amount: 99 }) });
    expectError(reply, 400, 'VALIDATIONERROR', 'invalid sign');
    expect(await available(floatAccountId)).toBe(before);
  });

  it('answers invalid sign for a request signed with another key', async () => {
    const reply = await partner.gateway(otherPartner.sign(createBody()));
    expectError(reply, 400, 'VALIDATIONERROR', 'invalid sign');
  });

  it('refuses a sign_type other than RSA2', async () => {
    const reply = await partner.gateway(createBody(), { tamper: (body) => ({ ...body, sign_type: 'RSA' }) });
    expectError(reply, 400, 'VALIDATIONERROR', 'sign_type must be RSA2');
  });

  it('answers VALIDATIONERROR for an unknown service', async () => {
    expectError(await partner.gateway({ service: 'transfer.everything' }), 400, 'VALIDATIONERROR', 'unknown service');
  });

  it('answers VALIDATIONERROR for a body that is not a JSON object', async () => {
    expectError(await partner.gateway({}, { rawBody: '[1,2' }), 400, 'VALIDATIONERROR', 'the body must be a JSON object');
  });
});

describe('create.unified.fundTransfer', () => {
  it('holds the amount on the partner float and returns the pre-transfer', async () => {
    const before = await available(floatAccountId);
    const body = createBody({ amount: 12.5 });
    const data = expectOk(await partner.gateway(body));
    expect(data).toEqual({
      out_trade_no: body.out_trade_no,
      receiver_id: receiver.id,
      amount: '12.5',
      currency: 'USD',
      pre_transfer_id: expect.stringMatching(/^[A-Za-z0-9]{1,64}$/),
      receiver_name: 'Dara Sok',
      expire_in: '600',
    });
    expect(await available(floatAccountId)).toBe(before - 1250n);
  });

  it.each([['local form', (phone: string) => `0${phone.slice(4)}`], ['855 form', (phone: string) => phone.slice(1)], ['+855 form', (phone: string) => phone]])(
    'finds the receiver by phone in %s',
    async (_name, form) => {
      const receiver_id = form(receiver.phone_number!);
      const data = expectOk(await partner.gateway(createBody({ receiver_id, amount: 1 })));
      expect(data).toMatchObject({ receiver_id, receiver_name: 'Dara Sok' });
    },
  );

  it('answers the same pre-transfer for a repeated out_trade_no with the same fields, without a second hold', async () => {
    const body = createBody({ amount: 3 });
    const first = expectOk(await partner.gateway(body));
    const afterFirst = await available(floatAccountId);
    const second = expectOk(await partner.gateway(body));
    expect(second).toEqual(first);
    expect(await available(floatAccountId)).toBe(afterFirst);
  });

  it('answers one pre-transfer and places one hold for 10 concurrent creates with the same out_trade_no', async () => {
    const before = await available(floatAccountId);
    const body = createBody({ amount: 2.5 });
    const replies = await Promise.all(Array.from({ length: 10 }, () => partner.gateway(body)));
    const ids = new Set(replies.map((reply) => String(expectOk(reply).pre_transfer_id)));
    expect(ids.size).toBe(1);
    expect(await available(floatAccountId)).toBe(before - 250n);
  });

  it('answers duplicate out_trade_no when the same out_trade_no comes with other fields', async () => {
    const body = createBody({ amount: 4 });
    expectOk(await partner.gateway(body));
    expectError(await partner.gateway({ ...body, amount: 5 }), 400, 'VALIDATIONERROR', 'duplicate out_trade_no');
  });

  describe('NOTELIGIBLE', () => {
    it.each([
      ['an unknown user id', async () => '987654321012'],
      ['an unknown phone number', async () => '099999991'],
      ['a receiver_id that is neither id nor phone', async () => 'nobody'],
      ['a 25-character receiver_id', async () => 'R'.repeat(25)],
      ['an id beyond the bigint range', async () => '9999999999999999999'],
      [
        'an inactive user',
        async () => {
          const user = await newUser();
          await platform.deps.database('users').where({ id: user.id }).update({ status: 'inactive' });
          return user.id;
        },
      ],
      ['a user marked not eligible', async () => (await newUser({ eligible: false })).id],
      ['a user without a USD wallet', async () => (await newUser({ currency: 'KHR' })).id],
    ])('for %s', async (_name, receiverOf) => {
      const before = await available(floatAccountId);
      const reply = await partner.gateway(createBody({ receiver_id: await receiverOf() }));
      expectError(reply, 400, 'NOTELIGIBLE', 'The receiver is not eligible for the funds.');
      expect(await available(floatAccountId)).toBe(before);
    });
  });

  describe('VALIDATIONERROR', () => {
    it.each([
      ['a negative amount', { amount: -1 }, 'amount must not be negative'],
      ['a zero amount', { amount: 0 }, 'amount must be greater than 0'],
      ['a 3-decimal amount', { amount: 1.005 }, 'amount must have at most 2 decimal places'],
      ['a non-numeric amount', { amount: 'ten' }, 'amount must be a decimal number'],
      ['a boolean amount', { amount: true }, 'amount must be a decimal number'],
      ['a missing amount', { amount: undefined }, 'amount is required'],
      ['KHR', { currency: 'KHR' }, 'currency only USD is allowed'],
      ['a currency that is not Char(3)', { currency: 'US' }, 'currency must be a three-letter currency code'],
      ['a missing out_trade_no', { out_trade_no: undefined }, 'out_trade_no is required'],
      ['an oversize out_trade_no', { out_trade_no: 'A'.repeat(65) }, 'out_trade_no must be at most 64 characters'],
      ['a non-alphanumeric out_trade_no', { out_trade_no: 'ORD-1' }, 'out_trade_no must contain only letters and digits'],
      ['an oversize receiver_id', { receiver_id: '1'.repeat(26) }, 'receiver_id must be at most 25 characters'],
      ['an oversize sender_name', { sender_name: 'n'.repeat(97) }, 'sender_name must be at most 96 characters'],
      ['a numeric sender_name', { sender_name: 42 }, 'sender_name must be a string'],
    ])('for %s', async (_name, overrides, desc) => {
      const before = await available(floatAccountId);
      const body = createBody(overrides);
      for (const key of Object.keys(overrides)) if ((overrides as Record<string, unknown>)[key] === undefined) delete body[key];
      expectError(await partner.gateway(body), 400, 'VALIDATIONERROR', desc);
      expect(await available(floatAccountId)).toBe(before);
    });

    it('reads the amount losslessly (a 3-decimal amount sent as raw JSON text is refused, 2 decimals kept exact)', async () => {
      const exact = createBody({ amount: 0.1 });
      const data = expectOk(await partner.gateway(exact));
      expect(data.amount).toBe('0.1');
      const raw = partner.sign(createBody({ amount: 1.23 }));
      const text = JSON.stringify(raw).replace('"amount":1.23', '"amount":1.230');
      // 1.230 canonicalizes to 1.23 (ECMAScript number text), so the sign still holds and the amount is 1.23.
      expect(expectOk(await partner.gateway({}, { rawBody: text })).amount).toBe('1.23');
    });

    it('answers insufficient partner balance when the float is short', async () => {
      const { client } = await newPartnerClient(platform.facadeUrl, 500n);
      expectError(await client.gateway(createBody({ amount: 5.01 })), 400, 'VALIDATIONERROR', 'insufficient partner balance');
      expectOk(await client.gateway(createBody({ amount: 5 })));
    });
  });
});

describe('confirm.fundTransfer', () => {
  async function created(amount = 2): Promise<Record<string, unknown>> {
    return expectOk(await partner.gateway(createBody({ amount })));
  }

  it('credits the receiver once and answers SUCCESS with fund_transfer_id', async () => {
    const pre = await created(7.25);
    const walletBefore = await walletOf(receiver);
    const floatBefore = (await platform.deps.ledger.getAccount(floatAccountId)).posted_units;
    const data = expectOk(await partner.gateway({ service: CONFIRM, pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('TX') }));
    expect(data).toEqual({
      result_code: 'SUCCESS',
      fund_transfer_id: expect.stringMatching(/^[A-Za-z0-9]{1,64}$/),
      out_trade_no: pre.out_trade_no,
      receiver_id: pre.receiver_id,
      pre_transfer_id: pre.pre_transfer_id,
      amount: '7.25',
      currency: 'USD',
      receiver_name: 'Dara Sok',
    });
    expect(await walletOf(receiver)).toBe(walletBefore + 725n);
    expect((await platform.deps.ledger.getAccount(floatAccountId)).posted_units).toBe(floatBefore - 725n);
    // The PreTransferWorkflow (id = pre_transfer_id) reports its state through the `state` Query.
    const handle = platform.deps.temporal.client.workflow.getHandle(String(pre.pre_transfer_id));
    expect(await handle.query('state')).toEqual({ state: 'confirmed', fund_transfer_id: data.fund_transfer_id });
    expect(await handle.result()).toEqual({ state: 'confirmed' });
    // The posting ran as a local activity inside the confirm's workflow task: no activity task was scheduled.
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.filter((event) => event.activityTaskScheduledEventAttributes)).toEqual([]);
    expect(events.filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toHaveLength(1);
  });

  it('answers USED for a second confirm', async () => {
    const pre = await created();
    expectOk(await partner.gateway({ service: CONFIRM, pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('TX') }));
    const again = await partner.gateway({ service: CONFIRM, pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('TX') });
    expectError(again, 400, 'USED', 'The pre-transfer id was already used.');
  });

  it('refuses a partner_transaction_id used by another pre-transfer, moving nothing, and confirms it with a new one', async () => {
    const first = await created(1.5);
    const second = await created(2.5);
    const transactionId = nextRef('TX');
    expectOk(await partner.gateway({ service: CONFIRM, pre_transfer_id: first.pre_transfer_id, partner_transaction_id: transactionId }));
    const walletBefore = await walletOf(receiver);
    const floatBefore = await platform.deps.ledger.getAccount(floatAccountId);
    const clash = await partner.gateway({ service: CONFIRM, pre_transfer_id: second.pre_transfer_id, partner_transaction_id: transactionId });
    expectError(clash, 400, 'VALIDATIONERROR', 'duplicate partner_transaction_id');
    // The refused confirm's post was undone with its transaction: the hold is still held, nothing moved.
    expect(await walletOf(receiver)).toBe(walletBefore);
    expect(await platform.deps.ledger.getAccount(floatAccountId)).toMatchObject({
      posted_units: floatBefore.posted_units,
      held_units: floatBefore.held_units,
    });
    const row = await platform.deps.database('pre_transfers').where({ id: second.pre_transfer_id }).first();
    expect(row).toMatchObject({ state: 'pending', partner_transaction_id: null, fund_transfer_id: null });
    expectOk(await partner.gateway({ service: CONFIRM, pre_transfer_id: second.pre_transfer_id, partner_transaction_id: nextRef('TX') }));
    expect(await walletOf(receiver)).toBe(walletBefore + 250n);
  });

  it.each([
    ['an unknown pre_transfer_id', 'PTNOSUCHTRANSFER'],
    ['a malformed pre_transfer_id', 'PT-../../etc'],
  ])('answers NOTEXIST for %s', async (_name, id) => {
    const reply = await partner.gateway({ service: CONFIRM, pre_transfer_id: id, partner_transaction_id: nextRef('TX') });
    expectError(reply, 400, 'NOTEXIST', 'Wrong or malformed pre-transfer id.');
  });

  it("answers NOTEXIST for another partner's pre-transfer", async () => {
    const pre = await created();
    const reply = await otherPartner.gateway({ service: CONFIRM, pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('TX') });
    expectError(reply, 400, 'NOTEXIST');
  });

  it('refuses a partner_transaction_id already used on another pre-transfer', async () => {
    const first = await created();
    const second = await created();
    const transactionId = nextRef('TX');
    expectOk(await partner.gateway({ service: CONFIRM, pre_transfer_id: first.pre_transfer_id, partner_transaction_id: transactionId }));
    const reply = await partner.gateway({ service: CONFIRM, pre_transfer_id: second.pre_transfer_id, partner_transaction_id: transactionId });
    expectError(reply, 400, 'VALIDATIONERROR', 'duplicate partner_transaction_id');
    // The second pre-transfer is still usable with a fresh id.
    expectOk(await partner.gateway({ service: CONFIRM, pre_transfer_id: second.pre_transfer_id, partner_transaction_id: nextRef('TX') }));
  });

  it.each([
    ['a missing partner_transaction_id', { partner_transaction_id: undefined }, 'partner_transaction_id is required'],
    ['an oversize partner_transaction_id', { partner_transaction_id: 'T'.repeat(65) }, 'partner_transaction_id must be at most 64 characters'],
    ['a missing pre_transfer_id', { pre_transfer_id: undefined }, 'pre_transfer_id is required'],
    ['an oversize pre_transfer_id', { pre_transfer_id: 'P'.repeat(65) }, 'pre_transfer_id must be at most 64 characters'],
  ])('answers VALIDATIONERROR for %s', async (_name, overrides, desc) => {
    const body: Record<string, unknown> = { service: CONFIRM, pre_transfer_id: 'PT1', partner_transaction_id: nextRef('TX'), ...overrides };
    for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
    expectError(await partner.gateway(body), 400, 'VALIDATIONERROR', desc);
  });

  it('of 20 concurrent confirms exactly one succeeds, the rest are USED, and the receiver is credited once', async () => {
    const user = await newUser();
    const pre = expectOk(await partner.gateway(createBody({ receiver_id: user.id, amount: 9.99 })));
    const replies = await Promise.all(
      Array.from({ length: 20 }, () =>
        partner.gateway({ service: CONFIRM, pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('TX') }),
      ),
    );
    const successes = replies.filter((reply) => reply.status === 200);
    expect(successes).toHaveLength(1);
    for (const reply of replies.filter((item) => item.status !== 200)) expectError(reply, 400, 'USED');
    expect(await walletOf(user)).toBe(999n);
  });

  it('confirms after the worker was stopped between create and confirm and a new one started', async () => {
    const user = await newUser();
    const pre = expectOk(await partner.gateway(createBody({ receiver_id: user.id, amount: 1.5 })));
    await worker.shutdown();
    const pending = partner.gateway({ service: CONFIRM, pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('TX') });
    await new Promise((resolve) => setTimeout(resolve, 500));
    worker = await startOurWorker();
    const data = expectOk(await pending);
    expect(data.result_code).toBe('SUCCESS');
    expect(await walletOf(user)).toBe(150n);
  });
});

describe('query.fundTransfer', () => {
  it('answers PENDING without fund_transfer_id, then SUCCESS with it', async () => {
    const pre = expectOk(await partner.gateway(createBody({ amount: 6 })));
    const pending = expectOk(await partner.gateway({ service: QUERY, out_trade_no: pre.out_trade_no }));
    expect(pending).toEqual({
      result_code: 'PENDING',
      out_trade_no: pre.out_trade_no,
      amount: '6',
      currency: 'USD',
      receiver_id: pre.receiver_id,
      receiver_name: 'Dara Sok',
    });
    const confirmed = expectOk(await partner.gateway({ service: CONFIRM, pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('TX') }));
    const success = expectOk(await partner.gateway({ service: QUERY, out_trade_no: pre.out_trade_no }));
    expect(success).toEqual({ ...pending, result_code: 'SUCCESS', fund_transfer_id: confirmed.fund_transfer_id });
  });

  it('answers NOTEXIST for an unknown out_trade_no', async () => {
    expectError(await partner.gateway({ service: QUERY, out_trade_no: 'NEVERSENT1' }), 400, 'NOTEXIST');
  });

  it("answers NOTEXIST for another partner's out_trade_no", async () => {
    const pre = expectOk(await partner.gateway(createBody({ amount: 1 })));
    expectError(await otherPartner.gateway({ service: QUERY, out_trade_no: pre.out_trade_no }), 400, 'NOTEXIST');
  });

  it.each([
    ['a missing out_trade_no', {}, 'out_trade_no is required'],
    ['an oversize out_trade_no', { out_trade_no: 'Q'.repeat(65) }, 'out_trade_no must be at most 64 characters'],
  ])('answers VALIDATIONERROR for %s', async (_name, overrides, desc) => {
    expectError(await partner.gateway({ service: QUERY, ...overrides }), 400, 'VALIDATIONERROR', desc);
  });
});

describe('SYSTEMERROR for real faults', () => {
  it('answers 500 SYSTEMERROR (no internal message) when the platform RPC is unreachable', async () => {
    const closedPort = await freePort();
    const facadeOnly = await runRoles(testConfig({ RPC_URL: `http://127.0.0.1:${closedPort}` }), ['facade'], createLogger('silent'));
    try {
      const probe = new PartnerClient(facadeOnly.facadeUrl!, partner.credentials, partner.keys, partner.platformPublicKeyPem);
      const { status, body } = await probe.token();
      expect(status).toBe(500);
      expect(body).toEqual({ success: false, error_code: 'SYSTEMERROR', error_desc: 'Server error or busy.' });
      const reply = await probe.gateway({ service: QUERY, out_trade_no: 'A1' }, { token: partner.accessToken });
      expect(reply.status).toBe(500);
      expect(reply.body).toEqual({ success: false, error_code: 'SYSTEMERROR', error_desc: 'Server error or busy.' });
    } finally {
      await facadeOnly.stop();
    }
  });
});

describe('expiry (PRE_TRANSFER_TTL_SECONDS=2)', () => {
  it('returns the hold to the float, then answers EXPIRED to confirm and query', async () => {
    await shortPartner.token();
    const account = (await platform.deps.database('partners').where({ id: shortPartner.credentials.partner_id }).first()).float_account_id as string;
    const before = await available(account);
    const pre = expectOk(await shortPartner.gateway(createBody({ amount: 20 })));
    expect(pre.expire_in).toBe('2');
    expect(await available(account)).toBe(before - 2000n);
    // Wait for the workflow's timer to void the hold (the tokens of this platform live 1 s: renew each poll).
    const deadline = Date.now() + 30_000;
    while ((await available(account)) !== before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await available(account)).toBe(before);
    await shortPartner.token();
    const confirm = await shortPartner.gateway({ service: CONFIRM, pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('TX') });
    expectError(confirm, 400, 'EXPIRED', 'The unified fund transfer has expired.');
    await shortPartner.token();
    expectError(await shortPartner.gateway({ service: QUERY, out_trade_no: pre.out_trade_no }), 400, 'EXPIRED');
    const row = await platform.deps.database('pre_transfers').where({ id: pre.pre_transfer_id }).first();
    expect(row.state).toBe('expired');
    const handle = platform.deps.temporal.client.workflow.getHandle(String(pre.pre_transfer_id));
    expect(await handle.result()).toEqual({ state: 'expired' });
    expect(await handle.query('state')).toEqual({ state: 'expired', fund_transfer_id: null });
  });
});
