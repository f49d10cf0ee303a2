/**
 * Area A as the interface documents it (payment-services-interface.md "Area A", "Errors / Area A"; platform decisions
 * §2 and §6), requests built from those documents only: A1 with its two headers and two fields, A2 with the bearer
 * token and the signed body of each service. Each test asserts the documented status and envelope exactly: which
 * fields are present, `sign` verifying with the platform public key the partner was given (absent on
 * UNAUTHENTICATED). Changing one of these tests is a breaking change (docs/compatibility.md).
 *
 * SYSTEMERROR ("server error or busy") has no documented request that causes it: not covered here.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { AreaAPartner, type Reply } from './support/clients';
import { admin, expectLedgerBalanced, registerPartner } from './support/onboarding';
import { signAreaA } from './support/spec-signing';

const CREATE = 'create.unified.fundTransfer';
const CONFIRM = 'confirm.fundTransfer';
const QUERY = 'query.fundTransfer';

/** Alpha(64) references. */
const reference = (prefix: string) => `${prefix}${randomBytes(8).toString('hex')}`;
const phone = () => `012${randomInt(100_000, 999_999)}`;

/** A platform user (registered by the operator: `payments admin user create`); its user id. */
async function registerUser(platform: TestPlatform, options: { notEligible?: boolean } = {}): Promise<string> {
  const printed = await admin(platform, ['user', 'create', '--phone', phone(), '--first-name', 'Sokha', '--last-name', 'Chan', ...(options.notEligible ? ['--not-eligible'] : [])]);
  return printed.user_id!;
}

/**
 * A signed success envelope: exactly success, code, message, data, sign_type, sign; `data` holds every documented
 * field (the platform may add optional ones: docs/compatibility.md); `data` returned.
 */
function expectSuccess(partner: AreaAPartner, reply: Reply, dataFields: string[]): Record<string, unknown> {
  expect(reply.status).toBe(200);
  expect(Object.keys(reply.json).sort()).toEqual(['code', 'data', 'message', 'sign', 'sign_type', 'success']);
  expect(reply.json.success).toBe(true);
  expect(reply.json.code).toBe(200);
  expect(typeof reply.json.message).toBe('string');
  expect(reply.json.sign_type).toBe('RSA2');
  expect(partner.responseSignatureValid(reply)).toBe(true);
  expect(Object.keys(reply.json.data)).toEqual(expect.arrayContaining(dataFields));
  return reply.json.data;
}

/** A signed failure envelope: exactly success, error_code, error_desc, sign_type, sign. */
function expectError(partner: AreaAPartner, reply: Reply, status: number, errorCode: string, errorDesc?: string): void {
  expect(reply.status).toBe(status);
  expect(Object.keys(reply.json).sort()).toEqual(['error_code', 'error_desc', 'sign', 'sign_type', 'success']);
  expect(reply.json.success).toBe(false);
  expect(reply.json.error_code).toBe(errorCode);
  expect(typeof reply.json.error_desc).toBe('string');
  if (errorDesc !== undefined) expect(reply.json.error_desc).toBe(errorDesc);
  expect(reply.json.sign_type).toBe('RSA2');
  expect(partner.responseSignatureValid(reply)).toBe(true);
}

/** UNAUTHENTICATED: 401, exactly success, error_code, error_desc (no sign). */
function expectUnauthenticated(reply: Reply): void {
  expect(reply.status).toBe(401);
  expect(reply.json).toEqual({ success: false, error_code: 'UNAUTHENTICATED', error_desc: 'Unauthorized' });
}

const CREATED_FIELDS = ['out_trade_no', 'receiver_id', 'amount', 'currency', 'pre_transfer_id', 'receiver_name', 'expire_in'];
const CONFIRMED_FIELDS = ['result_code', 'fund_transfer_id', 'out_trade_no', 'receiver_id', 'pre_transfer_id', 'amount', 'currency', 'receiver_name'];

