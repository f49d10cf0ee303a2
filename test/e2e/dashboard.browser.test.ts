/**
 * The merchant dashboard in a real browser (docs/dashboard.md): playwright-core drives Debian's chromium, headless.
 * A merchant signs in with its API user name and password, sees its balances after a settled payin, sees the payin's
 * webhook that failed (every attempt 503, retries ended) and redelivers it, reads its webhook endpoint page, lists its
 * payments (filtered, a second page) and events, sees when a pending delivery retries next, and signs out through
 * the navigation bar; the sign-in form and the payments filters work from the keyboard alone; every page carries the strict CSP and no script; forms from
 * another site, without the CSRF token or with another session's change nothing (403); wrong passwords lock one
 * (merchant, address) pair and not another address (FACADE_TRUSTED_PROXY_HOPS=1, each browser context its own
 * X-Forwarded-For).
 *
 * A screenshot of each page is written to test-artifacts/dashboard/ (git-ignored), for a reviewer to look at.
 */
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page, type Response } from 'playwright-core';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { recordWebhookEvent } from '../../src/webhooks';
import { chromiumPath } from '../support/chromium';
import { auditPage } from '../support/dashboard-audit';
import { createTestMerchant, eventually, post, startPayinHarness, type PayinHarness } from '../support/payin-setup';

const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts', 'dashboard');
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const FAILURES_PER_PAIR = 3;

let harness: PayinHarness;
let merchant: MerchantCredentials;
let browser: Browser;
let base: string;
let webhookId: string;
let settledInvoice: string;
let attacker: http.Server;
let attackerPort: number;
/** The attacker's page: a form posting to `action`, fields as hidden inputs. */
let attackerForm = { action: '', fields: {} as Record<string, string> };

/** Every page shot is also checked: axe-core finds no violation, no sideways scrolling at 390, 1280 or 1440 px. */
async function screenshot(page: Page, name: string): Promise<void> {
  const audit = await auditPage(page, name);
  expect([name, audit.violations]).toEqual([name, []]);
  expect([name, audit.overflowing]).toEqual([name, []]);
}

/** The headers every dashboard page answers with, and no script in it. */
async function expectSecurePage(response: Response | null): Promise<void> {
  expect(response).not.toBeNull();
  const headers = response!.headers();
  expect({
    csp: headers['content-security-policy'],
    nosniff: headers['x-content-type-options'],
    referrer: headers['referrer-policy'],
    cache: headers['cache-control'],
    frame: headers['x-frame-options'],
    type: headers['content-type'],
  }).toEqual({ csp: CSP, nosniff: 'nosniff', referrer: 'no-referrer', cache: 'no-store', frame: 'DENY', type: 'text/html; charset=utf-8' });
  const body = await response!.text();
  expect(body).not.toMatch(/<script|javascript:|\son[a-z]+=|style="/i);
}

async function signIn(page: Page, password = merchant.api_password, userName = merchant.api_user_name): Promise<Response | null> {
  await page.goto(`${base}/dashboard/sign-in`);
  await page.fill('#user_name', userName);
  await page.fill('#password', password);
  const [response] = await Promise.all([page.waitForNavigation(), page.click('#sign-in')]);
  return response;
}

async function webhookEvent() {
  return harness.platform.deps.database('webhook_events').where({ id: webhookId }).first();
}

/** The navigation bar's link `label`. */
const navLink = (label: string) => `nav[aria-label="Dashboard"] a:text-is("${label}")`;

/** The payments table's references, in order. */
const listedReferences = (page: Page) => page.locator('#payments tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-reference')));

