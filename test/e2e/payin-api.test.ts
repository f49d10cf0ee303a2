/**
 * Area B over HTTP (interface Area B; platform decisions §4, §5, §8): every row of the Area B error
 * table, authentication on every route, upstream faults, notifications and webhook delivery.
 */
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { PAYIN_MESSAGES } from '../../rest-facade/payin/contract';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { createTestMerchant, eventually, post, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { freePort } from '../../src/net';

let harness: PayinHarness;
let merchant: MerchantCredentials;
let suspended: MerchantCredentials;
let counter = 0;
const nextOrder = () => `ORDER-${Date.now()}-${(counter += 1)}`;

beforeAll(async () => {
  harness = await startPayinHarness({ proxy: true });
  merchant = await createTestMerchant(harness);
  suspended = await createTestMerchant(harness, { suspended: true });
  harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
});
afterAll(async () => {
  await harness.stop();
});

const base = () => harness.platform.facadeUrl;
const createPayin = (body: string, key = merchant.api_key, header = 'X-API-Key') => post(base(), '/api/v1/payins', body, { [header]: key });
const notify = (body: string, signature = hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, body)) =>
  post(base(), '/api/v1/upstream/notifications', body, { 'X-Upstream-Signature': signature });

async function balanceUnits(key: string, currency = 'USDT'): Promise<number> {
  const response = await fetch(`${base()}/api/v1/balance`, { headers: { 'X-API-Key': key } });
  const json = (await response.json()) as { data: { wallets: Array<{ currency: string; balance_units: number }> } };
  return json.data.wallets.find((wallet) => wallet.currency === currency)!.balance_units;
}

