/**
 * The dashboard's payment page in a real browser (docs/timeline.md, docs/dashboard.md): a merchant signed in opens
 * `/dashboard/payments/<reference>` of its settled payin whose first webhook attempt failed, and reads the postings
 * (the balance after on its own wallet) and the timeline in time order: the request, the workflow's start, the
 * upstream's notification, the posting, the failed attempt and the delivered one; each entry's details open without
 * a script. Another merchant's payment and an unknown reference answer the same 404 page; without a session the page
 * sends to sign-in. A screenshot is written to test-artifacts/dashboard/payment.png (git-ignored).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { chromiumPath } from '../support/chromium';
import { createTestMerchant, eventually, post, startPayinHarness, type PayinHarness } from '../support/payin-setup';

const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts', 'dashboard');

let harness: PayinHarness;
let merchant: MerchantCredentials;
let other: MerchantCredentials;
let browser: Browser;
let base: string;
let invoice: string;
let otherInvoice: string;

async function signIn(page: Page, who: MerchantCredentials): Promise<void> {
  await page.goto(`${base}/dashboard/sign-in`);
  await page.fill('#user_name', who.api_user_name);
  await page.fill('#password', who.api_password);
  await Promise.all([page.waitForNavigation(), page.click('#sign-in')]);
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  harness = await startPayinHarness({ env: { TEMPORAL_UI_URL: 'http://127.0.0.1:8233' } });
  base = harness.platform.facadeUrl;
  merchant = await createTestMerchant(harness);
  other = await createTestMerchant(harness);
  harness.receiver.configure({ hmac_secret: merchant.hmac_secret, fail_first: 1 });
  const created = await post(base, '/api/v1/payins', JSON.stringify({ amount: 25.5, out_trade_no: `PAGE-${Date.now()}` }), { 'X-API-Key': merchant.api_key });
  expect(created.status).toBe(200);
  invoice = created.json.data.invoice_reference as string;
  const theirs = await post(base, '/api/v1/payins', JSON.stringify({ amount: 1, out_trade_no: `PAGE-OTHER-${Date.now()}` }), { 'X-API-Key': other.api_key });
  otherInvoice = theirs.json.data.invoice_reference as string;
  // The workflow runs before the provider pays, so its start comes first in the story.
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

it('shows the merchant its payment: postings, then the timeline in order, details without a script', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, merchant);
  const response = await page.goto(`${base}/dashboard/payments/${invoice}`);
  expect(response?.status()).toBe(200);
  const body = await response!.text();
  expect(body).not.toMatch(/<script|javascript:|\son[a-z]+=|style="/i);
  expect(response!.headers()['content-security-policy']).toContain("default-src 'none'");
  expect(await page.textContent('h1')).toBe(`Payment ${invoice}`);
  expect(await page.textContent('#reference')).toBe(invoice);

  // The money: the settlement's postings, the merchant's own wallet with its balance after.
  const postings = await Promise.all((await page.locator('#postings tbody tr').all()).map(async (row) => (await row.locator('td').allTextContents()).map((text) => text.trim())));
  expect(postings.length).toBeGreaterThanOrEqual(2);
  const own = postings.find((cells) => cells[2]!.includes('(yours)'));
  expect(own).toBeDefined();
  expect(own![4]).toMatch(/^\d+\.\d+ USDT$/);

  // The timeline, in time order.
  const entries = await Promise.all(
    (await page.locator('#timeline > li').all()).map(async (item) => ({ kind: await item.getAttribute('data-kind'), at: (await item.locator('time').first().getAttribute('datetime')) ?? '' })),
  );
  expect(entries.map((entry) => entry.at)).toEqual([...entries.map((entry) => entry.at)].sort());
  const position = (kind: string) => entries.findIndex((entry) => entry.kind === kind);
  const story = ['request.area-b.create_payin', 'workflow.started', 'provider.notification', 'ledger.posted', 'webhook.failed', 'webhook.delivered'].map(position);
  expect(story.every((index) => index >= 0)).toBe(true);
  expect(story).toEqual([...story].sort((a, b) => a - b));
  // Workflow entries link to the Temporal Web UI (TEMPORAL_UI_URL).
  expect(await page.getAttribute('#timeline > li[data-kind="workflow.started"] a', 'href')).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:8233/namespaces/.+/workflows/${invoice}/`));
  // A failed attempt's details open without a script and name its status code.
  const failed = page.locator('#timeline > li[data-kind="webhook.failed"]').first();
  await failed.locator('summary').click();
  expect(await failed.locator('pre').isVisible()).toBe(true);
  expect(await failed.locator('pre').textContent()).toContain('"status_code": 500');
  await page.screenshot({ path: path.join(ARTIFACTS, 'payment.png'), fullPage: true });
  await context.close();
}, 60_000);

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