const attemptCount = async () => Number((await harness.platform.deps.database('webhook_delivery_attempts').where({ webhook_id: webhookId }).count('* as n').first())?.n ?? 0);

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  harness = await startPayinHarness({
    env: {
      // Each browser context stands for a client address of its own (X-Forwarded-For, one trusted proxy).
      FACADE_TRUSTED_PROXY_HOPS: '1',
      AUTH_FAILURES_PER_CREDENTIAL: String(FAILURES_PER_PAIR),
      // A failing webhook gives up within about a second: six attempts, 0.2 s apart.
      WEBHOOK_RETRY_INITIAL_SECONDS: '0.2',
      WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: '0.2',
      WEBHOOK_RETRY_WINDOW_SECONDS: '1',
    },
  });
  base = harness.platform.facadeUrl;
  merchant = await createTestMerchant(harness);
  harness.receiver.configure({ hmac_secret: merchant.hmac_secret, unavailable: true });

  // A payin of 25.5 USDT settles; its webhook fails on every attempt (503) until its retries end.
  const created = await post(base, '/api/v1/payins', JSON.stringify({ amount: 25.5, out_trade_no: `DASH-${Date.now()}` }), { 'X-API-Key': merchant.api_key });
  expect(created.status).toBe(200);
  const invoice = created.json.data.invoice_reference as string;
  settledInvoice = invoice;
  expect((await harness.sandbox.pay(invoice, '25.5')).status).toBe(200);
  const event = await eventually(async () => {
    const row = await harness.platform.deps.database('webhook_events').where({ invoice_reference: invoice }).first();
    return row?.status === 'failed' ? row : undefined;
  });
  webhookId = event.id;

  attacker = http.createServer((_request, response) => {
    const inputs = Object.entries(attackerForm.fields)
      .map(([name, value]) => `<input type="hidden" name="${name}" value="${value}">`)
      .join('');
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!DOCTYPE html><title>Win a prize</title><form method="post" action="${attackerForm.action}">${inputs}<button id="go">Claim</button></form>`);
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', () => resolve()));
  attackerPort = (attacker.address() as net.AddressInfo).port;
  browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve()));
  await harness?.stop();
});

describe('a merchant in the dashboard', () => {
  let context: BrowserContext;
  let page: Page;
  beforeAll(async () => {
    context = await browser.newContext();
    page = await context.newPage();
  });
  afterAll(() => context?.close());

  it('is sent to the sign-in form, signs in and sees its balances', async () => {
    const first = await page.goto(`${base}/dashboard`);
    expect(page.url()).toBe(`${base}/dashboard/sign-in`);
    await expectSecurePage(first);
    expect(await page.textContent('h1')).toBe('Sign in');
    await screenshot(page, '01-sign-in');

    const landed = await signIn(page);
    expect(page.url()).toBe(`${base}/dashboard/balances`);
    await expectSecurePage(landed);
    expect(await page.textContent('#merchant-name')).toBe('Test merchant');
    expect(await page.textContent('#available-USDT')).toBe('25.245000');
    expect(await page.getAttribute('nav a[aria-current="page"]', 'href')).toBe('/dashboard/balances');
    await screenshot(page, '02-balances');

    const [session] = (await context.cookies()).filter((cookie) => cookie.name === 'dashboard_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/dashboard', secure: false });
    expect((await context.cookies()).map((cookie) => cookie.name)).not.toContain('dashboard_signin');
  });

  it('sees the webhook that failed, with each attempt, and redelivers it', async () => {
    const response = await Promise.all([page.waitForNavigation(), page.click(navLink('Webhooks'))]).then(([answer]) => answer);
    await expectSecurePage(response);
    const delivery = page.locator(`article[data-webhook-id="${webhookId}"]`);
    expect(await delivery.locator('dd.status-failed').textContent()).toBe('Failed: retries ended');
    const codes = await delivery.locator('tbody tr td:nth-child(3)').allTextContents();
    expect(codes.length).toBeGreaterThanOrEqual(2);
    expect(new Set(codes)).toEqual(new Set(['503']));
    await screenshot(page, '03-webhooks-failed');

    const before = await attemptCount();
    harness.receiver.configure({ unavailable: false });
    const [redirected] = await Promise.all([page.waitForNavigation(), delivery.locator('button', { hasText: 'Redeliver' }).click()]);
    await expectSecurePage(redirected);
    expect(await page.textContent('#notice')).toContain(webhookId);
    await eventually(async () => (await webhookEvent())?.status === 'delivered');
    expect(await attemptCount()).toBe(before + 1);
    const accepted = harness.receiver.accepted().filter((webhook) => webhook.webhook_id === webhookId);
    expect(accepted).toHaveLength(1);
    expect(accepted[0]!.signature_valid).toBe(true);

    await page.reload();
    expect(await delivery.locator('dd.status-delivered').textContent()).toBe('Delivered');
    expect(await delivery.locator('tbody tr:last-child td:nth-child(3)').textContent()).toBe('200');
    await screenshot(page, '04-webhooks-redelivered');
  });

  it('reads its webhook endpoint and signing headers, never the secret, each one sent on a real webhook', async () => {
    const response = await Promise.all([page.waitForNavigation(), page.click(navLink('Endpoint'))]).then(([answer]) => answer);
    await expectSecurePage(response);
    expect(await page.textContent('#callback-url')).toBe(harness.receiver.url);
    expect(await page.textContent('#signature-header')).toBe('X-Signature');
    const listed = await page.locator('#headers tbody th').allTextContents();
    const sent = harness.receiver.accepted().find((webhook) => webhook.webhook_id === webhookId)!.headers;
    expect(listed.length).toBe(7);
    for (const name of listed) expect(sent[name.toLowerCase()]).toBeDefined();
    expect(await page.content()).not.toContain(merchant.hmac_secret);
    expect(await page.textContent('pre')).toContain("headers['x-signature']");
    await screenshot(page, '05-webhook-endpoint');
  });

  it('lists its payments, one row per reference, filters them by status and pages through them', async () => {
    // Two more payins, not paid: with the settled one, three payments.
    const unpaid: string[] = [];
    for (const index of [1, 2]) {
      const answer = await post(base, '/api/v1/payins', JSON.stringify({ amount: 10 + index, out_trade_no: `DASH-UNPAID-${Date.now()}-${index}` }), { 'X-API-Key': merchant.api_key });
      expect(answer.status).toBe(200);
      unpaid.push(answer.json.data.invoice_reference as string);
    }
    const response = await Promise.all([page.waitForNavigation(), page.click(navLink('Payments'))]).then(([answer]) => answer);
    await expectSecurePage(response);
    expect(await page.getAttribute('nav a[aria-current="page"]', 'href')).toBe('/dashboard/payments');
    expect(await listedReferences(page)).toEqual([unpaid[1], unpaid[0], settledInvoice]);
    const settled = page.locator(`#payments tr[data-reference="${settledInvoice}"]`);
    expect(await settled.locator('td').allTextContents()).toEqual([
      'Payin',
      'Paid',
      '25.500000 USDT',
      expect.stringMatching(/^\d+\.\d{6}$/),
      expect.stringMatching(/^\d+\.\d{6}$/),
      expect.stringMatching(/UTC$/),
      expect.stringMatching(/UTC$/),
    ]);
    expect(await settled.locator('th a').getAttribute('href')).toBe(`/dashboard/payments/${settledInvoice}`);
    await screenshot(page, '10-payments');

    // The filters from the keyboard: Tab from the top of the page reaches each of them, in order, then the button.
    await page.goto(`${base}/dashboard/payments?page_size=1`);
    const reached: string[] = [];
    for (let step = 0; step < 30 && reached.at(-1) !== 'apply'; step++) {
      await page.keyboard.press('Tab');
      // The document's active element: a date field's parts are focused inside its own shadow tree, not matched by :focus.
      const id = await page.evaluate('document.activeElement ? document.activeElement.id : ""');
      if (typeof id === 'string' && id && reached.at(-1) !== id) reached.push(id);
    }
    const fields = ['kind', 'status', 'out_trade_no', 'reference', 'amount_from', 'amount_to', 'created_from', 'created_to', 'apply'];
    expect(reached.filter((id) => fields.includes(id))).toEqual(fields);
    await page.selectOption('#status', 'created');
    await page.focus('#apply');
    const filtered = await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]).then(([answer]) => answer);
    await expectSecurePage(filtered);
    expect(new URL(page.url()).searchParams.get('status')).toBe('created');
    expect(await listedReferences(page)).toEqual([unpaid[1]]);
    expect(await page.locator('#payments tbody td:nth-child(3)').allTextContents()).toEqual(['Awaiting payment']);
    expect(await page.isVisible('#newer')).toBe(false);
    await screenshot(page, '11-payments-filtered');

    const second = await Promise.all([page.waitForNavigation(), page.click('#older')]).then(([answer]) => answer);
    await expectSecurePage(second);
    expect(new URL(page.url()).searchParams.get('status')).toBe('created');
    expect(await listedReferences(page)).toEqual([unpaid[0]]);
    expect(await page.isVisible('#older')).toBe(false);
    expect(await page.isVisible('#newer')).toBe(true);
    await screenshot(page, '12-payments-page-2');
  });

  it('lists its events newest first and filters them by subject', async () => {
    const response = await Promise.all([page.waitForNavigation(), page.click(navLink('Events'))]).then(([answer]) => answer);
    await expectSecurePage(response);
    const types = await page.locator('#events > li > p > code').allTextContents();
    expect(types).toEqual(expect.arrayContaining(['payin.created', 'payin.success', 'webhook.failed']));
    const seqs = (await page.locator('#events > li').evaluateAll((items) => items.map((item) => item.getAttribute('data-seq')))).map(Number);
    expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
    await page.fill('#subject', settledInvoice);
    await Promise.all([page.waitForNavigation(), page.press('#subject', 'Enter')]);
    expect(new Set(await page.locator('#events > li > p > a').allTextContents())).toEqual(new Set([settledInvoice]));
    expect(await page.locator('#events > li > p > code').allTextContents()).toEqual(expect.arrayContaining(['payin.created', 'payin.success']));
    await screenshot(page, '13-events');
  });

  it('sees when a pending delivery retries next, as its last attempt recorded it', async () => {
    // A delivery whose first attempt failed and whose next is due in an hour (recorded as a run records it).
    const pendingId = `WH-DASHBOARD-E2E-${Date.now()}`;
    const dueAt = new Date(Date.now() + 3_600_000);
    await harness.platform.deps.database.transaction((trx) =>
      recordWebhookEvent(trx, { id: pendingId, merchant_id: merchant.merchant_id, subject_reference: settledInvoice, event: 'payin.success', body: '{}' }),
    );
    await harness.platform.deps.database('webhook_delivery_attempts').insert({
      webhook_id: pendingId,
      attempt: 1,
      attempted_at: new Date(),
      status_code: 503,
      latency_ms: 15,
      error: 'HTTP 503',
      next_retry_at: dueAt,
    });
    const response = await Promise.all([page.waitForNavigation(), page.click(navLink('Webhooks'))]).then(([answer]) => answer);
    await expectSecurePage(response);
    const delivery = page.locator(`article[data-webhook-id="${pendingId}"]`);
    expect(await delivery.locator('dd.status-pending').textContent()).toBe('Pending');
    expect(await delivery.locator('dt:text-is("Next retry") + dd time').getAttribute('datetime')).toBe(dueAt.toISOString());
    await screenshot(page, '14-webhooks-next-retry');
  });

  it('signs out: the session ends and the pages send it back to sign-in', async () => {
    const [response] = await Promise.all([page.waitForNavigation(), page.click('#sign-out')]);
    await expectSecurePage(response);
    expect(page.url()).toBe(`${base}/dashboard/sign-in`);
    expect((await context.cookies()).map((cookie) => cookie.name)).not.toContain('dashboard_session');
    await page.goto(`${base}/dashboard/webhooks`);
    expect(page.url()).toBe(`${base}/dashboard/sign-in`);
    expect(await harness.platform.deps.database('dashboard_sessions').where({ merchant_id: merchant.merchant_id }).count('* as n').first()).toEqual({ n: 0n });
    await screenshot(page, '06-signed-out');
  });
});

