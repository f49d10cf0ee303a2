/**
 * The dashboard's payouts page in a real browser (docs/dashboard.md "Payouts"): a merchant with a funded wallet
 * requests a crypto payout with the form (the fee shown before), sees it listed newest first with its status badge;
 * a payout above its approval threshold shows "Pending approval" with Approve / Reject, and rejecting it releases the
 * hold. The same form sent twice pays once; a form without the session's token or from another site answers 403 and
 * changes nothing; another merchant's payout cannot be decided. Each page: axe-core 0 violations, no sideways
 * scrolling at 390 / 1280 / 1440 px. The "Automatic payouts" form sets a weekly schedule (shown, its Temporal Schedule
 * made) and turns it off (the Temporal Schedule gone); a forged or invalid form changes nothing. The ledger balances
 * at the end.
 */
import { mkdirSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { NO_PAYOUT_SETTINGS, setPayoutSettings } from '../../src/flows/payout/store';
import { payoutScheduleId, payoutScheduleOf } from '../../src/flows/payout/schedules';
import { SANDBOX_PAYOUT_ADDRESSES } from '../../src/sandbox/upstream-payouts';
import { chromiumPath } from '../support/chromium';
import { auditPage, DASHBOARD_ARTIFACTS } from '../support/dashboard-audit';
import { createTestMerchant, eventually, startPayinHarness, type PayinHarness } from '../support/payin-setup';

const USDT = 1_000_000n;
let harness: PayinHarness;
let merchant: MerchantCredentials;
let other: MerchantCredentials;
let browser: Browser;
let base: string;

async function signIn(page: Page, who: MerchantCredentials): Promise<void> {
  await page.goto(`${base}/dashboard/sign-in`);
  await page.fill('#user_name', who.api_user_name);
  await page.fill('#password', who.api_password);
  await Promise.all([page.waitForNavigation(), page.click('#sign-in')]);
}

async function fund(who: MerchantCredentials, units: bigint): Promise<void> {
  const deps = harness.platform.deps;
  const address = { owner_type: 'merchant', owner_id: who.merchant_id, currency: 'USDT', kind: 'wallet' } as const;
  const wallet = (await deps.ledger.findAccount(address)) ?? (await deps.ledger.openAccount(address));
  await deps.ledger.transfer({
    idempotency_key: `dashboard-payout-funding-${who.merchant_id}`,
    description: 'test funding',
    postings: [
      { platform: 'settlement', currency: 'USDT', amount_units: -units },
      { account_id: wallet.id, amount_units: units },
    ],
    metadata: {},
  });
}

const payoutsOf = (who: MerchantCredentials) => harness.platform.deps.database('payouts').where({ merchant_id: who.merchant_id }).orderBy('created_at');

beforeAll(async () => {
  mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
  harness = await startPayinHarness({ env: { PAYOUT_DECISION_TIMEOUT_SECONDS: '120', PAYOUT_APPROVAL_TIMEOUT_SECONDS: '300' }, payout_decision_delay_seconds: null });
  base = harness.platform.facadeUrl;
  merchant = await createTestMerchant(harness);
  other = await createTestMerchant(harness);
  await fund(merchant, 50n * USDT);
  await fund(other, 50n * USDT);
  await setPayoutSettings(harness.platform.deps.database, merchant.merchant_id, { ...NO_PAYOUT_SETTINGS, approval_threshold_units: 20n * USDT });
  await setPayoutSettings(harness.platform.deps.database, other.merchant_id, { ...NO_PAYOUT_SETTINGS, approval_threshold_units: 1n * USDT });
  browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await harness?.stop();
});

it('requests a payout with the form, lists it, and lets the merchant reject one pending approval', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, merchant);
  const response = await page.goto(`${base}/dashboard/payouts`);
  expect(response?.status()).toBe(200);
  expect(await response!.text()).not.toMatch(/<script|javascript:|\son[a-z]+=|style="/i);
  expect(await page.getAttribute('nav a[href="/dashboard/payouts"]', 'aria-current')).toBe('page');
  expect(await page.textContent('#payout-fee')).toContain('1 USDT');
  expect(await page.locator('#no-payouts').count()).toBe(1);
  const empty = await auditPage(page, 'payouts-empty');
  expect(empty.violations).toEqual([]);
  expect(empty.overflowing).toEqual([]);

  const sent = {
    csrf_token: (await page.getAttribute('#payout-form input[name=csrf_token]', 'value'))!,
    idempotency_key: (await page.getAttribute('#payout-form input[name=idempotency_key]', 'value'))!,
    amount: '5.5',
    address: SANDBOX_PAYOUT_ADDRESSES.succeeds,
    memo: 'weekly',
  };
  await page.fill('#payout-amount', sent.amount);
  await page.fill('#payout-address', sent.address);
  await page.fill('#payout-memo', sent.memo);
  await Promise.all([page.waitForNavigation(), page.click('#request-payout')]);
  expect(new URL(page.url()).pathname).toBe('/dashboard/payouts');
  expect(await page.textContent('#payout-notice')).toMatch(/^Payout PO-[A-Z0-9]{20} requested/);
  const [first] = await payoutsOf(merchant);
  expect(first).toMatchObject({ source: 'dashboard', amount_units: 5_500_000n, fee_units: USDT, address: SANDBOX_PAYOUT_ADDRESSES.succeeds, memo: 'weekly' });
  const row = page.locator(`#payouts tr[data-reference="${first.payout_reference}"]`);
  expect(await row.textContent()).toContain('5.500000 USDT');
  expect(await row.textContent()).toContain('1.000000 USDT');
  await eventually(async () => ((await harness.platform.deps.database('payouts').where({ payout_reference: first.payout_reference }).first()).status === 'succeeded' ? true : undefined));

  // The same form again (its key) pays nothing more.
  const origin = { Origin: base, 'Sec-Fetch-Site': 'same-origin' };
  const again = await page.request.post(`${base}/dashboard/payouts`, { form: sent, headers: origin, maxRedirects: 0 });
  expect(again.status()).toBe(303);
  expect(await payoutsOf(merchant)).toHaveLength(1);

  // Above the approval threshold: pending approval, with Approve / Reject; rejecting releases the hold.
  await page.goto(`${base}/dashboard/payouts`);
  await page.fill('#payout-amount', '25');
  await page.fill('#payout-address', SANDBOX_PAYOUT_ADDRESSES.succeeds);
  await Promise.all([page.waitForNavigation(), page.click('#request-payout')]);
  const pending = (await payoutsOf(merchant))[1]!;
  expect(pending.status).toBe('awaiting_approval');
  const rows = await page.locator('#payouts tbody tr').evaluateAll((items) => items.map((item) => item.getAttribute('data-reference')));
  expect(rows).toEqual([pending.payout_reference, first.payout_reference]);
  const pendingRow = page.locator(`#payouts tr[data-reference="${pending.payout_reference}"]`);
  expect(await pendingRow.locator('.badge').textContent()).toBe('Pending approval');
  await page.goto(`${base}/dashboard/payouts`);
  const listed = await auditPage(page, 'payouts');
  expect(listed.violations).toEqual([]);
  expect(listed.overflowing).toEqual([]);
  await Promise.all([page.waitForNavigation(), page.click(`button[aria-label="Reject payout ${pending.payout_reference}"]`)]);
  expect(await page.textContent('#payout-notice')).toContain('rejected');
  const rejected = await eventually(async () => {
    const now = await harness.platform.deps.database('payouts').where({ payout_reference: pending.payout_reference }).first();
    return now.status === 'failed' ? now : undefined;
  });
  expect(rejected.status).toBe('failed');
  expect(await harness.platform.deps.database('payout_approvals').where({ payout_reference: pending.payout_reference }).first()).toMatchObject({ decision: 'reject', actor: `merchant:${merchant.merchant_id}` });
  await context.close();
}, 120_000);

