/**
 * No request of the platform's own reaches an inside address (docs/security.md "Outbound requests"): with the
 * guard closed (as in production, where neither OUTBOUND_ALLOWED_HOSTS nor OUTBOUND_ALLOW_PRIVATE_NETWORKS is set),
 * call-back URLs at loopback, private or metadata addresses are refused when given (400 on the field, in the
 * caller's envelope, nothing stored), and again when connecting, on the resolved address (DNS rebinding).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { DomainError } from '../../src/errors';
import { createMerchant } from '../../src/onboarding/merchants';
import { createWebhookActivities } from '../../src/webhooks/activities';
import { createOutboundPolicy, OutboundRefusedError } from '../../src/web/outbound';
import { encryptField } from '../support/field-encryption';
import { onboardMerchantClient, type MerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';

describe('outbound guard', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let receiver: http.Server;
  let receiverPort: number;
  const received: string[] = [];

  beforeAll(async () => {
    receiver = http.createServer((incoming, response) => {
      received.push(incoming.url ?? '');
      response.writeHead(204).end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverPort = (receiver.address() as AddressInfo).port;
    platform = await startTestPlatform({ env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false' } });
    merchant = (await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Guarded Shop')).client;
    await merchant.login();
  });
  afterAll(async () => {
    await platform?.stop();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it('refuses a tokenize call_back at 127.0.0.1 or 169.254.169.254 with 400 on call_back, and stores nothing', async () => {
    const user = (await merchant.action('create_user', { phone_number: '012600100', first_name: 'Sok', last_name: 'Dara', address: 'Phnom Penh', currency: 'USD' })).body.data;
    const banks = await merchant.action('list_banks', {});
    const publicKey = platform.deps.keys.fieldEncryption.publicKeyPem;
    const before = await platform.deps.database('instruments').count('* as n').first();
    for (const callBack of [`http://127.0.0.1:${receiverPort}/activated`, 'http://169.254.169.254/latest/meta-data/', 'http://[::1]/x', 'http://10.0.0.8/x']) {
      const response = await merchant.action('tokenize_bank_account', {
        user_id: user.id,
        holder_name: encryptField(publicKey, 'SOK DARA'),
        bank_id: banks.body.data.data[0].id,
        bank_number: encryptField(publicKey, '001234567'),
        call_back: callBack,
      });
      expect([callBack, response.status, response.body]).toEqual([
        callBack,
        400,
        { success: false, code: 400, message: 'Bad Request', error: { call_back: ['The call_back must be a public http or https URL.'] } },
      ]);
    }
    expect(await platform.deps.database('instruments').count('* as n').first()).toEqual(before);
  });

  it('refuses a preorder call_back_url at a private address', async () => {
    const seller = (await merchant.action('create_user', { phone_number: '012600101', first_name: 'Sell', last_name: 'Er', address: 'Phnom Penh', currency: 'USD' })).body.data;
    const response = await merchant.action('generate_pre_order_token', {
      out_trade_no: 'GUARD-1', seller_code: seller.wallet_ref, description: 'Coffee', amount: 1, currency: 'USD', call_back_url: 'http://192.168.1.20/paid',
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toEqual({ call_back_url: ['The call_back_url must be a public http or https URL.'] });
    expect(await platform.deps.database('preorders').where({ out_trade_no: 'GUARD-1' }).first()).toBeUndefined();
  });

  it('refuses a merchant callback_url at a private address at onboarding', async () => {
    const refused = await createMerchant(platform.deps, { name: 'Inside', callback_url: `http://127.0.0.1:${receiverPort}/hook` }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DomainError);
    expect((refused as DomainError).fields).toEqual({ callback_url: ['callback_url must be a public http or https URL (private address)'] });
  });

  it('records a refused delivery attempt, sending nothing, for an event stored before the guard closed', async () => {
    const { merchant: owner } = await createMerchant(platform.deps, { name: 'Earlier', callback_url: 'https://earlier.example/hook' });
    const id = `WH-GUARD-${Date.now()}`;
    await platform.deps.database('webhook_events').insert({
      id,
      merchant_id: owner.id,
      invoice_reference: 'PAYIN-GUARD',
      event: 'payin.success',
      body: '{}',
      callback_url: `http://127.0.0.1:${receiverPort}/hook`,
      signature_header: 'X-Signature',
      status: 'pending',
    });
    const outcome = await createWebhookActivities(platform.deps).attemptWebhookDelivery({ webhook_id: id });
    expect(outcome.delivered).toBe(false);
    const attempt = await platform.deps.database('webhook_delivery_attempts').where({ webhook_id: id }).first();
    expect(attempt).toMatchObject({ status_code: null, error: 'destination refused: private address' });
    expect(received).toEqual([]);
  });

  it('checks the resolved address when connecting, so a name rebound to 127.0.0.1 reaches nothing', async () => {
    // A name that looked public when it was stored and now resolves to loopback (DNS rebinding).
    const rebinding = createOutboundPolicy({
      allowPrivate: false,
      allowedHosts: new Set(),
      platformPorts: new Set(),
      requireHttps: false,
      lookup: ((_host: string, options: unknown, callback: (error: null, addresses: Array<{ address: string; family: number }>) => void) =>
        callback(null, [{ address: '127.0.0.1', family: 4 }])) as never,
    });
    try {
      const url = `http://rebinding.example:${receiverPort}/hook`;
      expect(rebinding.checkUrl(url)).toBeUndefined();
      const failure = await request(url, { dispatcher: rebinding.dispatcher, method: 'POST', body: '{}' }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(OutboundRefusedError);
      expect(received).toEqual([]);
    } finally {
      await rebinding.close();
    }
  });
});