describe('the sign-in form from the keyboard alone', () => {
  it('is reached with Tab in order (skip link, user name, password, button) and sent with Enter', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`${base}/dashboard/sign-in`);
      const focused = async () => {
        const element = page.locator(':focus');
        return (await element.getAttribute('id')) ?? (await element.getAttribute('class'));
      };
      const order: string[] = [];
      for (let step = 0; step < 4; step++) {
        await page.keyboard.press('Tab');
        order.push(String(await focused()));
      }
      expect(order).toEqual(['skip', 'user_name', 'password', 'sign-in']);
      await page.keyboard.press('Shift+Tab');
      await page.keyboard.press('Shift+Tab');
      await page.keyboard.type(merchant.api_user_name);
      await page.keyboard.press('Tab');
      await page.keyboard.type(merchant.api_password);
      await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
      expect(page.url()).toBe(`${base}/dashboard/balances`);
      // On to the next page by keyboard: Tab to its link in the navigation, Enter.
      const tabbedTo: string[] = [];
      while (tabbedTo.at(-1) !== 'Sign out' && tabbedTo.length < 10) {
        await page.keyboard.press('Tab');
        tabbedTo.push((await page.locator(':focus').textContent()) ?? '');
      }
      // Skip link, then the navigation bar in its order, sign-out last.
      expect(tabbedTo).toEqual(['Skip to content', 'Balances', 'Payments', 'Payouts', 'Events', 'Webhooks', 'Endpoint', 'Policy', 'Sign out']);
      for (let step = 0; step < 3; step++) await page.keyboard.press('Shift+Tab');
      expect(await page.locator(':focus').textContent()).toBe('Webhooks');
      await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
      expect(page.url()).toBe(`${base}/dashboard/webhooks`);
    } finally {
      await context.close();
    }
  });
});

