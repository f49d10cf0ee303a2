/**
 * The dashboard's payments and events lists (docs/dashboard.md "Payments", "Events") over the RPC port, called with
 * a `facade` credential as the façade calls them: one row per business reference from the merchant's own events
 * (kind of its first event, status of its latest status event of that kind), keyset paging by seq in both
 * directions, every filter, and owner isolation (merchant A never sees B's payments or events, not even under the
 * same reference); bad filter values are VALIDATION_FAILED naming every failing field and change nothing. Then the
 * façade's pages: the 400 page says what is wrong; and every answer under /dashboard, the façade's own included
 * (404, 405, 413, 500, 503), carries the dashboard's strict CSP with frame-ancestors 'none', nosniff and no-store.
 */
import { Code } from '@connectrpc/connect';
import net from 'node:net';
import { createFacadeApp, startFacade, type RunningFacade } from '../../rest-facade/app';
import { createAreaRouters } from '../../rest-facade/areas';
import type { Config } from '../../src/config';
import { createLogger } from '../../src/logger';
import { recordEvent, type NewEvent } from '../../src/events';
import { createMerchant, type MerchantCredentials } from '../../src/onboarding/merchants';
import { createPlatformClients, type PlatformClients } from '../../src/rpc/clients';
import { readRpcFailure } from '../../src/rpc/errors';
import { createServiceCredential } from '../../src/service-credentials';
import { startTestPlatform, type TestPlatform } from '../support/platform';

let platform: TestPlatform;
let facade: PlatformClients;
let shopA: MerchantCredentials;
let shopB: MerchantCredentials;
let tokenA: string;
let tokenB: string;
const run = Date.now().toString(36).toUpperCase();
const ref = (name: string) => `${name}-${run}`;

async function record(merchant: MerchantCredentials, subject: string, type: NewEvent['type'], data: Record<string, unknown> = {}): Promise<void> {
  await platform.deps.database.transaction((trx) => recordEvent(trx, { owner: { type: 'merchant', id: merchant.merchant_id }, subject, type, data }));
}

/** `{ reason, code, fields }` of a failed call. */
async function refusal(work: Promise<unknown>): Promise<{ reason: string; code: string; fields: string[] }> {
  try {
    await work;
  } catch (error) {
    const failure = readRpcFailure(error);
    return { reason: failure.reason, code: Code[failure.code]!, fields: Object.keys(failure.fields).sort() };
  }
  throw new Error('the call succeeded');
}

beforeAll(async () => {
  platform = await startTestPlatform({ roles: ['api', 'facade'] });
  const { token } = await createServiceCredential(platform.deps.database, { name: 'test facade', scopes: ['facade'] });
  facade = createPlatformClients(platform.rpcUrl, { credentials: { token } });
  shopA = (await createMerchant(platform.deps, { name: 'Lists Shop A', callback_url: 'https://a.example.com/hook' })).credentials;
  shopB = (await createMerchant(platform.deps, { name: 'Lists Shop B', callback_url: 'https://b.example.com/hook' })).credentials;
  tokenA = (await facade.dashboard.signIn({ userName: shopA.api_user_name, password: shopA.api_password })).sessionToken;
  tokenB = (await facade.dashboard.signIn({ userName: shopB.api_user_name, password: shopB.api_password })).sessionToken;

  // Merchant A's stream, seq 1..11.
  await record(shopA, ref('P1'), 'payin.created', { amount_units: '1000', currency: 'USD' });
  await record(shopA, ref('P2'), 'payin.created', { amount_units: '500', currency: 'USD' });
  await record(shopA, ref('D1'), 'deposit.created', { amount_units: '200000', currency: 'KHR' });
  await record(shopA, ref('P1'), 'payin.success', { amount_units: '1000', paid_amount_units: '1000', currency: 'USD' });
  // A deposit that paid a preorder: one payment of the deposit's kind, its status the deposit's.
  await record(shopA, ref('D1'), 'preorder.paid', { amount_units: '200000', currency: 'KHR' });
  await record(shopA, ref('D1'), 'deposit.completed', { amount_units: '200000', currency: 'KHR' });
  await record(shopA, ref('T1'), 'wallet_transfer.completed', { amount_units: '300', currency: 'USD' });
  // Neither changes a status: an additional payment keeps the payin settled; a failed webhook is about its delivery.
  await record(shopA, ref('P1'), 'payin.additional_payment', { amount_units: '50', currency: 'USD' });
  await record(shopA, ref('P2'), 'webhook.failed', { webhook_id: 'WH-1' });
  await record(shopA, ref('BA1'), 'bank_account.activated', { token: ref('BA1') });
  await record(shopA, ref('SHARED'), 'payin.created', { amount_units: '700', currency: 'USD' });
  // Merchant B's, one under the same reference as A's.
  await record(shopB, ref('SHARED'), 'payin.created', { amount_units: '999000000', currency: 'USDT' });
  await record(shopB, ref('PB2'), 'payin.created', { amount_units: '1', currency: 'USDT' });
});

