/**
 * Money moves for a partner only on that partner's proof (docs/security.md, "Area A"), tried as an attacker would:
 *
 *   - with only the façade's service credential (or an operator's), naming a victim partner's id to the typed
 *     TransferService RPCs over the network, and through the in-process façade transport;
 *   - with a `confirm` Update sent straight to the Temporal frontend for a pre-transfer the partner never confirmed;
 *   - with a signed body whose amount text is not the decimal its signature covers.
 *
 * And the façade's side of the gateway: one RPC per gateway request, which verifies the partner's token and signature
 * and returns the signed answer itself.
 */
import { Code } from '@connectrpc/connect';
import { createLogger } from '../../src/logger';
import { createPartner, createUser, type User } from '../../src/onboarding';
import { createServices } from '../../src/platform';
import { createPlatformClients, type PlatformClients } from '../../src/rpc/clients';
import { readRpcFailure } from '../../src/rpc/errors';
import { createRoutes } from '../../src/rpc/routes';
import { createInProcessTransport } from '../../src/rpc/server';
import { createServiceCredential } from '../../src/service-credentials';
import { generatePartnerKeys, PartnerClient, type GatewayReply } from '../support/partner-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';

let platform: TestPlatform;
let partner: PartnerClient;
let floatAccountId: string;
let receiver: User;
let sequence = 0;

const nextRef = (prefix: string) => `${prefix}${Date.now()}${(sequence += 1)}`;

async function failureOf(work: Promise<unknown>) {
  return work.then(
    (answer) => ({ answered: answer }),
    (error: unknown) => readRpcFailure(error),
  );
}

/** Posted and held units of the partner float and the receiver's wallet: what an attack must leave unchanged. */
async function balances() {
  const float = await platform.deps.ledger.getAccount(floatAccountId);
  const wallet = await platform.deps.ledger.getAccount(receiver.wallet_account_id);
  return { float_posted: float.posted_units, float_held: float.held_units, wallet: wallet.posted_units };
}

function dataOf(reply: GatewayReply): Record<string, string> {
  expect({ status: reply.status, signValid: reply.signValid }).toEqual({ status: 200, signValid: true });
  const data = reply.body.data as Record<string, unknown>;
  return Object.fromEntries(Object.entries(data).map(([key, value]) => [key, String(value)]));
}

beforeAll(async () => {
  platform = await startTestPlatform({ inProcess: true }); // counts RPCs in this process's metrics: never the cluster's
  const keys = generatePartnerKeys();
  const created = await createPartner(platform.deps, { name: 'Victim Partner', public_key_pem: keys.publicKeyPem, float_units: 1_000_000n });
  floatAccountId = created.partner.float_account_id;
  partner = new PartnerClient(platform.facadeUrl, created.credentials, keys, platform.deps.keys.publicKeyPem);
  expect((await partner.token()).status).toBe(200);
  receiver = await createUser(platform.deps, { phone_number: '012880001', first_name: 'Mallory', last_name: 'Thief', currency: 'USD' });
});
afterAll(() => platform.stop());

describe('the typed TransferService RPCs act only for a caller bound to the partner', () => {
  const attack = async (clients: PlatformClients) => {
    const before = await balances();
    const create = await failureOf(
      clients.transfer.createPreTransfer({
        partnerId: partner.credentials.partner_id,
        outTradeNo: nextRef('STEAL'),
        receiverId: receiver.id,
        senderName: 'Mallory',
        amountUnits: 90_000n,
        currency: 'USD',
      }),
    );
    // A pre-transfer the partner created itself, confirmed by the attacker with its own partner_transaction_id.
    const pre = dataOf(await partner.gateway({ service: 'create.unified.fundTransfer', out_trade_no: nextRef('OWN'), receiver_id: receiver.id, sender_name: 'Partner', amount: 3, currency: 'USD' }));
    const held = await balances();
    const confirm = await failureOf(
      clients.transfer.confirmPreTransfer({ partnerId: partner.credentials.partner_id, preTransferId: pre.pre_transfer_id!, partnerTransactionId: nextRef('STOLEN') }),
    );
    const query = await failureOf(clients.transfer.queryTransfer({ partnerId: partner.credentials.partner_id, outTradeNo: pre.out_trade_no! }));
    expect(await balances()).toEqual(held);
    expect(held).toEqual({ ...before, float_held: before.float_held + 300n });
    // The partner still confirms its own pre-transfer.
    expect(dataOf(await partner.gateway({ service: 'confirm.fundTransfer', pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('REAL') })).result_code).toBe('SUCCESS');
    return { create, confirm, query };
  };
  const refused = { code: Code.PermissionDenied };

  it('refuses the façade credential over the network: nothing is held or moved', async () => {
    const facade = await createServiceCredential(platform.deps.database, { name: 'stolen facade', scopes: ['facade'] });
    const outcome = await attack(createPlatformClients(platform.rpcUrl, { credentials: { token: facade.token, tls: platform.rpcTls } }));
    expect(outcome).toEqual({ create: expect.objectContaining(refused), confirm: expect.objectContaining(refused), query: expect.objectContaining(refused) });
  });

  it('refuses an operator credential too', async () => {
    const operator = await createServiceCredential(platform.deps.database, { name: 'rogue operator', scopes: ['admin'] });
    const outcome = await attack(createPlatformClients(platform.rpcUrl, { credentials: { token: operator.token, tls: platform.rpcTls } }));
    expect(outcome).toEqual({ create: expect.objectContaining(refused), confirm: expect.objectContaining(refused), query: expect.objectContaining(refused) });
  });

  it('refuses the in-process façade transport', async () => {
    const transport = createInProcessTransport(createRoutes(createServices(platform.deps)), createLogger('silent'));
    const outcome = await attack(createPlatformClients(transport));
    expect(outcome).toEqual({ create: expect.objectContaining(refused), confirm: expect.objectContaining(refused), query: expect.objectContaining(refused) });
  });
});