describe('forms that did not come from this session change nothing', () => {
  let victim: BrowserContext;
  let page: Page;
  let redeliverUrl: string;
  beforeAll(async () => {
    victim = await browser.newContext();
    page = await victim.newPage();
    await signIn(page);
    redeliverUrl = `${base}/dashboard/webhooks/${webhookId}/redeliver`;
  });
  afterAll(() => victim?.close());

  it('from another site (cross-site: no cookie; same-site, another port: no token): 403, nothing redelivered', async () => {
    const before = await attemptCount();
    attackerForm = { action: redeliverUrl, fields: {} };
    for (const host of ['localhost', '127.0.0.1']) {
      await page.goto(`http://${host}:${attackerPort}/`);
      const [response] = await Promise.all([page.waitForNavigation(), page.click('#go')]);
      expect({ host, status: response!.status() }).toEqual({ host, status: 403 });
      await expectSecurePage(response);
    }
    expect(await page.textContent('#message')).toContain('Nothing was changed');
    await screenshot(page, '07-form-refused');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await attemptCount()).toBe(before);
  });

  it('with the session cookie but no CSRF token, or another session\'s: 403, nothing redelivered, the refusals audited', async () => {
    const other = await browser.newContext();
    try {
      const otherPage = await other.newPage();
      await signIn(otherPage);
      await otherPage.goto(`${base}/dashboard/webhooks`);
      const othersToken = (await otherPage.getAttribute('input[name="csrf_token"]', 'value'))!;
      await page.goto(`${base}/dashboard/webhooks`);
      const ownToken = (await page.getAttribute('input[name="csrf_token"]', 'value'))!;
      expect(othersToken).not.toBe(ownToken);

      const before = await attemptCount();
      const without = await victim.request.post(redeliverUrl, { form: {}, maxRedirects: 0 });
      const withOthers = await victim.request.post(redeliverUrl, { form: { csrf_token: othersToken }, maxRedirects: 0 });
      const signOutWithOthers = await victim.request.post(`${base}/dashboard/sign-out`, { form: { csrf_token: othersToken }, maxRedirects: 0 });
      expect([without.status(), withOthers.status(), signOutWithOthers.status()]).toEqual([403, 403, 403]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await attemptCount()).toBe(before);
      // The victim's session still works; the right token is accepted.
      const own = await victim.request.post(redeliverUrl, { form: { csrf_token: ownToken }, maxRedirects: 0 });
      expect(own.status()).toBe(303);
      const outcomes = await harness.platform.deps
        .database('audit_records')
        .where({ procedure: 'payments.dashboard.v1.DashboardService/RedeliverWebhook' })
        .orderBy('id')
        .pluck('outcome');
      expect(outcomes.slice(-3)).toEqual(['CSRF_TOKEN_INVALID', 'CSRF_TOKEN_INVALID', 'ok']);
    } finally {
      await other.close();
    }
  });
});

