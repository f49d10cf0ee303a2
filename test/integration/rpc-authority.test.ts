/**
 * Who may say what over the internal RPC (docs/security.md "Internal RPC" and "Audit trail"), attacked as each
 * credential's holder would: only the façade states an end client's address; a credential bound to a merchant is
 * refused by the partner-only services before their handlers; the api's database role cannot write an audit row
 * itself, only through the stamping function; and a flood of refused privileged calls leaves a bounded number of
 * audit rows, the rest counted as dropped.
 */
import { Code } from '@connectrpc/connect';
import pg from 'pg';
import { clusterRoleNames, ensureRoles, grantPlatformDatabase, urlForRole } from '../../src/cli/cluster-database-roles';
import { createMerchant, type MerchantCredentials } from '../../src/onboarding/merchants';
import { mayCall } from '../../src/rpc/auth';
import { createPlatformClients, type PlatformClients } from '../../src/rpc/clients';
import { readRpcFailure } from '../../src/rpc/errors';
import { createServiceCredential } from '../../src/service-credentials';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** Refused privileged calls one credential gets audit rows for per window, in this file. */
const REFUSALS_RECORDED = 3;

let platform: TestPlatform;
let shopA: MerchantCredentials;
let shopB: MerchantCredentials;

async function clientsWith(scopes: string[]): Promise<{ clients: PlatformClients; id: string }> {
  const created = await createServiceCredential(platform.deps.database, { name: `attacker ${scopes.join(' ')}`, scopes });
  return { clients: createPlatformClients(platform.rpcUrl, { credentials: { token: created.token } }), id: created.id };
}

async function outcome(work: Promise<unknown>): Promise<string> {
  return work.then(
    () => 'ok',
    (error: unknown) => Code[readRpcFailure(error).code]!,
  );
}

beforeAll(async () => {
  platform = await startTestPlatform({
    roles: ['api', 'worker'],
    env: { AUTH_FAILURES_PER_CREDENTIAL: '5', AUDIT_REFUSALS_PER_CREDENTIAL: String(REFUSALS_RECORDED), AUDIT_REFUSAL_WINDOW_SECONDS: '600' },
  });
  shopA = (await createMerchant(platform.deps, { name: 'Shop A', callback_url: 'https://a.example/cb' })).credentials;
  shopB = (await createMerchant(platform.deps, { name: 'Shop B', callback_url: 'https://b.example/cb' })).credentials;
});
afterAll(() => platform.stop());

describe('the client address is the façade’s word only', () => {
  const A_ADDRESS = '198.51.100.23';

  it('a merchant:B credential naming A’s address locks nobody out there, and the audit shows B’s own address', async () => {
    const { clients, id } = await clientsWith([`merchant:${shopB.merchant_id}`]);
    for (let attempt = 0; attempt < 8; attempt++) {
      await outcome(clients.wallet.login({ envelope: { merchantId: shopA.merchant_id }, userName: shopA.api_user_name, password: 'wrong' }, { headers: { 'X-Client-Address': A_ADDRESS } }));
    }
    // Nothing was counted under A's address: A keeps logging in from there.
    const forged = await platform.deps.database('rate_limits').where('key', 'like', `%${A_ADDRESS}%`).pluck('key');
    expect(forged).toEqual([]);
    // B's failures count under B's own connection.
    const own = await platform.deps.database('rate_limits').where('key', 'like', `fail_pair:merchant_login:%|${shopA.merchant_id}`).pluck('key');
    expect(own).toEqual([expect.stringMatching(/127\.0\.0\.1\|/)]);
    const attempt = await platform.deps.abuse.beginAttempt('merchant_login', shopA.merchant_id, A_ADDRESS);
    await attempt.withdrawn();
    const records = await platform.deps.database('audit_records').where({ credential_id: id }).select('caller_address', 'client_address');
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) {
      expect(record.client_address).not.toBe(A_ADDRESS);
      expect(record.caller_address).toMatch(/127\.0\.0\.1$/);
    }
  });

  it('an operator credential cannot state one either', async () => {
    const { clients, id } = await clientsWith(['admin']);
    await outcome(clients.admin.creditWallet({ owner: { merchantId: shopA.merchant_id }, amount: '1.00', currency: 'USD', reference: `FORGE${Date.now()}` }, { headers: { 'X-Client-Address': A_ADDRESS } }));
    const [record] = await platform.deps.database('audit_records').where({ credential_id: id }).select('client_address');
    expect(record.client_address).not.toBe(A_ADDRESS);
  });

  it('the façade’s credential still states it', async () => {
    const { clients } = await clientsWith(['facade']);
    await outcome(clients.dashboard.signIn({ userName: shopA.api_user_name, password: 'wrong' }, { headers: { 'X-Client-Address': '203.0.113.201' } }));
    const keys = await platform.deps.database('rate_limits').where('key', 'like', 'fail_pair:%203.0.113.201%').pluck('key');
    expect(keys).toEqual([`fail_pair:merchant_login:203.0.113.201|${shopA.merchant_id}`]);
  });
});