describe('B1 POST /api/v1/payins', () => {
  it('creates a payin, forwards the body byte for byte with the §4 headers and renders the QR PNG', async () => {
    const out_trade_no = nextOrder();
    const body = `{ "amount": 12.5, "out_trade_no": "${out_trade_no}", "memo": "coffee",  "extra": {"keep": [1, 2.50]} }`;
    const response = await createPayin(body, merchant.api_key, 'Api-Key');
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      success: true,
      code: 200,
      data: {
        invoice_reference: expect.stringMatching(/^PAYIN-[A-Z0-9]{20}$/),
        amount: 12.5,
        currency: 'USDT',
        fee: 0.125,
        qrcode: { content: expect.stringMatching(/^tron:T[1-9A-HJ-NP-Za-km-z]{33}\?amount=12\.5&token=TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t$/), image: expect.any(String) },
        out_trade_no,
      },
    });
    expect(Buffer.from(response.json.data.qrcode.image, 'base64').subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    const forwarded = harness.sandbox.received.at(-1)!;
    expect(forwarded.body).toBe(body);
    expect(forwarded.headers['content-type']).toBe('application/json');
    expect(forwarded.headers.authorization).toBe('Bearer test-upstream-key');
    expect(forwarded.headers['x-invoice-reference']).toBe(response.json.data.invoice_reference);
    expect(forwarded.headers['x-notify-url']).toBe(`${base()}/api/v1/upstream/notifications`);
  });

  it('answers 422 listing every failing field', async () => {
    const response = await createPayin(`{"amount": 0.0000001, "currency": "USD", "memo": "${'m'.repeat(256)}", "out_trade_no": "${'o'.repeat(256)}"}`);
    expect(response.status).toBe(422);
    expect(response.json).toEqual({
      success: false,
      message: 'Validation errors',
      errors: {
        amount: ['The amount must not have more than 6 decimal places.'],
        currency: ['The selected currency is invalid. Only USDT is supported.'],
        memo: ['The memo must not be greater than 255 characters.'],
        out_trade_no: ['The out trade no must not be greater than 255 characters.'],
      },
    });
  });

  it.each([
    ['{}', { amount: ['The amount field is required.'], out_trade_no: ['The out trade no field is required.'] }],
    ['{"amount": 0.009, "out_trade_no": "X1"}', { amount: ['The amount must be at least 0.01.'] }],
    ['{"amount": -5, "out_trade_no": "X1"}', { amount: ['The amount must be at least 0.01.'] }],
    ['{"amount": "abc", "out_trade_no": "X1"}', { amount: ['The amount must be a number.'] }],
    ['{"amount": true, "out_trade_no": "X1"}', { amount: ['The amount must be a number.'] }],
    ['{"amount": 1, "out_trade_no": 12}', { out_trade_no: ['The out trade no must be a string.'] }],
    ['{"amount": 1, "out_trade_no": "X1", "memo": 5}', { memo: ['The memo must be a string.'] }],
    ['not json', { body: ['The request body must be a JSON object.'] }],
    ['[1]', { body: ['The request body must be a JSON object.'] }],
  ])('answers 422 for %s', async (body, errors) => {
    const response = await createPayin(body);
    expect(response.status).toBe(422);
    expect(response.json).toEqual({ success: false, message: 'Validation errors', errors });
  });

  it('accepts exactly 0.01 and 6 decimals (read losslessly)', async () => {
    const low = await createPayin(`{"amount": 0.01, "out_trade_no": "${nextOrder()}"}`);
    expect(low.status).toBe(200);
    const precise = await createPayin(`{"amount": 1.123456, "out_trade_no": "${nextOrder()}", "currency": "USDT"}`);
    expect(precise.status).toBe(200);
    expect(precise.text).toContain('"amount":1.123456');
  });

  it('refuses a duplicate out_trade_no for the same merchant with 422', async () => {
    const out_trade_no = nextOrder();
    expect((await createPayin(`{"amount": 1, "out_trade_no": "${out_trade_no}"}`)).status).toBe(200);
    const again = await createPayin(`{"amount": 2, "out_trade_no": "${out_trade_no}"}`);
    expect(again.status).toBe(422);
    expect(again.json).toEqual({ success: false, message: 'Validation errors', errors: { out_trade_no: ['The out trade no has already been taken.'] } });
  });

  it('does not let a forward that never answered (its process died) hold the out_trade_no past its deadline', async () => {
    const { insertPayinWithOutbox } = await import('../../src/flows/payin/store');
    const database = harness.platform.deps.database;
    const merchantId = merchant.merchant_id;
    const recordOnly = (out_trade_no: string, forwarding_until: Date, invoice_reference: string) =>
      // What a B1 leaves when its process is killed between recording the payin and the upstream's answer.
      insertPayinWithOutbox(database, {
        invoice_reference,
        merchant_id: merchantId,
        out_trade_no,
        amount_units: 1_000_000n,
        fee_units: 10_000n,
        payin_fee_percent: '1.0',
        currency: 'USDT',
        memo: null,
        expires_at: new Date(Date.now() + 300_000),
        forwarding_until,
        request_key: null,
      });
    const abandoned = nextOrder();
    await recordOnly(abandoned, new Date(Date.now() - 1000), `PAYIN-ABANDONED${String(counter).padStart(5, '0')}`.slice(0, 26));
    // B2 does not show an order that never reached the upstream, and a retry of B1 goes through.
    expect((await post(base(), '/api/v1/payins/status', JSON.stringify({ out_trade_no: abandoned }), { 'X-API-Key': merchant.api_key })).status).toBe(404);
    const retried = await createPayin(`{"amount": 1, "out_trade_no": "${abandoned}"}`);
    expect(retried.status).toBe(200);
    const rows = await database('payins').where({ merchant_id: merchantId, out_trade_no: abandoned }).orderBy('created_at').select('status', 'failure_reason');
    expect(rows).toEqual([
      { status: 'failed', failure_reason: expect.stringContaining('forward abandoned') },
      { status: 'waiting', failure_reason: null },
    ]);

    // A forward still within its deadline keeps the order: a concurrent duplicate is refused.
    const inFlight = nextOrder();
    await recordOnly(inFlight, new Date(Date.now() + 60_000), `PAYIN-INFLIGHT${String(counter).padStart(6, '0')}`.slice(0, 26));
    expect((await createPayin(`{"amount": 1, "out_trade_no": "${inFlight}"}`)).status).toBe(422);
  });

  it.each(['400', '503', 'slow', 'reset', 'garbage'] as const)(
    'upstream %s → 502, the record is kept as failed and the out_trade_no is reusable',
    async (mode) => {
      const out_trade_no = nextOrder();
      harness.proxy!.mode = mode;
      try {
        const response = await createPayin(`{"amount": 3, "out_trade_no": "${out_trade_no}"}`);
        expect(response.status).toBe(502);
        expect(response.json).toEqual({ success: false, message: 'Payin service is unavailable. Please try again later.', errors: null });
      } finally {
        harness.proxy!.mode = 'pass';
      }
      const rows = await harness.platform.deps.database('payins').where({ out_trade_no });
      expect(rows.map((row: { status: string }) => row.status)).toEqual(['failed']);
      const status = await post(base(), '/api/v1/payins/status', `{"out_trade_no": "${out_trade_no}"}`, { 'X-API-Key': merchant.api_key });
      expect(status.status).toBe(404);
      expect((await createPayin(`{"amount": 3, "out_trade_no": "${out_trade_no}"}`)).status).toBe(200);
    },
  );

  it('an unexpected fault after forwarding → 500 with the documented message, record failed', async () => {
    const out_trade_no = nextOrder();
    harness.proxy!.mode = 'unrenderable';
    try {
      const response = await createPayin(`{"amount": 3, "out_trade_no": "${out_trade_no}"}`);
      expect(response.status).toBe(500);
      expect(response.json).toEqual({ success: false, message: 'Unable to process payin request. Please contact support.', errors: null });
      expect(response.text).not.toContain('x'.repeat(50));
    } finally {
      harness.proxy!.mode = 'pass';
    }
    expect(await harness.platform.deps.database('payins').where({ out_trade_no }).pluck('status')).toEqual(['failed']);
  });

  it('answers 401 for a missing or invalid key and 403 for a suspended merchant', async () => {
    const body = `{"amount": 1, "out_trade_no": "${nextOrder()}"}`;
    for (const key of ['', 'pk_wrong']) {
      const response = key ? await createPayin(body, key) : await post(base(), '/api/v1/payins', body);
      expect(response.status).toBe(401);
      expect(response.json).toEqual({ success: false, message: 'Unauthorized', errors: null });
    }
    const blocked = await createPayin(body, suspended.api_key);
    expect(blocked.status).toBe(403);
    expect(blocked.json).toEqual({ success: false, message: 'Merchant account is suspended', errors: null });
  });
});