describe('Area A contract', () => {
  let platform: TestPlatform;
  let partner: AreaAPartner;
  let receiverId: string;

  const createBody = (fields: Record<string, unknown> = {}) => ({
    service: CREATE,
    out_trade_no: reference('ORD'),
    receiver_id: receiverId,
    sender_name: 'Chan Vanna',
    amount: 12.5,
    currency: 'USD',
    ...fields,
  });

  beforeAll(async () => {
    platform = await startTestPlatform();
    partner = new AreaAPartner(platform.facadeUrl, await registerPartner(platform, '1000.00'));
    receiverId = await registerUser(platform);
  });
  afterAll(async () => {
    await expectLedgerBalanced(platform);
    await platform.stop();
  });

  describe('A1 POST /partnerapi/v1/token', () => {
    it('issues an access token and its lifetime', async () => {
      const reply = await partner.token();
      expect(reply.status).toBe(200);
      expect(Object.keys(reply.json).sort()).toEqual(['code', 'data', 'message', 'success']);
      expect(reply.json).toMatchObject({ success: true, code: 200, message: 'OK', data: { access_token: expect.any(String), expire_in: expect.any(Number) } });
      expect(reply.json.data.access_token.length).toBeLessThanOrEqual(1200);
      expect(reply.headers.get('x-request-id')).toBeTruthy();
      expect(reply.json.data.expire_in).toBeGreaterThan(0);
    });

    it('answers invalid credentials 401 UNAUTHENTICATED', async () => {
      expectUnauthenticated(await partner.token({ body: { user_name: partner.credentials.user_name, password: 'wrong' } }));
      expectUnauthenticated(await partner.token({ headers: { 'partner-secret-key': 'wrong' } }));
    });
  });

  describe('A2 POST /partnerapi/v1/gateway', () => {
    beforeAll(async () => {
      expect((await partner.token()).status).toBe(200);
    });

    it('answers a missing or bad token 401 UNAUTHENTICATED, unsigned', async () => {
      expectUnauthenticated(await partner.gateway(createBody(), { token: 'not-a-token' }));
    });

    it('answers a bad sign 400 VALIDATIONERROR "invalid sign"', async () => {
      const signed: Record<string, unknown> = { ...signAreaA(createBody(), partner.credentials.private_key), amount: 99 };
      expectError(partner, await partner.gateway({}, { signed }), 400, 'VALIDATIONERROR', 'invalid sign');
      const { sign: _sign, ...unsigned } = signAreaA(createBody(), partner.credentials.private_key);
      expectError(partner, await partner.gateway({}, { signed: unsigned }), 400, 'VALIDATIONERROR', 'invalid sign');
    });

    it('accepts a body without sign_type (default RSA2)', async () => {
      const { sign_type: _signType, ...signed } = signAreaA(createBody(), partner.credentials.private_key);
      expectSuccess(partner, await partner.gateway({}, { signed }), CREATED_FIELDS);
    });

    describe(CREATE, () => {
      it('creates a pre-transfer and names the receiver', async () => {
        const body = createBody();
        const data = expectSuccess(partner, await partner.gateway(body), CREATED_FIELDS);
        expect(data).toMatchObject({
          out_trade_no: body.out_trade_no,
          receiver_id: receiverId,
          amount: 12.5,
          currency: 'USD',
          pre_transfer_id: expect.stringMatching(/^[A-Za-z0-9]{1,64}$/),
          receiver_name: 'Sokha Chan',
          expire_in: expect.any(Number),
        });
      });

      it('answers NOTELIGIBLE for a receiver that is not eligible, and for an unknown one', async () => {
        const notEligible = await registerUser(platform, { notEligible: true });
        expectError(partner, await partner.gateway(createBody({ receiver_id: notEligible })), 400, 'NOTELIGIBLE');
        expectError(partner, await partner.gateway(createBody({ receiver_id: '999999999' })), 400, 'NOTELIGIBLE');
      });

      it('takes the receiver by phone number, local or international (decisions §6)', async () => {
        const phoneNumber = phone();
        await admin(platform, ['user', 'create', '--phone', phoneNumber, '--first-name', 'Vanna', '--last-name', 'Keo']);
        for (const receiver_id of [phoneNumber, `855${phoneNumber.slice(1)}`]) {
          const data = expectSuccess(partner, await partner.gateway(createBody({ receiver_id, amount: 1 })), CREATED_FIELDS);
          expect(data).toMatchObject({ receiver_id, receiver_name: 'Vanna Keo' });
        }
      });

      it('answers the same out_trade_no with the same fields with the same pre-transfer, with other fields VALIDATIONERROR (decisions §6)', async () => {
        const body = createBody({ amount: 1.5 });
        const first = expectSuccess(partner, await partner.gateway(body), CREATED_FIELDS);
        const again = expectSuccess(partner, await partner.gateway(body), CREATED_FIELDS);
        expect(again.pre_transfer_id).toBe(first.pre_transfer_id);
        expectError(partner, await partner.gateway({ ...body, amount: 2 }), 400, 'VALIDATIONERROR', 'duplicate out_trade_no');
      });

      it('answers VALIDATIONERROR "insufficient partner balance" above the float (decisions §6)', async () => {
        expectError(partner, await partner.gateway(createBody({ amount: 5000 })), 400, 'VALIDATIONERROR', 'insufficient partner balance');
      });

      it('answers VALIDATIONERROR for a currency other than USD and for a missing field', async () => {
        expectError(partner, await partner.gateway(createBody({ currency: 'KHR' })), 400, 'VALIDATIONERROR');
        const { sender_name: _senderName, ...missing } = createBody();
        expectError(partner, await partner.gateway(missing), 400, 'VALIDATIONERROR');
      });
    });

    /** A pre-transfer of `amount` USD, created and confirmed: the body sent and both answers' `data`. */
    async function createAndConfirm(amount: number) {
      const body = createBody({ amount });
      const created = expectSuccess(partner, await partner.gateway(body), CREATED_FIELDS);
      const confirmed = expectSuccess(
        partner,
        await partner.gateway({ service: CONFIRM, partner_transaction_id: reference('PTX'), pre_transfer_id: created.pre_transfer_id }),
        CONFIRMED_FIELDS,
      );
      return { body, created, confirmed };
    }

    describe(CONFIRM, () => {
      it('credits the receiver: result_code SUCCESS with fund_transfer_id', async () => {
        const { body, created, confirmed } = await createAndConfirm(3);
        expect(confirmed).toMatchObject({
          result_code: 'SUCCESS',
          fund_transfer_id: expect.stringMatching(/^[A-Za-z0-9]{1,64}$/),
          out_trade_no: body.out_trade_no,
          receiver_id: receiverId,
          pre_transfer_id: created.pre_transfer_id,
          amount: 3,
          currency: 'USD',
          receiver_name: 'Sokha Chan',
        });
      });

      it('answers USED for a pre-transfer confirmed before', async () => {
        const created = expectSuccess(partner, await partner.gateway(createBody({ amount: 1 })), CREATED_FIELDS);
        const confirm = { service: CONFIRM, partner_transaction_id: reference('PTX'), pre_transfer_id: created.pre_transfer_id };
        expectSuccess(partner, await partner.gateway(confirm), CONFIRMED_FIELDS);
        expectError(partner, await partner.gateway({ ...confirm, partner_transaction_id: reference('PTX') }), 400, 'USED');
        expectError(partner, await partner.gateway(confirm), 400, 'USED');
      });

      it('answers NOTEXIST for an unknown pre_transfer_id', async () => {
        const reply = await partner.gateway({ service: CONFIRM, partner_transaction_id: reference('PTX'), pre_transfer_id: reference('PT') });
        expectError(partner, reply, 400, 'NOTEXIST');
      });

      it('answers VALIDATIONERROR for a missing partner_transaction_id', async () => {
        const created = expectSuccess(partner, await partner.gateway(createBody({ amount: 1 })), CREATED_FIELDS);
        expectError(partner, await partner.gateway({ service: CONFIRM, pre_transfer_id: created.pre_transfer_id }), 400, 'VALIDATIONERROR');
      });
    });

    describe(QUERY, () => {
      it('answers a confirmed transfer with result_code SUCCESS and fund_transfer_id', async () => {
        const { body, confirmed } = await createAndConfirm(2);
        const data = expectSuccess(
          partner,
          await partner.gateway({ service: QUERY, out_trade_no: body.out_trade_no }),
          ['result_code', 'fund_transfer_id', 'out_trade_no', 'amount', 'currency', 'receiver_id', 'receiver_name'],
        );
        expect(data).toMatchObject({
          result_code: 'SUCCESS',
          fund_transfer_id: confirmed.fund_transfer_id,
          out_trade_no: body.out_trade_no,
          amount: 2,
          currency: 'USD',
          receiver_id: receiverId,
          receiver_name: 'Sokha Chan',
        });
      });

      it('answers a transfer not yet confirmed without fund_transfer_id (result_code PENDING)', async () => {
        const body = createBody({ amount: 1 });
        expectSuccess(partner, await partner.gateway(body), CREATED_FIELDS);
        const data = expectSuccess(partner, await partner.gateway({ service: QUERY, out_trade_no: body.out_trade_no }), [
          'result_code', 'out_trade_no', 'amount', 'currency', 'receiver_id', 'receiver_name',
        ]);
        expect(data.result_code).toBe('PENDING');
        expect(data).not.toHaveProperty('fund_transfer_id');
      });

      it('answers NOTEXIST for an unknown out_trade_no, VALIDATIONERROR for a missing one', async () => {
        expectError(partner, await partner.gateway({ service: QUERY, out_trade_no: reference('NONE') }), 400, 'NOTEXIST');
        expectError(partner, await partner.gateway({ service: QUERY }), 400, 'VALIDATIONERROR');
      });
    });
  });

  describe('past expire_in (PRE_TRANSFER_TTL_SECONDS=1, ACCESS_TOKEN_TTL_SECONDS=2)', () => {
    let short: TestPlatform;
    let shortPartner: AreaAPartner;
    let shortReceiver: string;

    beforeAll(async () => {
      short = await startTestPlatform({ env: { PRE_TRANSFER_TTL_SECONDS: '1', ACCESS_TOKEN_TTL_SECONDS: '2' } });
      shortPartner = new AreaAPartner(short.facadeUrl, await registerPartner(short, '100.00'));
      shortReceiver = await registerUser(short);
    });
    afterAll(async () => {
      await expectLedgerBalanced(short);
      await short.stop();
    });

    it('answers an expired token 401 UNAUTHENTICATED, an expired pre-transfer EXPIRED to confirm and to query', async () => {
      const token = await shortPartner.token();
      expect(token.json.data.expire_in).toBe(2);
      const body = { service: CREATE, out_trade_no: reference('EXP'), receiver_id: shortReceiver, sender_name: 'Chan Vanna', amount: 5, currency: 'USD' };
      const created = expectSuccess(shortPartner, await shortPartner.gateway(body), CREATED_FIELDS);
      expect(created.expire_in).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expectUnauthenticated(await shortPartner.gateway({ service: QUERY, out_trade_no: body.out_trade_no }));
      expect((await shortPartner.token()).status).toBe(200);
      const confirm = await shortPartner.gateway({ service: CONFIRM, partner_transaction_id: reference('PTX'), pre_transfer_id: created.pre_transfer_id });
      expectError(shortPartner, confirm, 400, 'EXPIRED');
      expectError(shortPartner, await shortPartner.gateway({ service: QUERY, out_trade_no: body.out_trade_no }), 400, 'EXPIRED');
    });
  });
});