describe('a confirm Update sent straight to Temporal', () => {
  it('posts nothing, and the partner still confirms the pre-transfer', async () => {
    const pre = dataOf(await partner.gateway({ service: 'create.unified.fundTransfer', out_trade_no: nextRef('UPD'), receiver_id: receiver.id, sender_name: 'Partner', amount: 9, currency: 'USD' }));
    const before = await balances();
    const handle = platform.deps.temporal.client.workflow.getHandle(pre.pre_transfer_id!);
    const forged = await handle.executeUpdate('confirm', { args: [{ partner_transaction_id: nextRef('FORGED') }] }).then(
      () => 'posted',
      (error: Error) => error.message,
    );
    expect(forged).not.toBe('posted');
    expect(await balances()).toEqual(before);
    expect(await platform.deps.database('pre_transfers').where({ id: pre.pre_transfer_id }).first()).toMatchObject({ state: 'pending', fund_transfer_id: null });
    const confirmed = dataOf(await partner.gateway({ service: 'confirm.fundTransfer', pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('REAL') }));
    expect(confirmed.result_code).toBe('SUCCESS');
    expect(await balances()).toEqual({ ...before, float_posted: before.float_posted - 900n, float_held: before.float_held - 900n, wallet: before.wallet + 900n });
  });
});

describe('the signed amount', () => {
  it('is the decimal the platform moves: a number whose text is not its signed canonical decimal is an invalid sign', async () => {
    const before = await balances();
    const signed = partner.sign({ service: 'create.unified.fundTransfer', out_trade_no: nextRef('DEC'), receiver_id: receiver.id, sender_name: 'Partner', amount: 1.23, currency: 'USD' });
    // The same double as 1.23, so the signature over the canonical (ECMAScript) text still verifies; as a decimal it
    // is another amount.
    const text = JSON.stringify(signed).replace('"amount":1.23', '"amount":1.2300000000000000001');
    expect(Number('1.2300000000000000001')).toBe(1.23);
    const reply = await partner.gateway({}, { rawBody: text });
    expect({ status: reply.status, body: reply.body, signValid: reply.signValid }).toMatchObject({
      status: 400,
      body: { success: false, error_code: 'VALIDATIONERROR', error_desc: 'invalid sign' },
      signValid: true,
    });
    expect(await balances()).toEqual(before);
  });
});

describe('the façade makes one RPC per gateway request', () => {
  async function rpcCounts(): Promise<Map<string, number>> {
    const metric = await platform.deps.metrics!.rpcRequests.get();
    const counts = new Map<string, number>();
    for (const value of metric.values) {
      if (!value.metricName?.endsWith('_count')) continue;
      const procedure = String(value.labels.procedure);
      counts.set(procedure, (counts.get(procedure) ?? 0) + value.value);
    }
    return counts;
  }
  const delta = (after: Map<string, number>, before: Map<string, number>) =>
    Object.fromEntries([...after].filter(([procedure, count]) => count !== (before.get(procedure) ?? 0)).map(([procedure, count]) => [procedure, count - (before.get(procedure) ?? 0)]));

  it('answers create, confirm, query and a bad sign with one Gateway call each', async () => {
    const before = await rpcCounts();
    const pre = dataOf(await partner.gateway({ service: 'create.unified.fundTransfer', out_trade_no: nextRef('ONE'), receiver_id: receiver.id, sender_name: 'Partner', amount: 1, currency: 'USD' }));
    dataOf(await partner.gateway({ service: 'confirm.fundTransfer', pre_transfer_id: pre.pre_transfer_id, partner_transaction_id: nextRef('ONE') }));
    dataOf(await partner.gateway({ service: 'query.fundTransfer', out_trade_no: pre.out_trade_no }));
    const bad = await partner.gateway({ service: 'query.fundTransfer', out_trade_no: 'X1' }, { tamper: (body) => ({ ...body, out_trade_no: 'X2' }) });
    expect(bad.body).toMatchObject({ error_desc: 'invalid sign' });
    const unauthenticated = await partner.gateway({ service: 'query.fundTransfer', out_trade_no: 'X1' }, { token: 'nope' });
    expect(unauthenticated.status).toBe(401);
    expect(delta(await rpcCounts(), before)).toEqual({ 'payments.transfer.v1.TransferService/Gateway': 5 });
  });
});