describe('B1 without an upstream and with a refused connection', () => {
  let bare: TestPlatform;
  let refused: TestPlatform;
  let bareMerchant: MerchantCredentials;
  let refusedMerchant: MerchantCredentials;
  beforeAll(async () => {
    const closed = await freePort();
    [bare, refused] = await Promise.all([
      startTestPlatform({ roles: ['api', 'facade'] }),
      startTestPlatform({ roles: ['api', 'facade'], env: { UPSTREAM_PAYIN_URL: `http://127.0.0.1:${closed}/payins` } }),
    ]);
    const { createMerchant } = await import('../../src/onboarding/merchants');
    bareMerchant = (await createMerchant(bare.deps, { name: 'Bare', callback_url: 'http://127.0.0.1:9/none' })).credentials;
    refusedMerchant = (await createMerchant(refused.deps, { name: 'Refused', callback_url: 'http://127.0.0.1:9/none' })).credentials;
  });
  afterAll(async () => {
    await Promise.all([bare.stop(), refused.stop()]);
  });

  it('no upstream configured → 422 validation errors', async () => {
    const response = await post(bare.facadeUrl, '/api/v1/payins', '{"amount": 1, "out_trade_no": "A1"}', { 'X-API-Key': bareMerchant.api_key });
    expect(response.status).toBe(422);
    expect(response.json).toEqual({ success: false, message: 'Validation errors', errors: { upstream: ['No upstream payin server is configured.'] } });
  });

  it('refused connection → 502, record failed', async () => {
    const response = await post(refused.facadeUrl, '/api/v1/payins', '{"amount": 1, "out_trade_no": "R1"}', { 'X-API-Key': refusedMerchant.api_key });
    expect(response.status).toBe(502);
    expect(response.json).toEqual({ success: false, message: PAYIN_MESSAGES.upstreamUnavailable, errors: null });
    expect(await refused.deps.database('payins').where({ out_trade_no: 'R1' }).pluck('status')).toEqual(['failed']);
  });
});

