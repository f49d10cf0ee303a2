/**
 * The dashboard's Payment policy page in a real browser (docs/dashboard.md, docs/refunds.md "Outcome policies"):
 * playwright-core drives Debian's chromium, headless. A merchant reaches the page from the navigation, sees the
 * default (credit everything), changes its policy with the form and sees it stored and announced; a refused value
 * answers 400 naming the field and changes nothing; a form without the session's CSRF token changes nothing (403);
 * the change is audited; and a payment settled afterwards follows the new policy (refunded to the payer).
 *
 * A screenshot of each state is written to test-artifacts/dashboard/ (git-ignored), for a reviewer to look at.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page, type Response } from 'playwright-core';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { chromiumPath } from '../support/chromium';
import { auditPage } from '../support/dashboard-audit';
import { createTestMerchant, eventually, post, startPayinHarness, type PayinHarness } from '../support/payin-setup';

const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts', 'dashboard');
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

let harness: PayinHarness;
let merchant: MerchantCredentials;
let browser: Browser;
let base: string;

/** Every page shot is also checked: axe-core finds no violation, no sideways scrolling at 390, 1280 or 1440 px. */
async function screenshot(page: Page, name: string): Promise<void> {
  const audit = await auditPage(page, name);
  expect([name, audit.violations]).toEqual([name, []]);
  expect([name, audit.overflowing]).toEqual([name, []]);
}

async function expectSecurePage(response: Response | null, status = 200): Promise<void> {
  expect(response).not.toBeNull();
  expect(response!.status()).toBe(status);
  expect(response!.headers()['content-security-policy']).toBe(CSP);
  expect(await response!.text()).not.toMatch(/<script|javascript:|\son[a-z]+=|style="/i);
}

const storedPolicy = () => harness.platform.deps.database('merchant_outcome_policies').where({ merchant_id: merchant.merchant_id }).first();

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  harness = await startPayinHarness();
  base = harness.platform.facadeUrl;
  merchant = await createTestMerchant(harness);
  harness.receiver.configure({ hmac_secret: merchant.hmac_secret });
  browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
});

afterAll(async () => {
  await browser?.close();
  await harness?.stop();
});

describe('the payment policy page', () => {
  let context: BrowserContext;
  let page: Page;
  beforeAll(async () => {
    context = await browser.newContext();
    page = await context.newPage();
    await page.goto(`${base}/dashboard/sign-in`);
    await page.fill('#user_name', merchant.api_user_name);
    await page.fill('#password', merchant.api_password);
    await Promise.all([page.waitForNavigation(), page.click('#sign-in')]);
  });
  afterAll(() => context?.close());

  it('shows the default from the navigation: credit everything, nothing stored', async () => {
    const [response] = await Promise.all([page.waitForNavigation(), page.click('nav[aria-label="Dashboard"] a:text-is("Policy")')]);
    expect(page.url()).toBe(`${base}/dashboard/payment-policy`);
    await expectSecurePage(response);
    expect(await page.textContent('h1')).toBe('Payment policy');
    expect(await page.getAttribute('nav a[aria-current="page"]', 'href')).toBe('/dashboard/payment-policy');
    expect(await page.textContent('#policy-status')).toContain('No policy is set');
    expect([await page.textContent('#policy-underpaid'), await page.textContent('#policy-overpaid'), await page.textContent('#policy-late')]).toEqual(['credit', 'credit', 'credit']);
    expect(await storedPolicy()).toBeUndefined();
    await screenshot(page, 'policy-01-default');
  });

  it('refuses a tolerance out of range with the page naming it, nothing changed', async () => {
    await page.selectOption('#underpaid', 'refund');
    await page.fill('#tolerance_percent', '150');
    const [response] = await Promise.all([page.waitForNavigation(), page.click('#save-policy')]);
    await expectSecurePage(response, 400);
    expect(await page.textContent('#problems')).toContain('Tolerance must be a percent from 0 to 100');
    expect(await storedPolicy()).toBeUndefined();
    await screenshot(page, 'policy-02-refused');
  });

  it('saves a change from the form, keyboard included, and shows it stored, audited', async () => {
    await page.selectOption('#underpaid', 'refund');
    await page.selectOption('#overpaid', 'refund_excess');
    await page.fill('#tolerance_percent', '1.5');
    await page.focus('#tolerance_percent');
    const [response] = await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
    expect(page.url()).toBe(`${base}/dashboard/payment-policy?saved=1`);
    await expectSecurePage(response);
    expect(await page.textContent('#notice')).toContain('was saved');
    expect([await page.textContent('#policy-underpaid'), await page.textContent('#policy-overpaid'), await page.textContent('#policy-tolerance')]).toEqual([
      'refund',
      'refund_excess',
      '1.5 %',
    ]);
    expect(await storedPolicy()).toMatchObject({ underpaid: 'refund', overpaid: 'refund_excess', late: 'credit', tolerance_percent: '1.5', updated_by: `dashboard:${merchant.merchant_id}` });
    const outcomes = await harness.platform.deps.database('audit_records').where({ procedure: 'payments.dashboard.v1.DashboardService/SetOutcomePolicy' }).orderBy('id').pluck('outcome');
    expect(outcomes).toEqual(['VALIDATION_FAILED', 'ok']);
    await screenshot(page, 'policy-03-saved');
  });

  it('changes nothing for a form without the session\'s CSRF token (403)', async () => {
    const refused = await context.request.post(`${base}/dashboard/payment-policy`, {
      form: { underpaid: 'credit', overpaid: 'credit', late: 'credit', tolerance_percent: '0' },
      maxRedirects: 0,
    });
    expect(refused.status()).toBe(403);
    expect(await storedPolicy()).toMatchObject({ underpaid: 'refund', tolerance_percent: '1.5' });
  });

  it('applies to the next payment: an underpaid one is refunded to the payer', async () => {
    const created = await post(base, '/api/v1/payins', JSON.stringify({ amount: 10, out_trade_no: `POL-${Date.now()}` }), { 'X-API-Key': merchant.api_key });
    expect(created.status).toBe(200);
    const invoice_reference = created.json.data.invoice_reference as string;
    expect((await harness.sandbox.pay(invoice_reference, '5')).status).toBe(200);
    const refund = await eventually(async () => harness.platform.deps.database('refunds').where({ invoice_reference, status: 'succeeded' }).first());
    expect(refund.amount_units).toBe(4_950_000n);
    expect((await harness.platform.deps.ledger.check()).ok).toBe(true);
  });
});
