/**
 * Area B as the interface documents it (payment-services-interface.md "Area B", "Events", "Errors / Area B";
 * platform decisions §2, §4, §5 and §8), requests built from those documents only: B1, B2 and B3 with the merchant's
 * API key (`X-API-Key`, or `Api-Key` on B1) and the documented fields, and the webhooks B4 the merchant's callback
 * receives, verified with the merchant's hmac_secret as the interface says. The upstream payin server is the sandbox
 * of §4 behind a proxy that can fail. Changing one of these tests is a breaking change (docs/compatibility.md).
 */
import { randomBytes } from 'node:crypto';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { startPayinHarness, type PayinHarness } from '../support/payin-setup';
import { startMerchantReceiver, type ReceivedWebhook } from '../support/merchant-receiver';
import { AreaBMerchant, send, type Reply } from './support/clients';
import { admin, expectLedgerBalanced, registerMerchant } from './support/onboarding';
import { webhookSignatureValid } from './support/spec-signing';

const orderNo = () => `order-${randomBytes(6).toString('hex')}`;

/** The Area B failure body of platform decisions §8: exactly success false, message, errors. */
function expectFailure(reply: Reply, status: number, message: string | string[], errors: 'null' | string[]): void {
  expect(reply.status).toBe(status);
  expect(Object.keys(reply.json).sort()).toEqual(['errors', 'message', 'success']);
  expect(reply.json.success).toBe(false);
  expect(Array.isArray(message) ? message : [message]).toContain(reply.json.message);
  if (errors === 'null') {
    expect(reply.json.errors).toBeNull();
  } else {
    expect(Object.keys(reply.json.errors).sort()).toEqual([...errors].sort());
    for (const messages of Object.values(reply.json.errors)) {
      expect(messages).toEqual(expect.arrayContaining([expect.any(String)]));
    }
  }
}

// Webhook and lifetime tests wait for deliveries and timers: bounded by the platform's schedule, generously.
jest.setTimeout(300_000);

