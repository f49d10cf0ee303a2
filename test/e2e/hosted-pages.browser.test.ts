/**
 * The hosted preorder page and the Visa/Master confirmation in a real browser (docs/area-c.md "Deposits
 * and confirmations"): playwright-core drives Debian's chromium (/usr/bin/chromium, headless). The payer opens
 * pre_order_url, sees seller, description and amount, types a card, confirms, and lands on the preorder's
 * redirect_url (a local HTTP server of this test) with `result`; without a redirect_url the result page carries the
 * hidden input `result`. PUBLIC_BASE_URL is the façade's real address so that the absolute form actions work.
 */
import http from 'node:http';
import net from 'node:net';
import { chromiumPath } from '../support/chromium';
import { chromium, type Browser, type Page } from 'playwright-core';
import { decodeResult, loggedInMerchant, newPreorder, newUser, SANDBOX_CARDS, userBalance } from '../support/deposit-setup';
import type { MerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('hosted preorder page in chromium', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let seller: { id: number; wallet_ref: string };
  let browser: Browser;
  let shop: http.Server;
  let shopUrl: string;
  const returns: string[] = [];

  beforeAll(async () => {
    const port = await freePort();
    platform = await startTestPlatform({ env: { HTTP_PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` } });
    merchant = await loggedInMerchant(platform, 'Riverside Café');
    seller = await newUser(merchant, 'Chenda');
    shop = http.createServer((request, response) => {
      returns.push(request.url ?? '');
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end('<!DOCTYPE html><title>Shop</title><h1 id="back">Back at the shop</h1>');
    });
    await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
    shopUrl = `http://127.0.0.1:${(shop.address() as net.AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => (shop ? shop.close(() => resolve()) : resolve()));
    await platform?.stop();
  });

  async function fillCard(page: Page, number: string, options: { year?: string } = {}): Promise<void> {
    await page.fill('#holder_name', 'Guest Payer');
    await page.fill('#card_number', number);
    await page.fill('#expiry_month', '12');
    await page.fill('#expiry_year', options.year ?? '39');
    await page.fill('#security_code', '123');
  }

  it('shows the preorder, pays by card, confirms and lands on redirect_url with a successful result', async () => {
    const preorder = await newPreorder(merchant, {
      seller_code: seller.wallet_ref, amount: 18.75, description: 'Lunch for two', commission_rate: 2, redirect_url: `${shopUrl}/return?order=7`,
    });
    const sellerBefore = await userBalance(platform, seller.id);
    const page = await browser.newPage();
    try {
      await page.goto(preorder.pre_order_url);
      expect(await page.textContent('#seller')).toBe('Chenda Dara');
      expect(await page.textContent('#description')).toBe('Lunch for two');
      expect(await page.textContent('#amount')).toBe('18.75 USD');

      // A mistyped number comes back with its message, nothing vaulted or started.
      await fillCard(page, '4242 4242 4242 4241');
      await Promise.all([page.waitForNavigation(), page.click('#pay')]);
      expect(await page.textContent('body')).toContain('The card number is invalid.');

      await fillCard(page, '4242 4242 4242 4242');
      await Promise.all([page.waitForNavigation(), page.click('#pay')]);
      expect(await page.textContent('h1')).toBe('Confirm your payment');
      expect(await page.textContent('#amount')).toBe('18.75 USD');
      expect(await page.textContent('#card')).toContain('•••• 4242');

      await Promise.all([page.waitForURL(`${shopUrl}/return?**`), page.click('#confirm')]);
      expect(await page.textContent('#back')).toBe('Back at the shop');
      const landed = new URL(page.url());
      expect(landed.searchParams.get('order')).toBe('7');
      const result = decodeResult(landed.searchParams.get('result')!);
      expect(result).toEqual({ success: true, code: 200, message: 'OK', data: { transaction_ref: expect.stringMatching(/^DEP[A-Z0-9]{18}$/) } });
      expect(returns.filter((path) => path.startsWith('/return'))).toHaveLength(1);
      expect(await userBalance(platform, seller.id)).toBe(sellerBefore + 1837n); // 18.75 less 2 % commission (0.375 → 0.38, half-up)

      await page.goto(preorder.pre_order_url);
      expect(await page.textContent('#paid')).toBe('This order has already been paid.');
    } finally {
      await page.close();
    }
  });

  it('a declined card without redirect_url ends on the result page whose hidden input tells the decline', async () => {
    const preorder = await newPreorder(merchant, { seller_code: seller.wallet_ref, amount: 5, description: 'Cake' });
    const sellerBefore = await userBalance(platform, seller.id);
    const page = await browser.newPage();
    try {
      await page.goto(preorder.pre_order_url);
      await fillCard(page, SANDBOX_CARDS.declined);
      await Promise.all([page.waitForNavigation(), page.click('#pay')]);
      await Promise.all([page.waitForNavigation(), page.click('#confirm')]);
      expect(await page.textContent('h1')).toBe('Payment not completed');
      const value = await page.getAttribute('input[type="hidden"][name="result"]', 'value');
      expect(decodeResult(value!)).toMatchObject({ success: false, code: 400, message: 'The card was declined.' });
      expect(await userBalance(platform, seller.id)).toBe(sellerBefore);

      // The preorder is still open: a good card then pays it.
      await page.goto(preorder.pre_order_url);
      await fillCard(page, SANDBOX_CARDS.approved);
      await Promise.all([page.waitForNavigation(), page.click('#pay')]);
      await Promise.all([page.waitForNavigation(), page.click('#confirm')]);
      expect(await page.textContent('h1')).toBe('Payment completed');
      expect(await userBalance(platform, seller.id)).toBe(sellerBefore + 500n);
    } finally {
      await page.close();
    }
  });
});
