/**
 * The dashboard's payment page in a real browser (docs/dashboard.md "A payment's page"): a merchant signed in opens
 * `/dashboard/payments/<reference>` of its settled payin whose first webhook attempt failed, and reads a summary first
 * (amount in major units, status badge, fee, net, paid amount, payer address, order id, times), the story as its own
 * steps (created, paid and settled, webhook not accepted, webhook delivered), and the platform's entries folded
 * under "Technical details" without Temporal Web UI links (TEMPORAL_UI_URL set, not public). It refunds part of the
 * payment with the refund button (CSRF token, the refund rules) and sees the refund in the summary and the story.
 * Another merchant's payment and an unknown reference answer the same 404 page; without a session the page sends
 * to sign-in; a refund form without the session's token refunds nothing. Each page: axe-core 0 violations, no
 * sideways scrolling at 390 / 1280 / 1440 px, a screenshot in test-artifacts/dashboard/.
 */
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { chromiumPath } from '../support/chromium';
import { auditPage, DASHBOARD_ARTIFACTS } from '../support/dashboard-audit';
import { createTestMerchant, eventually, post, startPayinHarness, type PayinHarness } from '../support/payin-setup';

let harness: PayinHarness;
let merchant: MerchantCredentials;
let other: MerchantCredentials;
let browser: Browser;
let base: string;
let invoice: string;
let otherInvoice: string;
const order = `PAGE-${Date.now()}`;

async function signIn(page: Page, who: MerchantCredentials): Promise<void> {
  await page.goto(`${base}/dashboard/sign-in`);
  await page.fill('#user_name', who.api_user_name);
  await page.fill('#password', who.api_password);
  await Promise.all([page.waitForNavigation(), page.click('#sign-in')]);
}

beforeAll(async () => {
  mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
  harness = await startPayinHarness({ env: { TEMPORAL_UI_URL: 'http://127.0.0.1:8233' }, refund_decision_delay_seconds: null });
  base = harness.platform.facadeUrl;
  merchant = await createTestMerchant(harness);
  other = await createTestMerchant(harness);
  harness.receiver.configure({ hmac_secret: merchant.hmac_secret, fail_first: 1 });
  const created = await post(base, '/api/v1/payins', JSON.stringify({ amount: 25.5, out_trade_no: order }), { 'X-API-Key': merchant.api_key });
  expect(created.status).toBe(200);
  invoice = created.json.data.invoice_reference as string;
  const theirs = await post(base, '/api/v1/payins', JSON.stringify({ amount: 1, out_trade_no: `PAGE-OTHER-${Date.now()}` }), { 'X-API-Key': other.api_key });
  otherInvoice = theirs.json.data.invoice_reference as string;
  await eventually(async () => (await harness.platform.deps.temporal.client.workflow.getHandle(invoice).describe().then(() => true, () => false)) || undefined);
  expect((await harness.sandbox.pay(invoice, '25.5')).status).toBe(200);
  await eventually(async () => {
    const row = await harness.platform.deps.database('webhook_events').where({ invoice_reference: invoice }).first();
    return row?.status === 'delivered' ? row : undefined;
  }, 60_000);
  browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.stop();
});