afterAll(async () => {
  await platform?.stop();
});

describe('ListPayments', () => {
  it('answers one row per reference, latest activity first: kind of its first event, status of its latest status event, amount and times', async () => {
    const { payments, nextBefore, newerAfter, kinds, statuses } = await facade.dashboard.listPayments({ sessionToken: tokenA });
    expect(payments.map((payment) => [payment.reference, payment.kind, payment.status, payment.seq])).toEqual([
      [ref('SHARED'), 'payin', 'created', 11n],
      [ref('T1'), 'wallet_transfer', 'completed', 7n],
      [ref('D1'), 'deposit', 'completed', 6n],
      [ref('P1'), 'payin', 'success', 4n],
      [ref('P2'), 'payin', 'created', 2n],
    ]);
    expect(payments[2]).toMatchObject({ amountUnits: 200000n, currency: 'KHR', decimals: 2 });
    expect(payments[3]).toMatchObject({ amountUnits: 1000n, currency: 'USD', decimals: 2 });
    expect(Date.parse(payments[3]!.createdAt)).toBeLessThan(Date.parse(payments[3]!.updatedAt));
    expect([nextBefore, newerAfter]).toEqual([0n, 0n]);
    expect(kinds).toEqual(['payin', 'pre_transfer', 'deposit', 'wallet_transfer', 'preorder', 'blocked_money']);
    expect(statuses).toEqual(expect.arrayContaining(['created', 'success', 'completed', 'paid']));
    expect(statuses).not.toContain('additional_payment');
  });

  it('pages by seq both ways (no offset): older with before, newer with after', async () => {
    const page = (cursor: { before?: string; after?: string }) => facade.dashboard.listPayments({ sessionToken: tokenA, pageSize: 2, ...cursor });
    const refs = (answer: Awaited<ReturnType<typeof page>>) => answer.payments.map((payment) => payment.reference);
    const first = await page({});
    expect([refs(first), first.nextBefore, first.newerAfter]).toEqual([[ref('SHARED'), ref('T1')], 7n, 0n]);
    const second = await page({ before: String(first.nextBefore) });
    expect([refs(second), second.nextBefore, second.newerAfter]).toEqual([[ref('D1'), ref('P1')], 4n, 6n]);
    const third = await page({ before: String(second.nextBefore) });
    expect([refs(third), third.nextBefore, third.newerAfter]).toEqual([[ref('P2')], 0n, 2n]);
    const back = await page({ after: String(third.newerAfter) });
    expect([refs(back), back.nextBefore, back.newerAfter]).toEqual([[ref('D1'), ref('P1')], 4n, 6n]);
    const top = await page({ after: String(back.newerAfter) });
    expect([refs(top), top.nextBefore, top.newerAfter]).toEqual([[ref('SHARED'), ref('T1')], 7n, 0n]);
  });

  it('filters by kind, status, reference and creation day (UTC, both ends included)', async () => {
    const refs = async (filters: Record<string, string>) =>
      (await facade.dashboard.listPayments({ sessionToken: tokenA, ...filters })).payments.map((payment) => payment.reference);
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    expect(await refs({ kind: 'payin' })).toEqual([ref('SHARED'), ref('P1'), ref('P2')]);
    expect(await refs({ status: 'created' })).toEqual([ref('SHARED'), ref('P2')]);
    expect(await refs({ kind: 'payin', status: 'success' })).toEqual([ref('P1')]);
    expect(await refs({ kind: 'preorder' })).toEqual([]);
    expect(await refs({ reference: ref('D1') })).toEqual([ref('D1')]);
    expect(await refs({ reference: ref('BA1') })).toEqual([]);
    expect(await refs({ createdFrom: today, createdTo: today })).toHaveLength(5);
    expect(await refs({ createdFrom: tomorrow })).toEqual([]);
    expect(await refs({ createdTo: yesterday })).toEqual([]);
  });

  it('never shows another merchant\'s payments, not even under the same reference or through a cursor', async () => {
    const seen = await facade.dashboard.listPayments({ sessionToken: tokenB });
    expect(seen.payments.map((payment) => [payment.reference, payment.amountUnits, payment.currency])).toEqual([
      [ref('PB2'), 1n, 'USDT'],
      [ref('SHARED'), 999000000n, 'USDT'],
    ]);
    expect((await facade.dashboard.listPayments({ sessionToken: tokenB, reference: ref('P1') })).payments).toEqual([]);
    const shared = await facade.dashboard.listPayments({ sessionToken: tokenA, reference: ref('SHARED') });
    expect(shared.payments.map((payment) => payment.amountUnits)).toEqual([700n]);
    expect((await facade.dashboard.listPayments({ sessionToken: tokenB, before: '100' })).payments).toHaveLength(2);
  });

  it('refuses bad filters naming every failing field, and changes nothing', async () => {
    const sequences = await platform.deps.database('event_sequences').orderBy(['owner_type', 'owner_id']);
    expect(
      await refusal(
        facade.dashboard.listPayments({
          sessionToken: tokenA,
          kind: 'refund',
          status: 'bogus',
          reference: 'R'.repeat(129),
          createdFrom: '2026-02-30',
          createdTo: 'yesterday',
          before: '-1',
        }),
      ),
    ).toEqual({ reason: 'VALIDATION_FAILED', code: 'InvalidArgument', fields: ['before', 'created_from', 'created_to', 'kind', 'reference', 'status'] });
    // A status no payment of the kind has; a range ending before it starts; both cursors.
    expect(await refusal(facade.dashboard.listPayments({ sessionToken: tokenA, kind: 'payin', status: 'completed' }))).toMatchObject({ fields: ['status'] });
    expect(await refusal(facade.dashboard.listPayments({ sessionToken: tokenA, createdFrom: '2026-03-02', createdTo: '2026-03-01' }))).toMatchObject({ fields: ['created_to'] });
    expect(await refusal(facade.dashboard.listPayments({ sessionToken: tokenA, before: '5', after: '2' }))).toMatchObject({ fields: ['after'] });
    expect(await refusal(facade.dashboard.listPayments({ sessionToken: tokenA, pageSize: 101 }))).toMatchObject({ reason: 'VALIDATION_FAILED', fields: ['page_size'] });
    expect(await refusal(facade.dashboard.listPayments({ sessionToken: 'not-a-session' }))).toMatchObject({ reason: 'SESSION_INVALID' });
    expect(await platform.deps.database('event_sequences').orderBy(['owner_type', 'owner_id'])).toEqual(sequences);
  });
});

