/**
 * Split operator powers, credentials bound to one owner, and the audit trail (docs/security.md, "Internal RPC" and
 * "Audit trail"), over the real network port as each credential's holder would call it.
 */
import { Code } from '@connectrpc/connect';
import { createPartner, createUser } from '../../src/onboarding';
import { createPlatformClients, type PlatformClients } from '../../src/rpc/clients';
import { redacted } from '../../src/rpc/audit';
import { readRpcFailure } from '../../src/rpc/errors';
import { createServiceCredential } from '../../src/service-credentials';
import { generatePartnerKeys } from '../support/partner-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';

let platform: TestPlatform;
let partnerId: string;
let otherPartnerId: string;
let userId: string;
let sequence = 0;
const nextRef = (prefix: string) => `${prefix}${Date.now()}${(sequence += 1)}`;

async function clientsWith(scopes: string[]): Promise<{ clients: PlatformClients; id: string }> {
  const created = await createServiceCredential(platform.deps.database, { name: `test ${scopes.join(' ')}`, scopes });
  return { clients: createPlatformClients(platform.rpcUrl, { credentials: { token: created.token } }), id: created.id };
}

async function outcome(work: Promise<unknown>): Promise<string> {
  return work.then(
    () => 'ok',
    (error: unknown) => Code[readRpcFailure(error).code]!,
  );
}

const CLIENT = { headers: { 'X-Client-Address': '203.0.113.9' } };

beforeAll(async () => {
  platform = await startTestPlatform({ roles: ['api', 'worker'] });
  const keys = generatePartnerKeys();
  partnerId = (await createPartner(platform.deps, { name: 'Bound Partner', public_key_pem: keys.publicKeyPem, float_units: 100_000n })).partner.id;
  otherPartnerId = (await createPartner(platform.deps, { name: 'Other Partner', public_key_pem: keys.publicKeyPem, float_units: 100_000n })).partner.id;
  userId = (await createUser(platform.deps, { phone_number: '012881001', first_name: 'Scope', last_name: 'User', currency: 'USD' })).id;
});
afterAll(() => platform.stop());

describe('operator powers are split', () => {
  const credit = (reference: string) => ({ owner: { userId }, amount: '5.00', currency: 'USD', reference });

  it('admin no longer mints, manages credentials or writes the ledger; each needs its own scope', async () => {
    const { clients: admin } = await clientsWith(['admin']);
    const { clients: mint } = await clientsWith(['mint']);
    const { clients: credentials } = await clientsWith(['credentials']);
    const { clients: ledger } = await clientsWith(['ledger-write']);
    const nothing = { idempotencyKey: nextRef('L'), description: 'x', postings: [{ accountId: 'a', amountUnits: -1n }, { accountId: 'b', amountUnits: 1n }] };
    expect({
      adminCredit: await outcome(admin.admin.creditWallet(credit(nextRef('A')))),
      adminFundedPartner: await outcome(admin.admin.createPartner({ name: 'Funded', publicKeyPem: generatePartnerKeys().publicKeyPem, floatAmount: '10.00' })),
      adminPartner: await outcome(admin.admin.createPartner({ name: 'Unfunded', publicKeyPem: generatePartnerKeys().publicKeyPem })),
      adminListCredentials: await outcome(admin.admin.listServiceCredentials({})),
      adminCreateCredential: await outcome(admin.admin.createServiceCredential({ name: 'x', scopes: ['admin'] })),
      adminRotate: await outcome(admin.admin.rotateDataKey({ resealOnly: true })),
      adminLedgerWrite: await outcome(admin.ledger.transfer(nothing)),
      adminCheck: await outcome(admin.admin.checkLedger({})),
      mintCredit: await outcome(mint.admin.creditWallet(credit(nextRef('M')))),
      mintCheck: await outcome(mint.admin.checkLedger({})),
      credentialsList: await outcome(credentials.admin.listServiceCredentials({})),
      credentialsCredit: await outcome(credentials.admin.creditWallet(credit(nextRef('C')))),
      ledgerWrite: await outcome(ledger.ledger.transfer(nothing)),
      ledgerCredit: await outcome(ledger.admin.creditWallet(credit(nextRef('W')))),
    }).toEqual({
      adminCredit: 'PermissionDenied',
      adminFundedPartner: 'PermissionDenied',
      adminPartner: 'ok',
      adminListCredentials: 'PermissionDenied',
      adminCreateCredential: 'PermissionDenied',
      adminRotate: 'PermissionDenied',
      adminLedgerWrite: 'PermissionDenied',
      adminCheck: 'ok',
      mintCredit: 'ok',
      mintCheck: 'PermissionDenied',
      credentialsList: 'ok',
      credentialsCredit: 'PermissionDenied',
      // Past the scope check: the ledger itself refuses the unknown accounts.
      ledgerWrite: 'NotFound',
      ledgerCredit: 'PermissionDenied',
    });
  });

  it("names the minting credential in the credit's ledger metadata", async () => {
    const { clients: mint, id } = await clientsWith(['mint']);
    const answer = await mint.admin.creditWallet(credit(nextRef('META')));
    const row = await platform.deps.database('ledger_transactions').where({ id: answer.transactionRef }).first('metadata');
    expect(row.metadata).toMatchObject({ source: 'admin', credential_id: id });
  });

  it("names the minting credential in a funded partner float's ledger metadata", async () => {
    const { clients: mint, id } = await clientsWith(['mint', 'admin']);
    const created = await mint.admin.createPartner({ name: 'Funded Partner', publicKeyPem: generatePartnerKeys().publicKeyPem, floatAmount: '25.00' });
    const row = await platform.deps.database('ledger_transactions').where({ idempotency_key: `partner:${created.partnerId}:initial-float` }).first('metadata');
    expect(row.metadata).toMatchObject({ partner_id: created.partnerId, source: 'onboarding', credential_id: id });
  });
});