describe('B2 POST /api/v1/payins/status', () => {
  const status = (body: string, key: string | null = merchant.api_key) =>
    post(base(), '/api/v1/payins/status', body, key === null ? {} : { 'X-API-Key': key });

  it('answers the waiting payin', async () => {
    const out_trade_no = nextOrder();
    const created = await createPayin(`{"amount": 7, "out_trade_no": "${out_trade_no}"}`);
    const response = await status(`{"out_trade_no": "${out_trade_no}"}`);
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      success: true,
      code: 200,
      data: {
        trx_ref: `SANDBOX-${created.json.data.invoice_reference}`,
        amount: 7,
        fee: 0.07,
        invoice_reference: created.json.data.invoice_reference,
        out_trade_no,
        status: 'waiting',
        currency: 'USDT',
      },
    });
  });

  it('answers 401 Unauthorized, 403, 404 Top-up not found. and 422 Validation error', async () => {
    for (const key of [null, 'pk_nope']) {
      const response = await status('{"out_trade_no": "x"}', key);
      expect(response.status).toBe(401);
      expect(response.json).toEqual({ success: false, message: 'Unauthorized', errors: null });
    }
    // Api-Key is B1's alternative header only (interface "Authentication / Area B").
    const otherHeader = await post(base(), '/api/v1/payins/status', '{"out_trade_no": "x"}', { 'Api-Key': merchant.api_key });
    expect(otherHeader.status).toBe(401);
    expect(otherHeader.json).toEqual({ success: false, message: 'Unauthorized', errors: null });
    const blocked = await status('{"out_trade_no": "x"}', suspended.api_key);
    expect(blocked.status).toBe(403);
    expect(blocked.json).toEqual({ success: false, message: 'Merchant account is suspended', errors: null });
    const missing = await status('{"out_trade_no": "never-created"}');
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ success: false, message: 'Top-up not found.', errors: null });
    const invalid = await status('{}');
    expect(invalid.status).toBe(422);
    expect(invalid.json).toEqual({ success: false, message: 'Validation error', errors: { out_trade_no: ['The out trade no field is required.'] } });
  });

  it('does not show another merchant’s payin', async () => {
    const out_trade_no = nextOrder();
    await createPayin(`{"amount": 1, "out_trade_no": "${out_trade_no}"}`);
    const other = await createTestMerchant(harness);
    expect((await status(`{"out_trade_no": "${out_trade_no}"}`, other.api_key)).status).toBe(404);
  });
});

describe('B3 GET /api/v1/balance', () => {
  it('lists every wallet with the available balance', async () => {
    const fresh = await createTestMerchant(harness);
    const response = await fetch(`${base()}/api/v1/balance`, { headers: { 'X-API-Key': fresh.api_key } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      success: true,
      code: 200,
      data: {
        wallets: [
          { currency: 'USD', balance: '0.00', balance_units: 0, decimals: 2 },
          { currency: 'KHR', balance: '0.00', balance_units: 0, decimals: 2 },
          { currency: 'USDT', balance: '0.000000', balance_units: 0, decimals: 6 },
        ],
      },
    });
  });

  it('answers 401 Unauthenticated and 403 suspended with errors null', async () => {
    // Api-Key is B1's alternative header only (interface "Authentication / Area B").
    for (const headers of [{}, { 'X-API-Key': 'pk_bad' }, { 'Api-Key': merchant.api_key }] as Array<Record<string, string>>) {
      const response = await fetch(`${base()}/api/v1/balance`, { headers });
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ success: false, message: 'Unauthenticated. Please provide valid credentials.', errors: null });
    }
    const blocked = await fetch(`${base()}/api/v1/balance`, { headers: { 'X-API-Key': suspended.api_key } });
    expect(blocked.status).toBe(403);
    expect(await blocked.json()).toEqual({ success: false, message: 'Merchant account is suspended', errors: null });
  });
});