it('refuses forged and cross-site forms with 403 and another merchant’s payout with 404: nothing changes; its owner approves it', async () => {
  const theirs = await harness.platform.deps.database('payouts').where({ merchant_id: other.merchant_id });
  expect(theirs).toEqual([]);
  // The other merchant has one payout waiting for approval.
  const otherContext = await browser.newContext();
  const otherPage = await otherContext.newPage();
  await signIn(otherPage, other);
  await otherPage.goto(`${base}/dashboard/payouts`);
  await otherPage.fill('#payout-amount', '3');
  await otherPage.fill('#payout-address', SANDBOX_PAYOUT_ADDRESSES.succeeds);
  await Promise.all([otherPage.waitForNavigation(), otherPage.click('#request-payout')]);
  const [waiting] = await payoutsOf(other);
  expect(waiting.status).toBe('awaiting_approval');
  await otherContext.close();

  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, merchant);
  await page.goto(`${base}/dashboard/payouts`);
  const token = (await page.getAttribute('#payout-form input[name=csrf_token]', 'value'))!;
  const before = (await payoutsOf(merchant)).length;
  const form = { amount: '2', address: SANDBOX_PAYOUT_ADDRESSES.succeeds, memo: '', idempotency_key: 'forged-key' };
  const origin = { Origin: base, 'Sec-Fetch-Site': 'same-origin' };
  const forged = await page.request.post(`${base}/dashboard/payouts`, { form: { ...form, csrf_token: 'not-the-token' }, headers: origin, maxRedirects: 0 });
  expect(forged.status()).toBe(403);
  const crossSite = await page.request.post(`${base}/dashboard/payouts`, { form: { ...form, csrf_token: token }, headers: { 'Sec-Fetch-Site': 'cross-site' }, maxRedirects: 0 });
  expect(crossSite.status()).toBe(403);
  const crossDecision = await page.request.post(`${base}/dashboard/payouts/${waiting.payout_reference}/decision`, {
    form: { csrf_token: token, decision: 'approve' },
    headers: { 'Sec-Fetch-Site': 'cross-site' },
    maxRedirects: 0,
  });
  expect(crossDecision.status()).toBe(403);
  // This session's own token on another merchant's payout: not found, still waiting.
  const foreign = await page.request.post(`${base}/dashboard/payouts/${waiting.payout_reference}/decision`, { form: { csrf_token: token, decision: 'approve' }, headers: origin, maxRedirects: 0 });
  expect(foreign.status()).toBe(404);
  expect((await payoutsOf(merchant)).length).toBe(before);
  expect((await harness.platform.deps.database('payouts').where({ payout_reference: waiting.payout_reference }).first()).status).toBe('awaiting_approval');
  // A refused payout names why: an address that is not TRON's.
  const invalid = await page.request.post(`${base}/dashboard/payouts`, { form: { ...form, csrf_token: token, address: 'not-an-address', idempotency_key: 'invalid-key' }, headers: origin, maxRedirects: 0 });
  expect(invalid.status()).toBe(400);
  expect(await invalid.text()).toContain('TRON address');
  expect((await payoutsOf(merchant)).length).toBe(before);
  await context.close();

  // Its own merchant approves it from its button: it is sent and paid out, recorded as the merchant's decision.
  const ownerContext = await browser.newContext();
  const ownerPage = await ownerContext.newPage();
  await signIn(ownerPage, other);
  await ownerPage.goto(`${base}/dashboard/payouts`);
  await Promise.all([ownerPage.waitForNavigation(), ownerPage.click(`button[aria-label="Approve payout ${waiting.payout_reference}"]`)]);
  expect(await ownerPage.textContent('#payout-notice')).toContain('approved');
  const paid = await eventually(async () => {
    const now = await harness.platform.deps.database('payouts').where({ payout_reference: waiting.payout_reference }).first();
    return now.status === 'succeeded' ? now : undefined;
  });
  expect(paid.status).toBe('succeeded');
  expect(await harness.platform.deps.database('payout_approvals').where({ payout_reference: waiting.payout_reference }).first()).toMatchObject({ decision: 'approve', actor: `merchant:${other.merchant_id}` });
  await ownerContext.close();
  expect((await harness.platform.deps.ledger.check()).ok).toBe(true);
}, 120_000);

