/**
 * The webhook endpoint a merchant manages from its dashboard, in a real browser (docs/webhooks.md "Managing the
 * endpoint", docs/dashboard.md): it rotates its signing secret and its receiver verifies both Standard Webhooks
 * signatures during the overlap, then only the new one; sends a test event and reads the answer; changes its URL
 * (a test delivery first: saved on a 2xx, refused otherwise, and never to a metadata address); reads each attempt's
 * request body, status and response body, filters deliveries by status; an endpoint failing every attempt for
 * WEBHOOK_DISABLE_AFTER_DAYS (2 seconds here) is disabled with a notice and an event, and enabled again from the
 * dashboard, after which the waiting webhook is delivered. Each page: axe-core 0 violations, no sideways scrolling
 * at 390 / 1280 / 1440 px, a screenshot in test-artifacts/dashboard/.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { chromiumPath } from '../support/chromium';
import { auditPage, DASHBOARD_ARTIFACTS } from '../support/dashboard-audit';
import { startMerchantReceiver, type MerchantReceiver, type ReceivedWebhook } from '../support/merchant-receiver';
import { createTestMerchant, eventually, post, startPayinHarness, type PayinHarness } from '../support/payin-setup';

let harness: PayinHarness;
let merchant: MerchantCredentials;
let browser: Browser;
let page: Page;
let base: string;
let second: MerchantReceiver;

async function expectClean(name: string): Promise<void> {
  const audit = await auditPage(page, name);
  expect(audit.violations).toEqual([]);
  expect(audit.overflowing).toEqual([]);
}

/** A receiver's check of one Standard Webhooks signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">. */
function signedBy(webhook: ReceivedWebhook, signature: string, secret: string): boolean {
  const signed = `${String(webhook.headers['webhook-id'])}.${String(webhook.headers['webhook-timestamp'])}.${webhook.body}`;
  const expected = Buffer.from(`v1,${createHmac('sha256', secret).update(signed).digest('base64')}`);
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const signaturesOf = (webhook: ReceivedWebhook) => String(webhook.headers['webhook-signature'] ?? '').split(' ');

beforeAll(async () => {
  mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
  harness = await startPayinHarness({ env: { WEBHOOK_SECRET_OVERLAP_SECONDS: '4', WEBHOOK_DISABLE_AFTER_DAYS: String(2 / 86_400) } });
  base = harness.platform.facadeUrl;
  merchant = await createTestMerchant(harness);
  harness.receiver.configure({ hmac_secret: merchant.hmac_secret });
  second = await startMerchantReceiver();
  browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await page.goto(`${base}/dashboard/sign-in`);
  await page.fill('#user_name', merchant.api_user_name);
  await page.fill('#password', merchant.api_password);
  await Promise.all([page.waitForNavigation(), page.click('#sign-in')]);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await second?.close();
  await harness?.stop();
});

const testEvents = (receiver: MerchantReceiver) => receiver.received.filter((webhook) => webhook.headers['x-webhook-event'] === 'webhook.test');

it('refuses every endpoint form without the session’s CSRF token or from another site, changing nothing', async () => {
  const sealed = async () => (await harness.platform.deps.database('merchants').where({ id: merchant.merchant_id }).first('hmac_secret_encrypted', 'callback_url', 'previous_hmac_secret_encrypted')) as Record<string, unknown>;
  const before = await sealed();
  const received = harness.receiver.received.length;
  for (const action of ['rotate', 'url', 'test', 'enable']) {
    const form = { csrf_token: 'not-this-session', callback_url: second.url };
    const forged = await page.request.post(`${base}/dashboard/webhook-endpoint/${action}`, { form, headers: { Origin: base, 'Sec-Fetch-Site': 'same-origin' }, maxRedirects: 0 });
    expect([action, forged.status()]).toEqual([action, 403]);
    const token = (await page.goto(`${base}/dashboard/webhook-endpoint`), await page.getAttribute('form[action$="/rotate"] input[name=csrf_token]', 'value'))!;
    const crossSite = await page.request.post(`${base}/dashboard/webhook-endpoint/${action}`, { form: { ...form, csrf_token: token }, headers: { 'Sec-Fetch-Site': 'cross-site' }, maxRedirects: 0 });
    expect([action, crossSite.status()]).toEqual([action, 403]);
  }
  expect(await sealed()).toEqual(before);
  expect(harness.receiver.received.length).toBe(received);
  expect(second.received).toHaveLength(0);
}, 60_000);

it('rotates the signing secret: both signatures during the overlap, then only the new one', async () => {
  await page.goto(`${base}/dashboard/webhook-endpoint`);
  await expectClean('webhooks-endpoint');
  const old = merchant.hmac_secret;
  await Promise.all([page.waitForNavigation(), page.click('#rotate')]);
  const secret = (await page.textContent('#new-secret'))!.trim();
  expect(secret).toMatch(/^[0-9a-f]{64}$/);
  expect(secret).not.toBe(old);
  await expectClean('webhooks-rotated');
  // The receiver deploys the new secret (its X-Signature check), then asks for a test event.
  harness.receiver.configure({ hmac_secret: secret });
  await Promise.all([page.waitForNavigation(), page.click('#send-test')]);
  expect(await page.textContent('#test-result')).toContain('accepted (HTTP 200)');
  const [during] = testEvents(harness.receiver);
  expect(during!.signature_valid).toBe(true);
  const both = signaturesOf(during!);
  expect(both).toHaveLength(2);
  expect([signedBy(during!, both[0]!, secret), signedBy(during!, both[1]!, old)]).toEqual([true, true]);
  expect(await page.textContent('#secret')).toContain('The secret it replaced also signs until');

  // Past the overlap: only the new secret signs.
  const row = await harness.platform.deps.database('merchants').where({ id: merchant.merchant_id }).first('previous_hmac_secret_until');
  await eventually(async () => (Date.now() > new Date(row.previous_hmac_secret_until as Date).getTime() + 100 ? true : undefined), 20_000);
  await Promise.all([page.waitForNavigation(), page.click('#send-test')]);
  const after = testEvents(harness.receiver)[1]!;
  const one = signaturesOf(after);
  expect(one).toHaveLength(1);
  expect([signedBy(after, one[0]!, secret), signedBy(after, one[0]!, old)]).toEqual([true, false]);
  merchant.hmac_secret = secret;
}, 60_000);

it('changes the URL only after a test delivery to it succeeded; never to a metadata address', async () => {
  second.configure({ hmac_secret: merchant.hmac_secret, unavailable: true });
  await page.goto(`${base}/dashboard/webhook-endpoint`);
  await page.fill('#callback_url', second.url);
  const refused = await Promise.all([page.waitForNavigation(), page.click('#change-url')]).then(([answer]) => answer);
  expect(refused?.status()).toBe(400);
  expect(await page.textContent('#refused')).toContain('the test delivery was not accepted (HTTP 503)');
  expect(await page.textContent('#callback-url')).toBe(harness.receiver.url);
  await page.fill('#callback_url', 'http://169.254.169.254/latest/meta-data/');
  const metadata = await Promise.all([page.waitForNavigation(), page.click('#change-url')]).then(([answer]) => answer);
  expect(metadata?.status()).toBe(400);
  expect(await page.textContent('#refused')).toContain('metadata address');
  expect(testEvents(second)).toHaveLength(1);

  second.configure({ unavailable: false });
  await page.fill('#callback_url', second.url);
  await Promise.all([page.waitForNavigation(), page.click('#change-url')]);
  expect(await page.textContent('#notice')).toContain('The callback URL was changed');
  expect(await page.textContent('#callback-url')).toBe(second.url);
  expect(testEvents(second).at(-1)!.status).toBe(200);
  // Back to the first receiver, for the rest.
  await page.fill('#callback_url', harness.receiver.url);
  await Promise.all([page.waitForNavigation(), page.click('#change-url')]);
  expect(await page.textContent('#callback-url')).toBe(harness.receiver.url);
}, 60_000);

/** Creates a payin and pays it; the invoice reference. */
async function paidPayin(order: string): Promise<string> {
  const created = await post(base, '/api/v1/payins', JSON.stringify({ amount: 3, out_trade_no: order }), { 'X-API-Key': merchant.api_key });
  expect(created.status).toBe(200);
  const invoice = created.json.data.invoice_reference as string;
  await eventually(async () => (await harness.platform.deps.temporal.client.workflow.getHandle(invoice).describe().then(() => true, () => false)) || undefined);
  expect((await harness.sandbox.pay(invoice, '3')).status).toBe(200);
  return invoice;
}

it('shows each attempt’s request body, status and response body, and filters deliveries by status', async () => {
  harness.receiver.configure({ fail_first: 1 });
  const invoice = await paidPayin(`WH-${Date.now()}`);
  await eventually(async () => ((await harness.platform.deps.database('webhook_events').where({ invoice_reference: invoice }).first())?.status === 'delivered' ? true : undefined), 60_000);
  harness.receiver.configure({ fail_first: 0 });
  await page.goto(`${base}/dashboard/webhooks?status=delivered`);
  const article = page.locator('article.delivery').first();
  expect(await article.locator('h2').textContent()).toContain(invoice);
  const body = JSON.parse((await article.locator('details.request-body pre').textContent())!) as { data: { invoice_reference: string } };
  expect(body.data.invoice_reference).toBe(invoice);
  const attempts = await article.locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => (cell.textContent ?? '').trim())));
  expect(attempts.map((cells) => cells[1])).toEqual(['500', '200']);
  expect(attempts[0]![4]).toContain('{"ok":false}');
  expect(attempts[1]![4]).toContain('{"ok":true}');
  await expectClean('webhooks-deliveries-delivered');
  await page.goto(`${base}/dashboard/webhooks?status=failed`);
  expect(await page.locator('article.delivery').count()).toBe(0);
  expect(await page.textContent('#empty')).toContain('No webhook with this status');
}, 90_000);