describe('lockouts, as at /login', () => {
  it('locks (merchant, address) after wrong passwords, the right one included, and not another address; one message for a wrong name or password', async () => {
    const attackerContext = await browser.newContext({ extraHTTPHeaders: { 'X-Forwarded-For': '198.51.100.7' } });
    const ownerContext = await browser.newContext({ extraHTTPHeaders: { 'X-Forwarded-For': '198.51.100.8' } });
    try {
      const page = await attackerContext.newPage();
      const unknownName = await signIn(page, 'whatever', 'merchant_nobody_here');
      const unknownMessage = await page.textContent('#error');
      const wrong: number[] = [];
      let message = '';
      for (let index = 0; index < FAILURES_PER_PAIR; index++) {
        wrong.push((await signIn(page, `wrong-${index}`))!.status());
        message = (await page.textContent('#error')) ?? '';
      }
      expect(wrong).toEqual(Array(FAILURES_PER_PAIR).fill(401));
      expect({ status: unknownName!.status(), message: unknownMessage }).toEqual({ status: 401, message });
      expect(message).toBe('The user name or password is wrong.');
      await screenshot(page, '08-sign-in-refused');

      const locked = await signIn(page);
      expect(locked!.status()).toBe(429);
      expect(Number(locked!.headers()['retry-after'])).toBeGreaterThan(0);
      await expectSecurePage(locked);
      expect(page.url()).toBe(`${base}/dashboard/sign-in`);
      await screenshot(page, '09-locked');

      const owner = await ownerContext.newPage();
      await signIn(owner);
      expect(owner.url()).toBe(`${base}/dashboard/balances`);
    } finally {
      await attackerContext.close();
      await ownerContext.close();
    }
  });
});