describe('ListEvents', () => {
  it('answers the merchant\'s own events after a seq, in order, by type and subject', async () => {
    const all = await facade.dashboard.listEvents({ sessionToken: tokenA, pageSize: 4 });
    expect(all.events.map((event) => event.seq)).toEqual([1n, 2n, 3n, 4n]);
    expect([all.hasMore, all.nextAfter]).toEqual([true, 4n]);
    const next = await facade.dashboard.listEvents({ sessionToken: tokenA, pageSize: 4, after: String(all.nextAfter) });
    expect(next.events.map((event) => event.seq)).toEqual([5n, 6n, 7n, 8n]);
    expect(JSON.parse(all.events[0]!.dataJson)).toEqual({ amount_units: '1000', currency: 'USD' });
    expect((await facade.dashboard.listEvents({ sessionToken: tokenA, type: 'payin.created' })).events.map((event) => event.subject)).toEqual([ref('P1'), ref('P2'), ref('SHARED')]);
    expect((await facade.dashboard.listEvents({ sessionToken: tokenA, subject: ref('P1') })).events.map((event) => event.type)).toEqual([
      'payin.created',
      'payin.success',
      'payin.additional_payment',
    ]);
    expect(all.types).toContain('wallet_transfer.completed');
  });

  it('never shows another merchant\'s events', async () => {
    const seen = await facade.dashboard.listEvents({ sessionToken: tokenB, pageSize: 100 });
    expect(seen.events.map((event) => [event.seq, event.subject])).toEqual([
      [1n, ref('SHARED')],
      [2n, ref('PB2')],
    ]);
    expect((await facade.dashboard.listEvents({ sessionToken: tokenB, subject: ref('P1') })).events).toEqual([]);
    const shared = await facade.dashboard.listEvents({ sessionToken: tokenA, subject: ref('SHARED') });
    expect(shared.events.map((event) => JSON.parse(event.dataJson).amount_units)).toEqual(['700']);
  });

  it('refuses a type outside the catalog, a long subject and a cursor that is no whole number', async () => {
    expect(await refusal(facade.dashboard.listEvents({ sessionToken: tokenA, type: 'refund.done', subject: 'S'.repeat(129), after: 'abc' }))).toEqual({
      reason: 'VALIDATION_FAILED',
      code: 'InvalidArgument',
      fields: ['after', 'subject', 'type'],
    });
  });
});