it('sets weekly automatic payouts with the form (shown, its Temporal Schedule made), refuses bad and forged forms, and turns them off', async () => {
  const deps = harness.platform.deps;
  const handle = deps.temporal.client.schedule.getHandle(payoutScheduleId(merchant.merchant_id));
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, merchant);
  await page.goto(`${base}/dashboard/payouts`);
  expect(await page.textContent('#payout-schedule-current')).toContain('Off');
  const token = (await page.getAttribute('#payout-schedule-form input[name=csrf_token]', 'value'))!;
  const origin = { Origin: base, 'Sec-Fetch-Site': 'same-origin' };
  const weekly = { every: 'weekly', minimum: '10', reserve: '5', address: SANDBOX_PAYOUT_ADDRESSES.succeeds };

  // A form without the session's token: 403, nothing stored, no Temporal Schedule.
  const forged = await page.request.post(`${base}/dashboard/payouts/schedule`, { form: { ...weekly, csrf_token: 'not-the-token' }, headers: origin, maxRedirects: 0 });
  expect(forged.status()).toBe(403);
  // Bad values: a 400 page naming each, nothing stored.
  const invalid = await page.request.post(`${base}/dashboard/payouts/schedule`, { form: { ...weekly, reserve: '-1', address: 'not-an-address', csrf_token: token }, headers: origin, maxRedirects: 0 });
  expect(invalid.status()).toBe(400);
  const refusal = await invalid.text();
  expect(refusal).toContain('TRON address');
  expect(refusal).toContain('Reserve must be');
  expect(refusal).toContain('Nothing was changed');
  expect(await payoutScheduleOf(deps, merchant.merchant_id)).toBeUndefined();
  await expect(handle.describe()).rejects.toThrow();

  await page.selectOption('#schedule-every', 'weekly');
  await page.fill('#schedule-minimum', weekly.minimum);
  await page.fill('#schedule-reserve', weekly.reserve);
  await page.fill('#schedule-address', weekly.address);
  await Promise.all([page.waitForNavigation(), page.click('#save-payout-schedule')]);
  expect(new URL(page.url()).pathname).toBe('/dashboard/payouts');
  expect(await page.textContent('#payout-notice')).toBe('Automatic payouts saved.');
  const shown = (await page.textContent('#payout-schedule-current'))!;
  expect(shown).toContain('Weekly');
  expect(shown).toContain('10.000000 USDT');
  expect(shown).toContain('5.000000 USDT');
  expect(shown).toContain(weekly.address);
  expect(await page.inputValue('#schedule-every')).toBe('weekly');
  expect(await payoutScheduleOf(deps, merchant.merchant_id)).toMatchObject({ every: 'weekly', minimum_units: 10n * USDT, reserve_units: 5n * USDT, address: weekly.address });
  const described = await handle.describe();
  expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: 'scheduledPayoutWorkflow' });
  expect(JSON.stringify(described.spec.calendars)).toContain('MONDAY');
  const audit = await auditPage(page, 'payouts-schedule');
  expect(audit.violations).toEqual([]);
  expect(audit.overflowing).toEqual([]);

  // A forged form to turn it off changes nothing either.
  const forgedOff = await page.request.post(`${base}/dashboard/payouts/schedule`, { form: { every: 'off', csrf_token: 'not-the-token' }, headers: origin, maxRedirects: 0 });
  expect(forgedOff.status()).toBe(403);
  expect(await payoutScheduleOf(deps, merchant.merchant_id)).toBeDefined();
  expect((await handle.describe()).scheduleId).toBe(payoutScheduleId(merchant.merchant_id));

  await page.selectOption('#schedule-every', 'off');
  await Promise.all([page.waitForNavigation(), page.click('#save-payout-schedule')]);
  expect(await page.textContent('#payout-notice')).toBe('Automatic payouts are off.');
  expect(await page.textContent('#payout-schedule-current')).toContain('Off');
  expect(await payoutScheduleOf(deps, merchant.merchant_id)).toBeUndefined();
  await expect(handle.describe()).rejects.toThrow();
  const outcomes = await deps.database('audit_records').where({ procedure: 'payments.dashboard.v1.DashboardService/SetPayoutSchedule' }).orderBy('id').pluck('outcome');
  expect(outcomes).toEqual(expect.arrayContaining(['VALIDATION_FAILED', 'ok']));
  expect(outcomes.filter((outcome) => outcome === 'ok')).toHaveLength(2);
  await context.close();
  expect((await deps.ledger.check()).ok).toBe(true);
}, 120_000);