it('disables an endpoint failing every attempt for the window, with a notice and an event; enabled again from the dashboard', async () => {
  harness.receiver.configure({ unavailable: true });
  const invoice = await paidPayin(`OFF-${Date.now()}`);
  await eventually(async () => ((await harness.platform.deps.database('merchants').where({ id: merchant.merchant_id }).first('webhook_disabled_at'))?.webhook_disabled_at ? true : undefined), 60_000);
  const events = await harness.platform.deps.database('events').where({ owner_type: 'merchant', owner_id: merchant.merchant_id, type: 'webhook_endpoint.disabled' });
  expect(events).toHaveLength(1);
  expect(events[0]!.data.callback_url).toBe(harness.receiver.url);
  // Nothing reaches the endpoint while it is disabled: the attempts say why.
  const before = harness.receiver.received.length;
  await eventually(async () => {
    const attempts = await harness.platform.deps.database('webhook_delivery_attempts as a').join('webhook_events as w', 'w.id', 'a.webhook_id').where('w.invoice_reference', invoice).select('a.error');
    return attempts.some((attempt) => String(attempt.error).startsWith('endpoint disabled')) ? true : undefined;
  }, 30_000);
  expect(harness.receiver.received.length).toBe(before);

  await page.goto(`${base}/dashboard/webhooks`);
  expect(await page.textContent('#endpoint-disabled')).toContain('Your endpoint was disabled');
  await page.goto(`${base}/dashboard/webhook-endpoint`);
  expect(await page.textContent('#endpoint-disabled')).toContain('disabled');
  await expectClean('webhooks-endpoint-disabled');

  harness.receiver.configure({ unavailable: false });
  await Promise.all([page.waitForNavigation(), page.click('#enable')]);
  expect(await page.textContent('#notice')).toContain('enabled again');
  expect(await page.locator('#endpoint-disabled').count()).toBe(0);
  expect(await harness.platform.deps.database('events').where({ owner_type: 'merchant', owner_id: merchant.merchant_id, type: 'webhook_endpoint.enabled' })).toHaveLength(1);
  // The webhook still in its retry window is delivered once the endpoint is enabled.
  await eventually(async () => ((await harness.platform.deps.database('webhook_events').where({ invoice_reference: invoice }).first())?.status === 'delivered' ? true : undefined), 60_000);
}, 120_000);