describe('credentials bound to an owner', () => {
  it('are created only for an existing partner or merchant, with a well-formed scope', async () => {
    const { clients } = await clientsWith(['credentials']);
    const refused = async (scopes: string[]) => (await clients.admin.createServiceCredential({ name: 'bound', scopes }).catch(readRpcFailure)) as { code?: Code; fields?: object };
    expect(await refused(['partner:PNOSUCHPARTNER'])).toMatchObject({ code: Code.InvalidArgument, fields: { scopes: [expect.stringContaining('no such partner')] } });
    expect(await refused(['merchant:MNOSUCHMERCHANT'])).toMatchObject({ code: Code.InvalidArgument, fields: { scopes: [expect.stringContaining('no such merchant')] } });
    expect(await refused(['partner:'])).toMatchObject({ code: Code.InvalidArgument, fields: { scopes: [expect.stringContaining('unknown scope')] } });
    expect(await refused(['superuser'])).toMatchObject({ code: Code.InvalidArgument, fields: { scopes: [expect.stringContaining('unknown scope')] } });
    const bound = await clients.admin.createServiceCredential({ name: 'payouts service', scopes: [`partner:${partnerId}`] });
    expect(bound.scopes).toEqual([`partner:${partnerId}`]);
  });

  it("move their own partner's money through the typed RPCs, and no one else's", async () => {
    const { clients } = await clientsWith([`partner:${partnerId}`]);
    const float = async (id: string) => (await platform.deps.database('partners').where({ id }).first('float_account_id')).float_account_id as string;
    const wallet = (await platform.deps.database('users').where({ id: userId }).first('wallet_account_id')).wallet_account_id as string;
    const walletBefore = (await platform.deps.ledger.getAccount(wallet)).posted_units;
    const otherBefore = await platform.deps.ledger.getAccount(await float(otherPartnerId));
    const request = { outTradeNo: nextRef('BOUND'), receiverId: userId, senderName: 'Payouts', amountUnits: 250n, currency: 'USD' };
    const created = await clients.transfer.createPreTransfer({ partnerId, ...request }, CLIENT);
    const confirmed = await clients.transfer.confirmPreTransfer({ partnerId, preTransferId: created.preTransfer!.preTransferId, partnerTransactionId: nextRef('BT') }, CLIENT);
    expect(confirmed.preTransfer?.fundTransferId).toMatch(/^FT/);
    expect((await clients.transfer.queryTransfer({ partnerId, outTradeNo: request.outTradeNo })).preTransfer?.fundTransferId).toBe(confirmed.preTransfer?.fundTransferId);
    expect((await platform.deps.ledger.getAccount(wallet)).posted_units).toBe(walletBefore + 250n);
    // The same credential for another partner, and for powers it does not hold.
    expect(await outcome(clients.transfer.createPreTransfer({ partnerId: otherPartnerId, ...request, outTradeNo: nextRef('OTHER') }))).toBe('PermissionDenied');
    expect(await outcome(clients.transfer.queryTransfer({ partnerId: otherPartnerId, outTradeNo: request.outTradeNo }))).toBe('PermissionDenied');
    expect(await outcome(clients.transfer.gateway({ authorization: '', body: '{}' }))).toBe('PermissionDenied');
    expect(await outcome(clients.admin.creditWallet({ owner: { partnerId }, amount: '1', currency: 'USD', reference: nextRef('R') }))).toBe('PermissionDenied');
    const otherAfter = await platform.deps.ledger.getAccount(await float(otherPartnerId));
    expect([otherAfter.posted_units, otherAfter.held_units]).toEqual([otherBefore.posted_units, otherBefore.held_units]);
  });
});

