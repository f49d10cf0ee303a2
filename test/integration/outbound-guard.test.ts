/**
 * No request of the platform's own reaches an inside address (docs/security.md "Outbound requests"): with the
 * guard closed (as in production, where neither OUTBOUND_ALLOWED_HOSTS nor OUTBOUND_ALLOW_PRIVATE_NETWORKS is set),
 * call-back URLs at loopback, private or metadata addresses are refused when given (400 on the field, in the
 * caller's envelope, nothing stored), and again when connecting, on the resolved address (DNS rebinding).
 * OUTBOUND_ALLOWED_HOSTS opens exactly its host:port pairs; OUTBOUND_ALLOW_PRIVATE_NETWORKS every private address
 * but metadata and the platform's own ports.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Code } from '@connectrpc/connect';
import { DomainError } from '../../src/errors';
import { createMerchant } from '../../src/onboarding/merchants';
import { readRpcFailure } from '../../src/rpc/errors';
import { createWebhookActivities } from '../../src/webhooks';
import { createOutboundPolicy, outboundOptionsFromConfig } from '../../src/web/outbound';
import { encryptField } from '../support/field-encryption';
import { activateBankAccount } from '../support/instruments';
import { onboardMerchantClient, type MerchantClient } from '../support/merchant-client';
import { eventually } from '../support/payin-setup';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** A local receiver recording `host path` of every request. */
async function startReceiver(): Promise<{ server: http.Server; port: number; received: string[] }> {
  const received: string[] = [];
  const server = http.createServer((incoming, response) => {
    received.push(`${incoming.headers.host} ${incoming.url}`);
    incoming.resume();
    response.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, received };
}

/** Tokenizes a bank account with `call_back` through the Area C façade; the raw response. */
async function tokenizeWithCallBack(platform: TestPlatform, merchant: MerchantClient, phone: string, callBack: string) {
  const user = (await merchant.action('create_user', { phone_number: phone, first_name: 'Sok', last_name: 'Dara', address: 'Phnom Penh', currency: 'USD' })).body.data;
  const banks = await merchant.action('list_banks', {});
  const publicKey = platform.deps.keys.fieldEncryption.publicKeyPem;
  return merchant.action('tokenize_bank_account', {
    user_id: user.id,
    holder_name: encryptField(publicKey, 'SOK DARA'),
    bank_id: banks.body.data.data[0].id,
    bank_number: encryptField(publicKey, '001234567'),
    call_back: callBack,
  });
}

const CALL_BACK_REFUSED = { success: false, code: 400, message: 'Bad Request', error: { call_back: ['The call_back must be a public http or https URL.'] } };

/** Records a pending webhook event for `callback_url` directly (as one stored before the guard or a DNS change). */
async function storedEvent(platform: TestPlatform, callback_url: string): Promise<string> {
  const { merchant: owner } = await createMerchant(platform.deps, { name: `Earlier ${Date.now()}`, callback_url: 'https://earlier.example/hook' });
  const id = `WH-GUARD-${Date.now()}-${Math.random().toString(16).slice(2)}`;
  await platform.deps.database('webhook_events').insert({
    id,
    merchant_id: owner.id,
    invoice_reference: 'PAYIN-GUARD',
    event: 'payin.success',
    body: '{}',
    callback_url,
    signature_header: 'X-Signature',
    status: 'pending',
  });
  return id;
}

describe('outbound guard closed', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    platform = await startTestPlatform({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false' } });
    merchant = (await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Guarded Shop')).client;
    await merchant.login();
  });
  afterAll(async () => {
    await platform?.stop();
    await new Promise((resolve) => receiver?.server.close(resolve));
  });

  it('refuses a tokenize call_back at 127.0.0.1 or 169.254.169.254 with 400 on call_back, and stores nothing', async () => {
    const before = await platform.deps.database('instruments').count('* as n').first();
    const callBacks = [`http://127.0.0.1:${receiver.port}/activated`, 'http://169.254.169.254/latest/meta-data/', 'http://[::1]/x', 'http://10.0.0.8/x', 'http://localhost/x'];
    for (const [index, callBack] of callBacks.entries()) {
      const response = await tokenizeWithCallBack(platform, merchant, `01260010${index}`, callBack);
      expect([callBack, response.status, response.body]).toEqual([callBack, 400, CALL_BACK_REFUSED]);
    }
    expect(await platform.deps.database('instruments').count('* as n').first()).toEqual(before);
    expect(receiver.received).toEqual([]);
  });

  it('refuses a preorder call_back_url at a private address', async () => {
    const seller = (await merchant.action('create_user', { phone_number: '012600111', first_name: 'Sell', last_name: 'Er', address: 'Phnom Penh', currency: 'USD' })).body.data;
    const response = await merchant.action('generate_pre_order_token', {
      out_trade_no: 'GUARD-1', seller_code: seller.wallet_ref, description: 'Coffee', amount: 1, currency: 'USD', call_back_url: 'http://192.168.1.20/paid',
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toEqual({ call_back_url: ['The call_back_url must be a public http or https URL.'] });
    expect(await platform.deps.database('preorders').where({ out_trade_no: 'GUARD-1' }).first()).toBeUndefined();
  });

  it('refuses a merchant callback_url at a private address at onboarding (function and admin RPC)', async () => {
    const refused = await createMerchant(platform.deps, { name: 'Inside', callback_url: `http://127.0.0.1:${receiver.port}/hook` }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DomainError);
    expect((refused as DomainError).fields).toEqual({ callback_url: ['callback_url must be a public http or https URL (private address)'] });
    const overRpc = await platform.clients.admin.createMerchant({ name: 'Inside RPC', callbackUrl: 'http://172.16.0.5/hook' }).catch((error: unknown) => error);
    expect(readRpcFailure(overRpc)).toMatchObject({ code: Code.InvalidArgument, fields: { callback_url: ['callback_url must be a public http or https URL (private address)'] } });
    expect(await platform.deps.database('merchants').whereIn('name', ['Inside', 'Inside RPC']).first()).toBeUndefined();
  });

  it('records a refused delivery attempt, sending nothing, for an event stored before the guard closed', async () => {
    const id = await storedEvent(platform, `http://127.0.0.1:${receiver.port}/hook`);
    const outcome = await createWebhookActivities(platform.deps).attemptWebhookDelivery({ webhook_id: id, next_retry_seconds: null });
    expect(outcome.delivered).toBe(false);
    const attempt = await platform.deps.database('webhook_delivery_attempts').where({ webhook_id: id }).first();
    expect(attempt).toMatchObject({ status_code: null, error: 'destination refused: private address' });
    expect(receiver.received).toEqual([]);
  });

  it('fails the delivery attempt of a name that resolves to loopback when connecting (DNS rebinding), sending nothing', async () => {
    // The platform's own policy, with a resolver under which a name that looked public now answers 127.0.0.1.
    const rebinding = createOutboundPolicy({
      ...outboundOptionsFromConfig(platform.config),
      lookup: ((_host: string, _options: unknown, callback: (error: null, addresses: Array<{ address: string; family: number }>) => void) =>
        callback(null, [{ address: '127.0.0.1', family: 4 }])) as never,
    });
    try {
      const url = `http://rebinding.example:${receiver.port}/hook`;
      expect(platform.deps.outbound.checkUrl(url)).toBeUndefined();
      const id = await storedEvent(platform, url);
      const outcome = await createWebhookActivities({ ...platform.deps, outbound: rebinding }).attemptWebhookDelivery({ webhook_id: id, next_retry_seconds: null });
      expect(outcome.delivered).toBe(false);
      const attempts = await platform.deps.database('webhook_delivery_attempts').where({ webhook_id: id });
      expect(attempts).toEqual([expect.objectContaining({ attempt: 1, status_code: null, error: 'destination refused: private address' })]);
      expect(receiver.received).toEqual([]);
    } finally {
      await rebinding.close();
    }
  });
});

describe('outbound guard with OUTBOUND_ALLOWED_HOSTS', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let other: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    [receiver, other] = await Promise.all([startReceiver(), startReceiver()]);
    platform = await startTestPlatform({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false', OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${receiver.port}` } });
    merchant = (await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Listed Shop')).client;
    await merchant.login();
  });
  afterAll(async () => {
    await platform?.stop();
    await Promise.all([receiver, other].map((item) => new Promise((resolve) => item?.server.close(resolve))));
  });

  it('opens exactly the listed host:port: its call_back is accepted and called, another port or name is refused', async () => {
    for (const [index, callBack] of [`http://127.0.0.1:${other.port}/activated`, `http://localhost:${receiver.port}/activated`, 'http://169.254.169.254/'].entries()) {
      const response = await tokenizeWithCallBack(platform, merchant, `01270010${index}`, callBack);
      expect([callBack, response.status, response.body]).toEqual([callBack, 400, CALL_BACK_REFUSED]);
    }
    const accepted = await tokenizeWithCallBack(platform, merchant, '012700109', `http://127.0.0.1:${receiver.port}/activated`);
    expect(accepted.status).toBe(200);
    await activateBankAccount(platform, accepted.body.data.token);
    await eventually(async () => receiver.received.length > 0);
    expect(receiver.received).toEqual([`127.0.0.1:${receiver.port} /activated`]);
    expect(other.received).toEqual([]);
  });

  it('accepts a merchant callback_url at the listed host:port at onboarding and refuses another port', async () => {
    await expect(createMerchant(platform.deps, { name: 'Listed', callback_url: `http://127.0.0.1:${receiver.port}/hook` })).resolves.toBeDefined();
    await expect(createMerchant(platform.deps, { name: 'Unlisted', callback_url: `http://127.0.0.1:${other.port}/hook` })).rejects.toBeInstanceOf(DomainError);
  });
});

describe('outbound guard with OUTBOUND_ALLOW_PRIVATE_NETWORKS=true', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;

  beforeAll(async () => {
    platform = await startTestPlatform({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' } });
    merchant = (await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Open Shop')).client;
    await merchant.login();
  });
  afterAll(() => platform?.stop());

  it('still refuses metadata addresses and the platform’s own ports (bound on free ports)', async () => {
    const facadePort = new URL(platform.facadeUrl).port;
    const rpcPort = new URL(platform.rpcUrl).port;
    const callBacks = ['http://169.254.169.254/latest/meta-data/', 'http://[fd00:ec2::254]/', 'http://[::ffff:a9fe:a9fe]/', `http://127.0.0.1:${facadePort}/x`, `http://localhost:${rpcPort}/x`];
    for (const [index, callBack] of callBacks.entries()) {
      const response = await tokenizeWithCallBack(platform, merchant, `01280010${index}`, callBack);
      expect([callBack, response.status, response.body]).toEqual([callBack, 400, CALL_BACK_REFUSED]);
    }
    const refused = await createMerchant(platform.deps, { name: 'Metadata', callback_url: 'http://169.254.169.254/latest/meta-data/iam/' }).catch((error: unknown) => error);
    expect((refused as DomainError).fields).toEqual({ callback_url: ['callback_url must be a public http or https URL (metadata address)'] });
    const id = await storedEvent(platform, 'http://169.254.169.254/latest/meta-data/');
    expect((await createWebhookActivities(platform.deps).attemptWebhookDelivery({ webhook_id: id, next_retry_seconds: null })).delivered).toBe(false);
    expect(await platform.deps.database('webhook_delivery_attempts').where({ webhook_id: id }).first()).toMatchObject({ error: 'destination refused: metadata address' });
  });
});