describe('Area B contract', () => {
  let harness: PayinHarness;
  let merchant: AreaBMerchant;
  let hmacSecret: string;

  /** B1 answered 200; its data. */
  async function createPayin(amount: number, extra: Record<string, unknown> = {}) {
    const reply = await merchant.payin({ amount, out_trade_no: orderNo(), ...extra });
    expect(reply.status).toBe(200);
    return reply.json.data as { invoice_reference: string; out_trade_no: string; amount: number; fee: number };
  }

  /** The webhooks received for a payin (matched by invoice_reference). */
  const webhooksOf = (invoice: string) => harness.receiver.received.filter((webhook) => webhook.json.data?.invoice_reference === invoice);

  async function webhookOf(invoice: string, status: string): Promise<ReceivedWebhook> {
    // A delivery's deadline is the platform's retry schedule, not this machine's speed: wait as long as a loaded
    // machine needs for the first attempts.
    await harness.receiver.waitFor(() => webhooksOf(invoice).some((webhook) => webhook.json.data.status === status), 120_000);
    return webhooksOf(invoice).find((webhook) => webhook.json.data.status === status)!;
  }

  beforeAll(async () => {
    harness = await startPayinHarness({ proxy: true, env: { PAYIN_TTL_SECONDS: '3' } });
    const credentials = await registerMerchant(harness.platform, harness.receiver.url);
    hmacSecret = credentials.hmac_secret;
    harness.receiver.configure({ hmac_secret: credentials.hmac_secret, signature_header: credentials.signature_header });
    expect(credentials.signature_header).toBe('X-Signature');
    merchant = new AreaBMerchant(harness.platform.facadeUrl, credentials.api_key);
  });
  afterAll(async () => {
    await expectLedgerBalanced(harness.platform);
    await harness.stop();
  });

  describe('B1 POST /api/v1/payins', () => {
    it('creates a payin: invoice, fee and QR data', async () => {
      const body = { amount: 10.5, currency: 'USDT', memo: 'Order 1', out_trade_no: orderNo() };
      const reply = await merchant.payin(body);
      expect(reply.status).toBe(200);
      expect(reply.json).toMatchObject({ success: true, code: 200 });
      expect(reply.json.data).toMatchObject({
        invoice_reference: expect.stringMatching(/^PAYIN-[A-Za-z0-9]+$/),
        amount: 10.5,
        currency: 'USDT',
        fee: expect.any(Number),
        qrcode: { content: expect.any(String), image: expect.any(String) },
        out_trade_no: body.out_trade_no,
      });
      expect(Buffer.from(reply.json.data.qrcode.image, 'base64').subarray(1, 4).toString('latin1')).toBe('PNG');
    });

    it('takes the key in Api-Key too, defaults currency to USDT, and forwards the body unchanged with its extra fields', async () => {
      const raw = `{"amount": 1.25, "out_trade_no": "${orderNo()}", "customer": {"id": 7}}`;
      const reply = await merchant.payin(raw, { 'Api-Key': merchant.apiKey });
      expect(reply.status).toBe(200);
      expect(reply.json.data.currency).toBe('USDT');
      expect(reply.headers.get('x-request-id')).toBeTruthy();
      // Decisions §4: the body byte for byte, with the upstream's key, the invoice reference and where to notify.
      const forwarded = harness.sandbox.received.at(-1)!;
      expect(forwarded.body).toBe(raw);
      expect(forwarded.headers).toMatchObject({
        'content-type': expect.stringMatching(/^application\/json/),
        authorization: 'Bearer test-upstream-key',
        'x-invoice-reference': reply.json.data.invoice_reference,
        'x-notify-url': `${harness.platform.config.PUBLIC_BASE_URL}/api/v1/upstream/notifications`,
      });
    });

    it('answers 422 "Validation errors" listing every missing or invalid field', async () => {
      expectFailure(await merchant.payin({}), 422, 'Validation errors', ['amount', 'out_trade_no']);
      expectFailure(await merchant.payin({ amount: 0.001, out_trade_no: orderNo() }), 422, 'Validation errors', ['amount']);
      expectFailure(await merchant.payin({ amount: 1.0000001, out_trade_no: orderNo() }), 422, 'Validation errors', ['amount']);
      expectFailure(await merchant.payin({ amount: 1, currency: 'USD', out_trade_no: orderNo() }), 422, 'Validation errors', ['currency']);
      expectFailure(await merchant.payin({ amount: 1, memo: 'm'.repeat(256), out_trade_no: orderNo() }), 422, 'Validation errors', ['memo']);
      expectFailure(await merchant.payin({ amount: 1, out_trade_no: 'o'.repeat(256) }), 422, 'Validation errors', ['out_trade_no']);
    });

    it('answers a duplicate out_trade_no of the merchant 422', async () => {
      const { out_trade_no } = await createPayin(2);
      expectFailure(await merchant.payin({ amount: 2, out_trade_no }), 422, 'Validation errors', ['out_trade_no']);
    });

    it('answers a missing or invalid key 401', async () => {
      expectFailure(await merchant.payin({ amount: 1, out_trade_no: orderNo() }, {}), 401, ['Unauthorized', 'Unauthenticated'], 'null');
      expectFailure(await merchant.payin({ amount: 1, out_trade_no: orderNo() }, { 'X-API-Key': 'pk_wrong' }), 401, ['Unauthorized', 'Unauthenticated'], 'null');
    });

    it('answers 502 when the upstream answers 4xx or 5xx or is unreachable, 500 on an unexpected fault', async () => {
      const retried = orderNo();
      try {
        for (const mode of ['503', '400', 'reset'] as const) {
          harness.proxy!.mode = mode;
          expectFailure(await merchant.payin({ amount: 1, out_trade_no: retried }), 502, 'Payin service is unavailable. Please try again later.', 'null');
        }
        harness.proxy!.mode = 'unrenderable';
        expectFailure(await merchant.payin({ amount: 1, out_trade_no: orderNo() }), 500, 'Unable to process payin request. Please contact support.', 'null');
      } finally {
        harness.proxy!.mode = 'pass';
      }
      // Decisions §4: a payin whose forwarding failed does not hold its out_trade_no.
      expect((await merchant.payin({ amount: 1, out_trade_no: retried })).status).toBe(200);
    });

    it('fails validation when no upstream payin endpoint is configured', async () => {
      const bare: TestPlatform = await startTestPlatform({ roles: ['api', 'facade'], env: { UPSTREAM_PAYIN_URL: '' } });
      try {
        const credentials = await registerMerchant(bare);
        const reply = await new AreaBMerchant(bare.facadeUrl, credentials.api_key).payin({ amount: 1, out_trade_no: orderNo() });
        expect(reply.status).toBe(422);
        expect(reply.json).toMatchObject({ success: false, message: 'Validation errors' });
      } finally {
        await bare.stop();
      }
    });
  });

  describe('B2 POST /api/v1/payins/status', () => {
    it('answers the payin of an out_trade_no', async () => {
      const created = await createPayin(3);
      const reply = await merchant.status({ out_trade_no: created.out_trade_no });
      expect(reply.status).toBe(200);
      expect(reply.json).toMatchObject({ success: true, code: 200 });
      expect(Object.keys(reply.json.data)).toEqual(expect.arrayContaining(['trx_ref', 'amount', 'fee', 'invoice_reference', 'out_trade_no', 'status']));
      expect(reply.json.data).toMatchObject({ amount: 3, invoice_reference: created.invoice_reference, out_trade_no: created.out_trade_no, status: 'waiting' });
    });

    it('answers 401 Unauthorized, 404 Top-up not found., 422 Validation error', async () => {
      expectFailure(await merchant.status({ out_trade_no: orderNo() }, {}), 401, 'Unauthorized', 'null');
      expectFailure(await merchant.status({ out_trade_no: orderNo() }, { 'X-API-Key': 'pk_wrong' }), 401, 'Unauthorized', 'null');
      expectFailure(await merchant.status({ out_trade_no: orderNo() }), 404, 'Top-up not found.', 'null');
      expectFailure(await merchant.status({}), 422, 'Validation error', ['out_trade_no']);
    });
  });

  describe('B4 webhooks and B3 balance', () => {
    it('sends the success webhook in the response envelope, X-Signature the HMAC of the raw body; B3 shows the credit', async () => {
      const created = await createPayin(4);
      expect((await harness.sandbox.pay(created.invoice_reference, '4')).status).toBe(200);
      const webhook = await webhookOf(created.invoice_reference, 'success');
      expect(webhook.headers['content-type']).toMatch(/^application\/json/);
      expect(webhookSignatureValid(hmacSecret, webhook.body, webhook.headers['x-signature'])).toBe(true);
      expect(webhook.headers).toMatchObject({ 'x-webhook-event': 'payin.success', 'x-webhook-id': expect.any(String), 'x-webhook-attempt': '1' });
      expect(webhook.json).toMatchObject({ success: true, code: 200, event: 'payin.success' });
      expect(webhook.json.data).toMatchObject({
        trx_ref: expect.any(String),
        amount: 4,
        currency: 'USDT',
        fee: expect.any(Number),
        invoice_reference: created.invoice_reference,
        out_trade_no: created.out_trade_no,
        status: 'success',
        payment_match_status: 'exact',
      });
      expect(webhook.json.data).not.toHaveProperty('original_amount');
      const status = await merchant.status({ out_trade_no: created.out_trade_no });
      expect(status.json.data).toMatchObject({ status: 'success', amount: 4, trx_ref: webhook.json.data.trx_ref });

      const balance = await merchant.balance();
      expect(balance.status).toBe(200);
      expect(balance.json.success).toBe(true);
      const usdt = balance.json.data.wallets.find((wallet: { currency: string }) => wallet.currency === 'USDT');
      expect(Object.keys(usdt).sort()).toEqual(expect.arrayContaining(['balance', 'balance_units', 'currency', 'decimals']));
      expect(usdt).toMatchObject({ currency: 'USDT', balance: expect.any(String), balance_units: expect.any(Number), decimals: 6 });
      expect(usdt.balance_units).toBeGreaterThan(0);
    });

    it('credits the amount actually paid and says so: original_amount and payment_match_status on a mismatch', async () => {
      const under = await createPayin(5);
      await harness.sandbox.pay(under.invoice_reference, '4.5');
      const underpaid = await webhookOf(under.invoice_reference, 'success');
      expect(underpaid.json.data).toMatchObject({ amount: 4.5, original_amount: 5, payment_match_status: 'underpaid' });
      const over = await createPayin(5);
      await harness.sandbox.pay(over.invoice_reference, '6');
      const overpaid = await webhookOf(over.invoice_reference, 'success');
      expect(overpaid.json.data).toMatchObject({ amount: 6, original_amount: 5, payment_match_status: 'overpaid' });
      expect(webhookSignatureValid(hmacSecret, overpaid.body, overpaid.headers['x-signature'])).toBe(true);
    });

    it('sends payin.expired when the payin lifetime passes without payment; a payment arriving later is still credited', async () => {
      const created = await createPayin(1.5);
      const webhook = await webhookOf(created.invoice_reference, 'expired');
      expect(webhook.json.event).toBe('payin.expired');
      expect(webhook.json).toMatchObject({ success: true, code: 200, data: { invoice_reference: created.invoice_reference, out_trade_no: created.out_trade_no, status: 'expired' } });
      expect(webhookSignatureValid(hmacSecret, webhook.body, webhook.headers['x-signature'])).toBe(true);
      expect((await merchant.status({ out_trade_no: created.out_trade_no })).json.data.status).toBe('expired');
      // Decisions §4: money received is never dropped; the payin becomes success and its webhook is sent.
      expect((await harness.sandbox.pay(created.invoice_reference, '1.5')).status).toBe(200);
      const late = await webhookOf(created.invoice_reference, 'success');
      expect(late.json).toMatchObject({ event: 'payin.success', data: { amount: 1.5, status: 'success' } });
      expect((await merchant.status({ out_trade_no: created.out_trade_no })).json.data.status).toBe('success');
    });

    it('sends payin.closed when the payin is closed', async () => {
      const created = await createPayin(2.5);
      expect((await harness.sandbox.closePayin(created.invoice_reference)).status).toBe(200);
      const webhook = await webhookOf(created.invoice_reference, 'close');
      expect(webhook.json).toMatchObject({ success: true, code: 200, event: 'payin.closed', data: { invoice_reference: created.invoice_reference, status: 'close' } });
      expect(webhookSignatureValid(hmacSecret, webhook.body, webhook.headers['x-signature'])).toBe(true);
      expect((await merchant.status({ out_trade_no: created.out_trade_no })).json.data.status).toBe('close');
    });

    it('refuses an upstream notification whose X-Upstream-Signature does not verify with 401 (decisions §4)', async () => {
      const created = await createPayin(1);
      const notification = { invoice_reference: created.invoice_reference, status: 'success', amount: 1, currency: 'USDT', trx_ref: 'forged' };
      const reply = await send(`${harness.platform.facadeUrl}/api/v1/upstream/notifications`, { headers: { 'X-Upstream-Signature': '0'.repeat(64) }, body: notification });
      expect(reply.status).toBe(401);
      expect((await merchant.status({ out_trade_no: created.out_trade_no })).json.data.status).toBe('waiting');
    });

    it('signs under the header name the merchant configured, and retries a failed delivery under the same X-Webhook-Id', async () => {
      const receiver = await startMerchantReceiver({ signature_header: 'X-Shop-Signature', fail_first: 1 });
      try {
        const credentials = await admin(harness.platform, [
          'merchant', 'create', '--name', 'Header merchant', '--callback-url', receiver.url, '--signature-header', 'X-Shop-Signature',
        ]);
        expect(credentials.signature_header).toBe('X-Shop-Signature');
        receiver.configure({ hmac_secret: credentials.hmac_secret });
        const reply = await new AreaBMerchant(harness.platform.facadeUrl, credentials.api_key!).payin({ amount: 2, out_trade_no: orderNo() });
        await harness.sandbox.pay(reply.json.data.invoice_reference, '2');
        const [failed, delivered] = await receiver.waitFor((received) => received.length >= 2);
        expect(failed!.status).toBe(500);
        expect(delivered!.status).toBe(200);
        expect(delivered!.json.data.invoice_reference).toBe(reply.json.data.invoice_reference);
        expect(delivered!.body).toBe(failed!.body);
        expect(delivered!.headers['x-webhook-id']).toBe(failed!.headers['x-webhook-id']);
        expect([failed!.headers['x-webhook-attempt'], delivered!.headers['x-webhook-attempt']]).toEqual(['1', '2']);
        expect(webhookSignatureValid(credentials.hmac_secret!, delivered!.body, delivered!.headers['x-shop-signature'])).toBe(true);
        expect(delivered!.headers).not.toHaveProperty('x-signature');
      } finally {
        await receiver.close();
      }
    });

    it('answers B3 401 "Unauthenticated. Please provide valid credentials." and 403 for a suspended merchant', async () => {
      expectFailure(await merchant.balance({}), 401, 'Unauthenticated. Please provide valid credentials.', 'null');
      expectFailure(await merchant.balance({ 'X-API-Key': 'pk_wrong' }), 401, 'Unauthenticated. Please provide valid credentials.', 'null');
      const suspended = await registerMerchant(harness.platform);
      await admin(harness.platform, ['merchant', 'suspend', '--merchant-id', suspended.merchant_id]);
      expectFailure(await new AreaBMerchant(harness.platform.facadeUrl, suspended.api_key).balance(), 403, 'Merchant account is suspended', 'null');
    });
  });
});
