/**
 * The dashboard's lists in a real browser (docs/dashboard.md "Payments", "Exports", "Events", "Balance
 * transactions"): a merchant finds a payment by its order id and exports its month as CSV; filters by amount range;
 * reads the order id, fee and net columns; reads its events newest first with each event's data folded; opens the
 * balance transactions behind its USDT balance (every posting, with its payment) and exports them. Each page:
 * axe-core 0 violations, no sideways scrolling at 390 / 1280 / 1440 px (the payments table fits its page from 1280 px
 * up), a screenshot in test-artifacts/dashboard/.
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
let otherInvoice: string;
let browser: Browser;
let page: Page;
let base: string;
const stamp = Date.now();
const orders = [`SHOP-${stamp}-A`, `SHOP-${stamp}-B`, `SHOP-${stamp}-C`];
const invoices: string[] = [];

async function expectClean(name: string): Promise<void> {
  const audit = await auditPage(page, name);
  expect(audit.violations).toEqual([]);
  expect(audit.overflowing).toEqual([]);
}

beforeAll(async () => {
  mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
  harness = await startPayinHarness();
  base = harness.platform.facadeUrl;
  merchant = await createTestMerchant(harness);
  harness.receiver.configure({ hmac_secret: merchant.hmac_secret });
  // Another merchant using the same order id: never in this merchant's lists or exports.
  other = await createTestMerchant(harness);
  const theirs = await post(base, '/api/v1/payins', JSON.stringify({ amount: 30, out_trade_no: orders[1] }), { 'X-API-Key': other.api_key });
  expect(theirs.status).toBe(200);
  otherInvoice = theirs.json.data.invoice_reference as string;
  for (const [index, order] of orders.entries()) {
    const created = await post(base, '/api/v1/payins', JSON.stringify({ amount: [12.5, 30, 99.99][index], out_trade_no: order }), { 'X-API-Key': merchant.api_key });
    expect(created.status).toBe(200);
    invoices.push(created.json.data.invoice_reference as string);
  }
  // The first two are paid and settled; the third waits.
  for (const [index, amount] of ['12.5', '30'].entries()) {
    const invoice = invoices[index]!;
    await eventually(async () => (await harness.platform.deps.temporal.client.workflow.getHandle(invoice).describe().then(() => true, () => false)) || undefined);
    expect((await harness.sandbox.pay(invoice, amount)).status).toBe(200);
    await eventually(async () => ((await harness.platform.deps.database('payins').where({ invoice_reference: invoice }).first())?.status === 'success' ? true : undefined), 60_000);
  }
  browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  await page.goto(`${base}/dashboard/sign-in`);
  await page.fill('#user_name', merchant.api_user_name);
  await page.fill('#password', merchant.api_password);
  await Promise.all([page.waitForNavigation(), page.click('#sign-in')]);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await harness?.stop();
});

/** One CSV line's cells (RFC 4180: quoted cells may hold commas and doubled quotes). */
function csvCells(line: string): string[] {
  return [...line.matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map((match) => (match[1]!.startsWith('"') ? match[1]!.slice(1, -1).replace(/""/g, '"') : match[1]!));
}

const rowsOf = () => page.locator('#payments tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-reference')));

it('finds a payment by its order id and exports its month as CSV', async () => {
  await page.goto(`${base}/dashboard/payments`);
  // Order id, fee and net columns; the table fits the page at 1280 and 1440 px.
  expect(await page.locator('#payments thead th').allTextContents()).toEqual(['Order id / reference', 'Kind', 'Status', 'Amount', 'Fee', 'Net', 'Created', 'Updated']);
  for (const width of [1280, 1440]) {
    await page.setViewportSize({ width, height: 900 });
    expect(await page.evaluate("document.querySelector('#payments').scrollWidth <= document.querySelector('#payments').parentElement.clientWidth")).toBe(true);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await expectClean('lists-payments');

  await page.fill('#out_trade_no', orders[1]!);
  await Promise.all([page.waitForNavigation(), page.click('#apply')]);
  expect(new URL(page.url()).searchParams.get('out_trade_no')).toBe(orders[1]);
  // Only this merchant's payment of that order id, though another merchant used it too.
  expect(await rowsOf()).toEqual([invoices[1]]);
  const exported = await (await page.request.get(`${base}/dashboard/payments.csv?out_trade_no=${orders[1]}`)).text();
  expect(exported).toContain(invoices[1]);
  expect(exported).not.toContain(otherInvoice);
  const row = page.locator(`#payments tr[data-reference="${invoices[1]}"]`);
  expect(await row.locator('th a').textContent()).toBe(orders[1]);
  const payin = await harness.platform.deps.database('payins').where({ invoice_reference: invoices[1] }).first();
  const fee = BigInt(payin.fee_units as string);
  const cells = await row.locator('td').allTextContents();
  expect(cells.slice(0, 3)).toEqual(['Payin', 'Paid', '30.000000 USDT']);
  const units = (text: string) => BigInt(text.replace('.', ''));
  expect([units(cells[3]!), units(cells[4]!)]).toEqual([fee, 30_000_000n - fee]);
  await expectClean('lists-payments-by-order');

  // Its month: the created days of this month, exported (every page, streamed) as CSV.
  const now = new Date();
  const first = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const last = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0));
  await page.goto(`${base}/dashboard/payments?created_from=${first.toISOString().slice(0, 10)}&created_to=${last.toISOString().slice(0, 10)}&page_size=1`);
  expect(await rowsOf()).toEqual([invoices[1]]);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
  expect(download.suggestedFilename()).toMatch(/^payments-\d{4}-\d{2}-\d{2}\.csv$/);
  const csv = await new Promise<string>((resolve, reject) => {
    void download.createReadStream().then((stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      stream.on('error', reject);
    }, reject);
  });
  const lines = csv.trimEnd().split('\r\n');
  expect(lines[0]).toBe('reference,order_id,kind,status,currency,amount,fee,net,created_at,updated_at');
  // Every payment of the month, though the page showed one (page_size is not the export's).
  expect(csv).not.toContain(otherInvoice);
  expect(lines.slice(1).map((line) => csvCells(line).slice(0, 6))).toEqual([
    [invoices[1], orders[1], 'payin', 'success', 'USDT', '30.000000'],
    [invoices[0], orders[0], 'payin', 'success', 'USDT', '12.500000'],
    [invoices[2], orders[2], 'payin', 'created', 'USDT', '99.990000'],
  ]);
  // The export of a refused filter is the 400 page, nothing downloaded.
  const refused = await page.request.get(`${base}/dashboard/payments.csv?amount_from=ten`);
  expect(refused.status()).toBe(400);
  expect(await refused.text()).toContain('Amount from must be an amount such as 10 or 12.50.');
}, 60_000);