describe('the façade\'s list pages', () => {
  /** A browser-like session on the façade: its cookie header. */
  async function signedInCookie(merchant: MerchantCredentials): Promise<string> {
    const form = await fetch(`${platform.facadeUrl}/dashboard/sign-in`);
    const token = /dashboard_signin=([^;]+)/.exec(form.headers.getSetCookie().join())![1]!;
    const signedIn = await fetch(`${platform.facadeUrl}/dashboard/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `dashboard_signin=${token}` },
      body: new URLSearchParams({ user_name: merchant.api_user_name, password: merchant.api_password, csrf_token: token }).toString(),
    });
    expect(signedIn.status).toBe(303);
    return /dashboard_session=[^;]+/.exec(signedIn.headers.getSetCookie().join())![0];
  }

  it('list A\'s payments with links to each payment page and keep the filters in the paging links', async () => {
    const cookie = await signedInCookie(shopA);
    const answer = await fetch(`${platform.facadeUrl}/dashboard/payments?kind=payin&page_size=2`, { headers: { cookie } });
    expect(answer.status).toBe(200);
    const body = await answer.text();
    expect(body).toContain(`href="/dashboard/payments/${ref('P1')}"`);
    expect(body).not.toContain(ref('T1'));
    expect(body).toContain('href="/dashboard/payments?kind=payin&amp;page_size=2&amp;before=4"');
    expect(body).toContain('<option value="payin" selected>');
  });

  it('answer bad filters with a 400 page that says what is wrong with each', async () => {
    const cookie = await signedInCookie(shopA);
    const answer = await fetch(`${platform.facadeUrl}/dashboard/payments?kind=refund&created_from=2026-13-01&page_size=many`, { headers: { cookie } });
    expect(answer.status).toBe(400);
    const body = await answer.text();
    // The façade names what it checks itself (page_size) first; the rest is the service's.
    expect(body).toContain('Page size must be a whole number from 1 to 100.');
    const second = await fetch(`${platform.facadeUrl}/dashboard/payments?kind=refund&created_from=2026-13-01`, { headers: { cookie } });
    expect(second.status).toBe(400);
    expect([second.headers.get('content-security-policy'), second.headers.get('cache-control')]).toEqual([
      "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      'no-store',
    ]);
    const text = await second.text();
    expect(text).toContain('Kind must be one of the kinds the list offers.');
    expect(text).toContain('Created from must be one day, written YYYY-MM-DD.');
    expect(text).toContain('href="/dashboard/payments"');
    const events = await fetch(`${platform.facadeUrl}/dashboard/events?type=nope&type=again`, { headers: { cookie } });
    expect(events.status).toBe(400);
    expect(await events.text()).toContain('Type must be one of the event types the list offers.');
  });
});

describe('every answer under /dashboard carries the dashboard\'s security headers', () => {
  const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
  let running: RunningFacade;

  /** A façade like the running one with `changes` to its configuration and a route that throws (the last resort). */
  async function facadeWith(changes: Partial<Config>): Promise<RunningFacade> {
    const config = { ...platform.config, ...changes };
    const areas = createAreaRouters(config);
    areas.find((area) => area.pages?.test('/dashboard/balances'))!.router.get('/dashboard/fault', () => {
      throw new Error('a fault no route answered');
    });
    return startFacade(createFacadeApp({ clients: facade, config, logger: createLogger('silent', 'test'), areas }), '127.0.0.1', 0);
  }

  beforeAll(async () => {
    running = await facadeWith({ FACADE_MAX_IN_FLIGHT_PER_ADDRESS: 1 });
  });
  afterAll(() => running?.close(1));

  async function headersOf(answer: Response): Promise<Record<string, string | number | null>> {
    const body = await answer.text();
    return {
      status: answer.status,
      csp: answer.headers.get('content-security-policy'),
      nosniff: answer.headers.get('x-content-type-options'),
      cache: answer.headers.get('cache-control'),
      frame: answer.headers.get('x-frame-options'),
      // The policy allows no inline style: a page with one would show unstyled.
      inlineStyle: /<style|style="/.test(body) ? 'inline style' : null,
    };
  }
  const secure = (status: number) => ({ status, csp: CSP, nosniff: 'nosniff', cache: 'no-store', frame: 'DENY', inlineStyle: null });

  it('on the façade\'s own answers: unknown page 404, wrong method 405, body too large 413, last-resort 500', async () => {
    expect(await headersOf(await fetch(`${running.url}/dashboard/no-such-page`))).toEqual(secure(404));
    expect(await headersOf(await fetch(`${running.url}/dashboard/balances`, { method: 'PUT' }))).toEqual(secure(405));
    const large = await fetch(`${running.url}/dashboard/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `user_name=${'x'.repeat(1_100_000)}`,
    });
    expect(await headersOf(large)).toEqual(secure(413));
    expect(await headersOf(await fetch(`${running.url}/dashboard/fault`))).toEqual(secure(500));
  });

  it('on the dashboard\'s own refusal of a form (403) and the stylesheet', async () => {
    const refused = await fetch(`${running.url}/dashboard/sign-out`, { method: 'POST', redirect: 'manual' });
    expect(await headersOf(refused)).toEqual(secure(403));
    const stylesheet = await fetch(`${running.url}/dashboard/style.css`);
    expect({ status: stylesheet.status, csp: stylesheet.headers.get('content-security-policy'), cache: stylesheet.headers.get('cache-control') }).toEqual({
      status: 200,
      csp: CSP,
      cache: 'no-store',
    });
  });

  it('on the façade\'s lockout of an address past its requests in flight (503)', async () => {
    // One request held open (its body still arriving) takes the address's only place.
    const held = net.connect(running.port, '127.0.0.1');
    await new Promise<void>((resolve) => held.once('connect', () => resolve()));
    held.write('POST /dashboard/sign-in HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nuser');
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const busy = await fetch(`${running.url}/dashboard/sign-in`);
      expect(busy.headers.get('retry-after')).toBe('1');
      expect(await headersOf(busy)).toEqual(secure(503));
    } finally {
      held.destroy();
    }
  });
});
