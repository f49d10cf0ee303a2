/**
 * A preorder's call_back_url (interface "Area C" generate_pre_order_token; docs/area-c.md "Preorders") is told once,
 * through the platform's durable signed webhook sender, that the preorder was paid.
 */
import { Webhook } from 'standardwebhooks';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { onboardMerchantClient, type MerchantClient } from '../support/merchant-client';
import { startMerchantReceiver, type MerchantReceiver } from '../support/merchant-receiver';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { fundUser } from '../support/wallets';

describe('preorder call_back_url', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let hmacSecret: string;
  let receiver: MerchantReceiver;

  beforeAll(async () => {
    platform = await startTestPlatform({ env: { WEBHOOK_RETRY_INITIAL_SECONDS: '0.2' } });
    const onboarded = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Preorder Shop');
    merchant = onboarded.client;
    await merchant.login();
    hmacSecret = onboarded.credentials.hmac_secret;
    receiver = await startMerchantReceiver({ hmac_secret: hmacSecret });
  });
  afterAll(async () => {
    await receiver.close();
    await platform.stop();
  });

  async function createUser(phone: string) {
    const response = await merchant.action('create_user', { phone_number: phone, first_name: 'Sok', last_name: 'Dara', address: 'Phnom Penh', currency: 'USD' });
    expect(response.body).toMatchObject({ success: true });
    return response.body.data as { id: number; wallet_ref: string };
  }

  it('announces preorder.paid to the call_back_url once, signed, with a stable X-Webhook-Id', async () => {
    const seller = await createUser('012300001');
    const payer = await createUser('012300002');
    await fundUser(platform, payer.id, 5_000n);
    const created = await merchant.action('generate_pre_order_token', {
      out_trade_no: 'CB-ORDER-1', seller_code: seller.wallet_ref, description: 'Tea', amount: 12.5, currency: 'USD',
      call_back_url: `${receiver.url}/preorders`,
    });
    expect(created.status).toBe(200);
    const token = created.body.data.pre_order_token as string;
    const paid = await merchant.action('pay_by_token', { pre_order_token: token, user_id: payer.id });
    expect(paid.status).toBe(200);

    const [delivery] = await receiver.waitFor((received) => received.length >= 1, 15_000);
    expect(JSON.parse(delivery!.body)).toEqual({
      event: 'preorder.paid',
      pre_order_token: token,
      out_trade_no: 'CB-ORDER-1',
      amount: 12.5,
      currency: 'USD',
      reference: paid.body.data.reference,
      status: 'paid',
    });
    expect(delivery!.headers['x-signature']).toBe(hmacSha256Hex(hmacSecret, delivery!.body));
    expect(delivery!.webhook_id).toBe(`WH-PO-${token}`);
    expect(delivery!.headers['x-webhook-event']).toBe('preorder.paid');
    // Standard Webhooks headers, verified with the standard library keyed with the same secret bytes (raw format).
    const standard = new Webhook(hmacSecret, { format: 'raw' });
    const headers = {
      'webhook-id': String(delivery!.headers['webhook-id']),
      'webhook-timestamp': String(delivery!.headers['webhook-timestamp']),
      'webhook-signature': String(delivery!.headers['webhook-signature']),
    };
    expect(headers['webhook-id']).toBe(`WH-PO-${token}`);
    expect(() => standard.verify(delivery!.body, headers)).not.toThrow();
    // A replay under another id, or with a timestamp moved, fails verification.
    expect(() => standard.verify(delivery!.body, { ...headers, 'webhook-id': `WH-PO-${token}-again` })).toThrow();
    expect(() => standard.verify(delivery!.body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 600) })).toThrow();

    const again = await merchant.action('pay_by_token', { pre_order_token: token, user_id: payer.id });
    expect(again.status).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.received).toHaveLength(1);
    const event = await platform.deps.database('webhook_events').where({ id: `WH-PO-${token}` }).first();
    expect(event).toMatchObject({ status: 'delivered', event: 'preorder.paid', callback_url: `${receiver.url}/preorders` });
  });
});