describe('each service accepts only the owner kinds it serves', () => {
  it('refuses a merchant credential at the partner-only typed transfers, before the handler and its validation', async () => {
    const merchant = { id: 'cred_x', name: 'm', scopes: [`merchant:${shopB.merchant_id}` as const] };
    const partner = { id: 'cred_y', name: 'p', scopes: ['partner:P1' as const] };
    for (const method of ['CreatePreTransfer', 'ConfirmPreTransfer', 'QueryTransfer']) {
      expect([method, mayCall(merchant, 'payments.transfer.v1.TransferService', method)]).toEqual([method, false]);
      expect([method, mayCall(partner, 'payments.transfer.v1.TransferService', method)]).toEqual([method, true]);
    }
    // A partner credential at the merchant-only services.
    for (const service of ['payments.payin.v1.PayinService', 'payments.wallet.v1.WalletService', 'payments.deposit.v1.DepositService', 'payments.refund.v1.RefundService', 'payments.instrument.v1.InstrumentService']) {
      expect([service, mayCall(partner, service, 'Anything')]).toEqual([service, false]);
      expect([service, mayCall(merchant, service, 'Anything')]).toEqual([service, true]);
    }
    // Over the network: an empty request would fail validation past the scope check; it is refused first.
    const { clients } = await clientsWith([`merchant:${shopB.merchant_id}`]);
    expect(await outcome(clients.transfer.createPreTransfer({}))).toBe('PermissionDenied');
    expect(await outcome(clients.transfer.queryTransfer({}))).toBe('PermissionDenied');
  });
});

describe('audit rows are written only through the stamping function', () => {
  const roles = () => clusterRoleNames(platform.databaseName);
  let api: pg.Client | undefined;

  afterAll(async () => {
    await api?.end();
    // Roles are the server's: dropped with their privileges in this database (the database goes with the platform).
    await platform.deps.database.raw(`DROP OWNED BY "${roles().api}", "${roles().worker}"`).catch(() => undefined);
  });

  it('refuses the api role’s direct INSERT and stamps its role on a row it appends', async () => {
    const passwords = await ensureRoles(platform.deps.database, roles());
    await grantPlatformDatabase(platform.deps.database, platform.databaseName, roles());
    api = new pg.Client({ connectionString: urlForRole(platform.config.DATABASE_URL!, roles().api, passwords[roles().api]) });
    await api.connect();
    const forged = await api
      .query("INSERT INTO audit_records (credential_id, caller_address, procedure, arguments, outcome) VALUES ('cred_someone_else', '10.9.9.9', 'x/Y', '{}', 'ok')")
      .then(
        () => 'inserted',
        (error: { code?: string }) => error.code,
      );
    expect(forged).toBe('42501');
    const appended = await api.query("SELECT append_audit_record('cred_real', '127.0.0.1', NULL, 'x/Z', '{}'::jsonb, 'ok') AS id");
    const row = await platform.deps.database('audit_records').where({ id: appended.rows[0].id }).first();
    expect(row).toMatchObject({ credential_id: 'cred_real', procedure: 'x/Z', database_role: roles().api });
  });
});

describe('refused privileged calls are throttled per credential before their audit row', () => {
  it('a flood leaves a bounded number of audit rows and counts the dropped ones', async () => {
    const { clients, id } = await clientsWith(['admin']);
    const flood = 20;
    const answers = [];
    for (let call = 0; call < flood; call++) {
      answers.push(await outcome(clients.admin.creditWallet({ owner: { merchantId: shopA.merchant_id }, amount: '1.00', currency: 'USD', reference: `FLOOD${call}` })));
    }
    expect(new Set(answers)).toEqual(new Set(['PermissionDenied']));
    const rows = await platform.deps.database('audit_records').where({ credential_id: id }).count('* as n').first();
    expect(Number(rows!.n)).toBe(REFUSALS_RECORDED);
    const dropped = await platform.deps.metrics!.registry.getSingleMetric('payments_audit_refusals_dropped_total')!.get();
    const creditDropped = dropped.values.find((value) => value.labels.procedure === 'payments.admin.v1.AdminService/CreditWallet');
    expect(creditDropped?.value).toBeGreaterThanOrEqual(flood - REFUSALS_RECORDED);
  });

  it('still records every privileged call that was not refused', async () => {
    const { clients, id } = await clientsWith(['admin']);
    for (let call = 0; call < REFUSALS_RECORDED + 2; call++) await clients.admin.createPartner({ name: `Audited ${call}`, publicKeyPem: '' }).catch(() => undefined);
    const rows = await platform.deps.database('audit_records').where({ credential_id: id }).whereNot({ outcome: 'PERMISSION_DENIED' }).count('* as n').first();
    expect(Number(rows!.n)).toBe(REFUSALS_RECORDED + 2);
  });
});