it('filters payments by an amount range, in major units', async () => {
  await page.goto(`${base}/dashboard/payments?amount_from=12.5&amount_to=30`);
  expect(await rowsOf()).toEqual([invoices[1], invoices[0]]);
  await page.goto(`${base}/dashboard/payments?amount_from=30.01`);
  expect(await rowsOf()).toEqual([invoices[2]]);
  const backwards = await page.goto(`${base}/dashboard/payments?amount_from=30&amount_to=12`);
  expect(backwards?.status()).toBe(400);
  expect(await page.textContent('main')).toContain('Amount to must not be less than Amount from.');
});

it('shows the events newest first, each event’s data folded', async () => {
  await page.goto(`${base}/dashboard/events?page_size=3`);
  const seqs = (await page.locator('#events > li').evaluateAll((items) => items.map((item) => item.getAttribute('data-seq')))).map(Number);
  expect(seqs).toHaveLength(3);
  expect(seqs).toEqual([...seqs].sort((a, b) => b - a));
  const newest = await harness.platform.deps.database('events').where({ owner_type: 'merchant', owner_id: merchant.merchant_id }).max({ seq: 'seq' });
  expect(seqs[0]).toBe(Number(newest[0]!.seq));
  const data = page.locator('#events > li').first().locator('details');
  expect(await data.locator('pre').isVisible()).toBe(false);
  await data.locator('summary').click();
  expect(await data.locator('pre').isVisible()).toBe(true);
  await expectClean('lists-events');
  await Promise.all([page.waitForNavigation(), page.click('#older')]);
  const older = (await page.locator('#events > li').evaluateAll((items) => items.map((item) => item.getAttribute('data-seq')))).map(Number);
  expect(Math.max(...older)).toBeLessThan(Math.min(...seqs));
});

it('opens the balance transactions behind a balance, each with its payment, and exports them', async () => {
  await page.goto(`${base}/dashboard/balances`);
  await Promise.all([page.waitForNavigation(), page.click('#transactions-USDT')]);
  expect(new URL(page.url()).pathname).toBe('/dashboard/balances/USDT');
  const rows = await page.locator('#balance-transactions tbody tr').evaluateAll((items) => items.map((item) => [...item.querySelectorAll('td')].map((cell) => (cell.textContent ?? '').trim())));
  // Every posting of both settlements, newest first, each with its payment; they add up to the balance, and the
  // balance after the newest is the wallet's.
  const references = rows.map((cells) => cells[2]);
  expect(references.length).toBeGreaterThanOrEqual(2);
  expect([...new Set(references)]).toEqual([invoices[1], invoices[0]]);
  const wallet = (await harness.platform.deps.ledger.accountsOf('merchant', merchant.merchant_id)).find((account) => account.kind === 'wallet' && account.currency === 'USDT')!;
  const units = (text: string) => BigInt(text.replace('.', ''));
  expect(units(rows[0]![4]!)).toBe(wallet.posted_units);
  expect(rows.reduce((sum, cells) => sum + units(cells[3]!), 0n)).toBe(wallet.posted_units);
  await expectClean('lists-balance-transactions');

  const csv = await page.request.get(`${base}/dashboard/balances/USDT.csv`);
  expect(csv.status()).toBe(200);
  expect(csv.headers()['content-type']).toBe('text/csv; charset=utf-8');
  expect(csv.headers()['content-security-policy']).toContain("default-src 'none'");
  const lines = (await csv.text()).trimEnd().split('\r\n');
  expect(lines[0]).toBe('time,movement,payment_reference,ledger_key,currency,amount,balance_after');
  expect(lines.slice(1).map((line) => csvCells(line)[2])).toEqual(references);
  expect(lines.slice(1).map((line) => csvCells(line)).every((cells) => cells.length === 7)).toBe(true);
  // A currency the merchant has no wallet in: the 400 page.
  expect((await page.request.get(`${base}/dashboard/balances/EUR`)).status()).toBe(400);
  // Without a session: sign-in, no data.
  const anonymous = await browser.newContext();
  const response = await anonymous.request.get(`${base}/dashboard/balances/USDT.csv`, { maxRedirects: 0 });
  expect(response.status()).toBe(303);
  await anonymous.close();
});