it('shows the payment in the merchant’s words: summary, steps, technical details folded; refunds it', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, merchant);
  const response = await page.goto(`${base}/dashboard/payments/${invoice}`);
  expect(response?.status()).toBe(200);
  const body = await response!.text();
  expect(body).not.toMatch(/<script|javascript:|\son[a-z]+=|style="/i);
  expect(response!.headers()['content-security-policy']).toContain("default-src 'none'");
  expect(await page.textContent('h1')).toBe(`Payment ${order}`);

  // The summary first: what a merchant asks of a payment, in major units.
  const payin = await harness.platform.deps.database('payins').where({ invoice_reference: invoice }).first();
  const fee = BigInt(payin.fee_units as string);
  expect(await page.textContent('#summary-amount')).toBe('25.500000 USDT');
  expect(await page.getAttribute('#summary .badge', 'data-status')).toBe('success');
  expect(await page.textContent('#summary .badge')).toBe('Paid');
  expect(await page.textContent('#summary-order')).toBe(order);
  expect(await page.textContent('#summary-paid')).toBe('25.500000 USDT');
  const units = (text: string | null) => BigInt(text!.replace(' USDT', '').replace('.', ''));
  expect(units(await page.textContent('#summary-fee'))).toBe(fee);
  expect(units(await page.textContent('#summary-net'))).toBe(25_500_000n - fee);
  expect(await page.textContent('#summary-payer')).toMatch(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
  expect(await page.getAttribute('#summary-settled time', 'datetime')).toMatch(/^\d{4}-\d{2}-\d{2}T/);

  // The story: the merchant's steps in time order; no Temporal internals among them.
  const steps = await page.locator('#steps > li').evaluateAll((items) => items.map((item) => item.getAttribute('data-step')));
  expect(steps).toEqual(['created', 'settled', 'webhook_failed', 'webhook_delivered']);
  expect(await page.textContent('#steps')).not.toMatch(/timer|activity|search_attributes|ledger|fee_revenue|:settle/);

  // The platform's entries folded under "Technical details", closed, with no Web UI link (not public).
  expect(await page.locator('#technical-details').getAttribute('open')).toBeNull();
  expect(await page.locator('#timeline > li[data-kind="workflow.started"]').count()).toBe(1);
  expect(await page.locator('#timeline > li[data-kind="ledger.posted"]').count()).toBeGreaterThan(0);
  expect(await page.locator('#timeline').isVisible()).toBe(false);
  expect(await page.locator('#technical a').count()).toBe(0);
  await page.click('#technical-details > summary');
  expect(await page.locator('#timeline').isVisible()).toBe(true);

  const audit = await auditPage(page, 'payment');
  expect(audit.violations).toEqual([]);
  expect(audit.overflowing).toEqual([]);

  // The refund button: part of the payment back to the payer's address.
  const sent = {
    csrf_token: (await page.getAttribute('#refund-form input[name=csrf_token]', 'value'))!,
    idempotency_key: (await page.getAttribute('#refund-form input[name=idempotency_key]', 'value'))!,
    amount: '5',
    reason: 'customer returned one item',
  };
  await page.fill('#refund-amount', '5');
  await page.fill('#refund-reason', 'customer returned one item');
  const refunded = await Promise.all([page.waitForNavigation(), page.click('#refund')]).then(() => page);
  expect(new URL(refunded.url()).pathname).toBe(`/dashboard/payments/${invoice}`);
  expect(await page.textContent('#notice')).toMatch(/^Refund RFD-[A-Z0-9]{20} requested/);
  expect(await page.textContent('#refunds tbody')).toContain('5.000000 USDT');
  const stepsAfter = await page.locator('#steps > li').evaluateAll((items) => items.map((item) => item.getAttribute('data-step')));
  expect(stepsAfter).toContain('refund_requested');
  const rows = await harness.platform.deps.database('refunds').where({ invoice_reference: invoice });
  expect(rows.map((row) => [String(row.amount_units), row.address])).toEqual([['5000000', await page.textContent('#summary-payer')]]);
  const afterAudit = await auditPage(page, 'payment-refunded');
  expect(afterAudit.violations).toEqual([]);
  expect(afterAudit.overflowing).toEqual([]);

  // The same form sent again (its key) refunds nothing more; a form without the session's token neither.
  const origin = { Origin: base, 'Sec-Fetch-Site': 'same-origin' };
  const again = await page.request.post(`${base}/dashboard/payments/${invoice}/refund`, { form: sent, headers: origin, maxRedirects: 0 });
  expect(again.status()).toBe(303);
  const forged = await page.request.post(`${base}/dashboard/payments/${invoice}/refund`, {
    form: { ...sent, csrf_token: 'not-the-token', idempotency_key: 'another-key' },
    headers: origin,
    maxRedirects: 0,
  });
  expect(forged.status()).toBe(403);
  // Another merchant's payin, with this session's own token: the same 404 as an unknown one, nothing refunded.
  const foreign = await page.request.post(`${base}/dashboard/payments/${otherInvoice}/refund`, {
    form: { ...sent, idempotency_key: 'foreign-key' },
    headers: origin,
    maxRedirects: 0,
  });
  expect(foreign.status()).toBe(404);
  expect(await harness.platform.deps.database('refunds').where({ invoice_reference: otherInvoice })).toEqual([]);
  const count = await harness.platform.deps.database('refunds').where({ invoice_reference: invoice }).count({ n: '*' });
  expect(String(count[0]!.n)).toBe('1');
  await context.close();
}, 90_000);

it('answers another merchant’s payment and an unknown reference with the same 404 page; without a session, sign-in', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const anonymous = await page.goto(`${base}/dashboard/payments/${invoice}`);
  expect(new URL(anonymous!.url()).pathname).toBe('/dashboard/sign-in');
  await signIn(page, merchant);
  const foreign = await page.goto(`${base}/dashboard/payments/${otherInvoice}`);
  const foreignText = await page.textContent('main');
  const unknown = await page.goto(`${base}/dashboard/payments/PAYIN-AAAAAAAAAAAAAAAAAAAA`);
  const unknownText = await page.textContent('main');
  expect([foreign?.status(), unknown?.status()]).toEqual([404, 404]);
  expect(foreignText).toBe(unknownText);
  expect(foreignText).toContain('There is no such payment.');
  await context.close();
}, 60_000);