describe('upstream notifications and webhooks', () => {
  it('rejects a bad signature with 401 and an unknown invoice with 404', async () => {
    const body = '{"invoice_reference":"PAYIN-AAAAAAAAAAAAAAAAAAAA","status":"success","amount":1,"currency":"USDT","trx_ref":"abc"}';
    const bad = await notify(body, 'a'.repeat(64));
    expect(bad.status).toBe(401);
    expect(bad.json).toEqual({ success: false, message: 'Invalid signature', errors: null });
    const missing = await post(base(), '/api/v1/upstream/notifications', body);
    expect(missing.status).toBe(401);
    const unknown = await notify(body);
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ success: false, message: 'Top-up not found.', errors: null });
  });

  it('answers 422 for a signed notification with bad fields', async () => {
    const body = '{"invoice_reference":"","status":"paid","amount":"x"}';
    const response = await notify(body);
    expect(response.status).toBe(422);
    expect(response.json).toEqual({
      success: false,
      message: 'Validation errors',
      errors: {
        invoice_reference: ['The invoice reference field is required.'],
        status: ['The selected status is invalid.'],
        // platform decisions §4: every notification carries its trx_ref string.
        trx_ref: ['The trx ref field is required.'],
      },
    });
  });

  it('credits a settlement once when notified 5 times, charges the fee and delivers one signed webhook', async () => {
    const out_trade_no = nextOrder();
    const created = await createPayin(`{"amount": 20, "out_trade_no": "${out_trade_no}"}`);
    const invoice_reference = created.json.data.invoice_reference as string;
    const before = await balanceUnits(merchant.api_key);
    const body = `{"invoice_reference":"${invoice_reference}","status":"success","amount":20,"currency":"USDT","trx_ref":"0xabc${counter}"}`;
    const answers = [];
    for (let index = 0; index < 5; index += 1) answers.push(await notify(body));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers[0]!.json.data.applied).toBe(true);
    expect(answers.slice(1).every((answer) => answer.json.data.applied === false)).toBe(true);
    const [webhook] = (await harness.receiver.waitFor((list) => list.some((item) => item.json.data.invoice_reference === invoice_reference))).filter(
      (item) => item.json.data.invoice_reference === invoice_reference,
    );
    expect(webhook!.json).toEqual({
      success: true,
      code: 200,
      event: 'payin.success',
      data: {
        trx_ref: `0xabc${counter}`,
        amount: 20,
        currency: 'USDT',
        fee: 0.2,
        invoice_reference,
        out_trade_no,
        status: 'success',
        payment_match_status: 'exact',
      },
    });
    expect(webhook!.signature_valid).toBe(true);
    expect(webhook!.headers['x-webhook-event']).toBe('payin.success');
    expect(webhook!.headers['x-webhook-attempt']).toBe('1');
    expect(await balanceUnits(merchant.api_key)).toBe(before + 19_800_000);
    const status = await post(base(), '/api/v1/payins/status', `{"out_trade_no": "${out_trade_no}"}`, { 'X-API-Key': merchant.api_key });
    expect(status.json.data).toMatchObject({ status: 'success', amount: 20, fee: 0.2 });
    // Repeats after settlement still change nothing.
    expect((await notify(body)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(harness.receiver.received.filter((item) => item.json.data.invoice_reference === invoice_reference)).toHaveLength(1);
    expect(await balanceUnits(merchant.api_key)).toBe(before + 19_800_000);
  });

  it('answers a notification once the payin is credited and its webhook attempted, with the status after it', async () => {
    const out_trade_no = nextOrder();
    const created = await createPayin(`{"amount": 3, "out_trade_no": "${out_trade_no}"}`);
    const invoice_reference = created.json.data.invoice_reference as string;
    const before = await balanceUnits(merchant.api_key);
    const answer = await notify(`{"invoice_reference":"${invoice_reference}","status":"success","amount":3,"currency":"USDT","trx_ref":"0xnow${counter}"}`);
    expect(answer.status).toBe(200);
    expect(answer.json.data).toEqual({ invoice_reference, status: 'success', applied: true });
    // No waiting: the answer means the money is in the wallet and the merchant has had its first attempt.
    expect(await balanceUnits(merchant.api_key)).toBe(before + 2_970_000);
    const status = await post(base(), '/api/v1/payins/status', `{"out_trade_no": "${out_trade_no}"}`, { 'X-API-Key': merchant.api_key });
    expect(status.json.data).toMatchObject({ status: 'success', amount: 3 });
    expect(harness.receiver.received.filter((item) => item.json.data.invoice_reference === invoice_reference).map((item) => item.headers['x-webhook-attempt'])).toEqual(['1']);
  });

  it.each([
    ['overpaid', '25.5', { amount: 25.5, fee: 0.255, original_amount: 10, payment_match_status: 'overpaid' }],
    ['underpaid', '4.000001', { amount: 4.000001, fee: 0.04, original_amount: 10, payment_match_status: 'underpaid' }],
  ])('credits the amount actually paid when %s', async (_label, paid, expected) => {
    const created = await createPayin(`{"amount": 10, "out_trade_no": "${nextOrder()}"}`);
    const invoice_reference = created.json.data.invoice_reference as string;
    const answer = await harness.sandbox.pay(invoice_reference, paid);
    expect(answer.status).toBe(200);
    const received = await harness.receiver.waitFor((list) => list.some((item) => item.json.data.invoice_reference === invoice_reference));
    const webhook = received.find((item) => item.json.data.invoice_reference === invoice_reference)!;
    expect(webhook.json.data).toMatchObject({ ...expected, status: 'success' });
  });

  it('sends payin.closed when the upstream closes the payin', async () => {
    const created = await createPayin(`{"amount": 2, "out_trade_no": "${nextOrder()}"}`);
    const invoice_reference = created.json.data.invoice_reference as string;
    expect((await harness.sandbox.closePayin(invoice_reference)).status).toBe(200);
    const received = await harness.receiver.waitFor((list) => list.some((item) => item.json.data.invoice_reference === invoice_reference));
    const webhook = received.find((item) => item.json.data.invoice_reference === invoice_reference)!;
    expect(webhook.json.event).toBe('payin.closed');
    expect(webhook.json.data).toMatchObject({ status: 'close', amount: 0, fee: 0, original_amount: 2 });
    expect(webhook.headers['x-webhook-event']).toBe('payin.closed');
  });
});