describe('the audit trail', () => {
  const recordsOf = (credential_id: string) => platform.deps.database('audit_records').where({ credential_id }).orderBy('id');

  it('records a privileged call with its credential, its own address (not the one it claims), arguments and outcome, refused ones too', async () => {
    const { clients: mint, id: mintId } = await clientsWith(['mint']);
    const { clients: admin, id: adminId } = await clientsWith(['admin']);
    const reference = nextRef('AUD');
    await mint.admin.creditWallet({ owner: { userId }, amount: '2.50', currency: 'USD', reference }, CLIENT);
    await admin.admin.creditWallet({ owner: { userId }, amount: '9.00', currency: 'USD', reference: nextRef('NO') }, CLIENT).catch(() => undefined);
    // A read is not privileged: not recorded.
    await admin.admin.checkLedger({});
    expect(await recordsOf(mintId)).toEqual([
      expect.objectContaining({
        credential_id: mintId,
        caller_address: expect.stringMatching(/127\.0\.0\.1$/),
        // Only the façade states an end client's address: an operator's X-Client-Address is not believed.
        client_address: expect.stringMatching(/127\.0\.0\.1$/),
        procedure: 'payments.admin.v1.AdminService/CreditWallet',
        arguments: { owner: { user_id: userId }, amount: '2.50', currency: 'USD', reference },
        outcome: 'ok',
      }),
    ]);
    expect(await recordsOf(adminId)).toEqual([
      expect.objectContaining({ procedure: 'payments.admin.v1.AdminService/CreditWallet', outcome: 'PERMISSION_DENIED', arguments: expect.objectContaining({ amount: '9.00' }) }),
    ]);
  });

  it('records credential management without the token, and every call of an owner-bound credential', async () => {
    const { clients: credentials, id: managerId } = await clientsWith(['credentials']);
    const created = await credentials.admin.createServiceCredential({ name: 'bound two', scopes: [`partner:${partnerId}`] });
    const bound = createPlatformClients(platform.rpcUrl, { credentials: { token: created.token } });
    await bound.transfer.queryTransfer({ partnerId, outTradeNo: 'NEVERSENT1' }).catch(() => undefined);
    await credentials.admin.revokeServiceCredential({ credentialId: created.credentialId });
    const managed = await recordsOf(managerId);
    expect(managed.map((record: { procedure: string; outcome: string }) => [record.procedure, record.outcome])).toEqual([
      ['payments.admin.v1.AdminService/CreateServiceCredential', 'ok'],
      ['payments.admin.v1.AdminService/RevokeServiceCredential', 'ok'],
    ]);
    expect(JSON.stringify(managed.map((record: { arguments: unknown }) => record.arguments))).not.toContain(created.token.slice(-20));
    expect(await recordsOf(created.credentialId)).toEqual([
      expect.objectContaining({ procedure: 'payments.transfer.v1.TransferService/QueryTransfer', outcome: 'TRANSFER_NOT_FOUND', arguments: { partner_id: partnerId, out_trade_no: 'NEVERSENT1' } }),
    ]);
  });

  it('is append-only: the database refuses UPDATE, DELETE and TRUNCATE', async () => {
    const { clients: mint } = await clientsWith(['mint']);
    await mint.admin.creditWallet({ owner: { userId }, amount: '1.00', currency: 'USD', reference: nextRef('AO') });
    const refusal = (work: Promise<unknown>) => work.then(() => 'allowed', (error: Error) => error.message);
    expect(await refusal(platform.deps.database('audit_records').update({ outcome: 'ok' }))).toMatch(/append-only: UPDATE refused/);
    expect(await refusal(platform.deps.database('audit_records').delete())).toMatch(/append-only: DELETE refused/);
    expect(await refusal(platform.deps.database.raw('TRUNCATE audit_records'))).toMatch(/append-only: TRUNCATE refused/);
    expect(Number((await platform.deps.database('audit_records').count('* as n').first())!.n)).toBeGreaterThan(0);
  });

  it('keeps secrets and payment data out of the recorded arguments', () => {
    expect(
      redacted({
        name: 'ops',
        caller: { merchant_secret_key: 'k', session_token: 't', sign: 's', request_id: 'r1' },
        card_number: '4242424242424242',
        security_code: '123',
        idempotency_key: 'idem-1',
        public_key_pem: 'P'.repeat(500),
        empty_password: '',
      }),
    ).toEqual({
      name: 'ops',
      caller: { merchant_secret_key: '[redacted]', session_token: '[redacted]', sign: '[redacted]', request_id: 'r1' },
      card_number: '[redacted]',
      security_code: '[redacted]',
      idempotency_key: 'idem-1',
      public_key_pem: `${'P'.repeat(64)}…[500 characters]`,
      empty_password: '',
    });
  });
});