describe('webhook retries and custom signature header', () => {
  it('retries a receiver answering 500 twice, records every attempt and keeps one X-Webhook-Id', async () => {
    const custom = await createTestMerchant(harness, { signature_header: 'X-Shop-Hmac', payin_fee_percent: '2.5' });
    harness.receiver.configure({ hmac_secret: custom.hmac_secret, signature_header: 'X-Shop-Hmac', fail_first: 2 });
    try {
      const created = await createPayin(`{"amount": 8, "out_trade_no": "${nextOrder()}"}`, custom.api_key);
      expect(created.json.data.fee).toBe(0.2);
      const invoice_reference = created.json.data.invoice_reference as string;
      await harness.sandbox.pay(invoice_reference, '8');
      const received = await harness.receiver.waitFor(
        (list) => list.filter((item) => item.json.data.invoice_reference === invoice_reference).length >= 3,
      );
      const mine = received.filter((item) => item.json.data.invoice_reference === invoice_reference);
      expect(mine.map((item) => item.status)).toEqual([500, 500, 200]);
      expect(mine.map((item) => item.attempt)).toEqual([1, 2, 3]);
      expect(new Set(mine.map((item) => item.webhook_id)).size).toBe(1);
      expect(mine.every((item) => item.signature_valid && item.headers['x-signature'] === undefined)).toBe(true);
      expect(new Set(mine.map((item) => item.body)).size).toBe(1);
      const listed = await eventually(async () => {
        const answer = await harness.platform.clients.payin.listWebhookDeliveries({ merchantId: custom.merchant_id });
        const delivery = answer.deliveries.find((item) => item.invoiceReference === invoice_reference);
        return delivery?.status === 'delivered' ? delivery : undefined;
      });
      expect(listed.webhookId).toBe(mine[0]!.webhook_id);
      expect(listed.attempts.map((attempt) => [attempt.attempt, attempt.statusCode, attempt.error])).toEqual([
        [1, 500, 'HTTP 500'],
        [2, 500, 'HTTP 500'],
        [3, 200, ''],
      ]);
      // Redelivery sends the same event again under the same id, attempt 4.
      harness.receiver.configure({ fail_first: 0 });
      await harness.platform.clients.payin.redeliverWebhook({ webhookId: listed.webhookId });
      const again = await harness.receiver.waitFor(
        (list) => list.filter((item) => item.webhook_id === listed.webhookId).length >= 4,
      );
      expect(again.filter((item) => item.webhook_id === listed.webhookId).at(-1)!.attempt).toBe(4);
    } finally {
      harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header, fail_first: 0 });
    }
  });

  it('a receiver with the wrong secret rejects the webhook (401) and the platform keeps retrying', async () => {
    const other = await createTestMerchant(harness);
    harness.receiver.configure({ hmac_secret: 'not-the-secret', signature_header: 'X-Signature' });
    try {
      const created = await createPayin(`{"amount": 1, "out_trade_no": "${nextOrder()}"}`, other.api_key);
      const invoice_reference = created.json.data.invoice_reference as string;
      await harness.sandbox.pay(invoice_reference, '1');
      const received = await harness.receiver.waitFor(
        (list) => list.filter((item) => item.json.data.invoice_reference === invoice_reference).length >= 2,
      );
      const mine = received.filter((item) => item.json.data.invoice_reference === invoice_reference);
      expect(mine.every((item) => item.status === 401 && !item.signature_valid)).toBe(true);
      harness.receiver.configure({ hmac_secret: other.hmac_secret });
      await harness.receiver.waitFor((list) => list.some((item) => item.json.data.invoice_reference === invoice_reference && item.status === 200));
    } finally {
      harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
    }
  });
});

describe('ledger', () => {
  it('balances after the whole file', async () => {
    const check = await harness.platform.deps.ledger.check();
    expect(check.imbalances).toEqual([]);
    expect(check.ok).toBe(true);
  });
});
