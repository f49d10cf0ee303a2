/**
 * DashboardService over the network RPC port, called with a `facade` credential as the façade calls it
 * (docs/dashboard.md): sign-in with the API user name and password, sessions (expiry, sign-out, suspension), CSRF
 * on the changing calls, balances, and webhook deliveries that never cross from one merchant to another: another
 * merchant's delivery can be neither listed (not even through a page token naming it) nor redelivered. And the
 * façade's cookies: Secure in live mode and behind an https base URL, never on a test-mode stack on plain http.
 */
import { Code } from '@connectrpc/connect';
import { sha256Hex } from '../../src/crypto/secrets';
import { NextRetry } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import { createMerchant, setMerchantStatus, type MerchantCredentials } from '../../src/onboarding/merchants';
import { createPlatformClients, type PlatformClients } from '../../src/rpc/clients';
import { readRpcFailure } from '../../src/rpc/errors';
import { createServiceCredential } from '../../src/service-credentials';
import { recordWebhookEvent, startWebhookDeliveries } from '../../src/webhooks';
import { eventually } from '../support/payin-setup';
import { startMerchantReceiver, type MerchantReceiver } from '../support/merchant-receiver';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { createFacadeApp, startFacade } from '../../rest-facade/app';
import { createAreaRouters } from '../../rest-facade/areas';
import { createLogger } from '../../src/logger';
import type { Config } from '../../src/config';

/** The first backoff: long enough that a failed first attempt is seen waiting for its retry. */
const RETRY_INITIAL_SECONDS = 30;

let platform: TestPlatform;
let receiver: MerchantReceiver;
let facade: PlatformClients;
let shopA: MerchantCredentials;
let shopB: MerchantCredentials;
let sequence = 0;

const FROM = (address: string) => ({ headers: { 'X-Client-Address': address } });

/** `{ reason, code }` of a failed call, or 'ok'. */
async function outcome(work: Promise<unknown>): Promise<string | { reason: string; code: string }> {
  return work.then(
    () => 'ok',
    (error: unknown) => {
      const failure = readRpcFailure(error);
      return { reason: failure.reason, code: Code[failure.code]! };
    },
  );
}

async function signIn(merchant: MerchantCredentials, address = '203.0.113.10') {
  return facade.dashboard.signIn({ userName: merchant.api_user_name, password: merchant.api_password }, FROM(address));
}

/** Records one webhook event of `merchant` and starts its delivery (the receiver answers 503). */
async function webhookOf(merchant: MerchantCredentials): Promise<string> {
  const id = `WH-DASHBOARD-TEST-${Date.now()}-${(sequence += 1)}`;
  await platform.deps.database.transaction((trx) =>
    recordWebhookEvent(trx, { id, merchant_id: merchant.merchant_id, subject_reference: `PAYIN-DASH${sequence}`, event: 'payin.success', body: '{"success":true}' }),
  );
  await startWebhookDeliveries(platform.deps, [id]);
  return id;
}

async function attemptsOf(id: string): Promise<number> {
  const row = await platform.deps.database('webhook_delivery_attempts').where({ webhook_id: id }).count('* as n').first();
  return Number(row?.n ?? 0);
}

beforeAll(async () => {
  receiver = await startMerchantReceiver();
  receiver.configure({ unavailable: true });
  platform = await startTestPlatform({
    roles: ['api', 'worker'],
    env: { WEBHOOK_RETRY_INITIAL_SECONDS: String(RETRY_INITIAL_SECONDS), WEBHOOK_RETRY_WINDOW_SECONDS: '45', DASHBOARD_SESSION_TTL_SECONDS: '600' },
  });
  const { token } = await createServiceCredential(platform.deps.database, { name: 'test facade', scopes: ['facade'] });
  facade = createPlatformClients(platform.rpcUrl, { credentials: { token } });
  shopA = (await createMerchant(platform.deps, { name: 'Dashboard Shop A', callback_url: receiver.url })).credentials;
  shopB = (await createMerchant(platform.deps, { name: 'Dashboard Shop B', callback_url: receiver.url })).credentials;
});
afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
});

describe('sign-in and sessions', () => {
  it('opens a session for the API user name and password; the token is stored only as its SHA-256', async () => {
    const answer = await signIn(shopA);
    expect(answer.session).toMatchObject({ merchantId: shopA.merchant_id, merchantName: 'Dashboard Shop A' });
    expect(answer.expiresInSeconds).toBe(600n);
    expect(answer.sessionToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const session = await facade.dashboard.getSession({ sessionToken: answer.sessionToken });
    expect(session.session).toEqual(answer.session);
    const rows = await platform.deps.database('dashboard_sessions').where({ merchant_id: shopA.merchant_id });
    expect(rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(rows)).not.toContain(answer.sessionToken);
    expect(JSON.stringify(rows)).not.toContain(answer.session!.csrfToken);
  });

  it('answers one LOGIN_FAILED for a wrong password, an unknown name and a suspended merchant', async () => {
    const wrongPassword = await outcome(facade.dashboard.signIn({ userName: shopA.api_user_name, password: 'wrong' }, FROM('203.0.113.11')));
    const unknownName = await outcome(facade.dashboard.signIn({ userName: 'merchant_nobody', password: shopA.api_password }, FROM('203.0.113.11')));
    const { credentials: suspended } = await createMerchant(platform.deps, { name: 'Suspended Shop', callback_url: receiver.url });
    await setMerchantStatus(platform.deps.database, suspended.merchant_id, 'suspended');
    const suspendedOne = await outcome(signIn(suspended, '203.0.113.11'));
    expect([wrongPassword, unknownName, suspendedOne]).toEqual(Array(3).fill({ reason: 'LOGIN_FAILED', code: 'InvalidArgument' }));
  });

  it('counts a failure at /login\'s door under the merchant id of the user name (one count for both doors), an unknown name under itself', async () => {
    await outcome(facade.dashboard.signIn({ userName: shopB.api_user_name, password: 'wrong' }, FROM('203.0.113.77')));
    await outcome(facade.dashboard.signIn({ userName: 'merchant_unknown_77', password: 'wrong' }, FROM('203.0.113.77')));
    const keys = await platform.deps.database('rate_limits').where('key', 'like', 'fail_pair:%203.0.113.77%').pluck('key');
    expect(keys.sort()).toEqual([`fail_pair:merchant_login:203.0.113.77|${shopB.merchant_id}`, 'fail_pair:merchant_login:203.0.113.77|merchant_unknown_77']);
  });

  it('ends a session at sign-out, at its end, and while its merchant is suspended', async () => {
    const signedOut = await signIn(shopA);
    // Sign-out is a changing call: without the session's CSRF token it changes nothing.
    expect(await outcome(facade.dashboard.signOut({ sessionToken: signedOut.sessionToken, csrfToken: '' }))).toEqual({ reason: 'CSRF_TOKEN_INVALID', code: 'PermissionDenied' });
    expect(await outcome(facade.dashboard.getSession({ sessionToken: signedOut.sessionToken }))).toBe('ok');
    await facade.dashboard.signOut({ sessionToken: signedOut.sessionToken, csrfToken: signedOut.session!.csrfToken });
    expect(await outcome(facade.dashboard.getSession({ sessionToken: signedOut.sessionToken }))).toEqual({ reason: 'SESSION_INVALID', code: 'Unauthenticated' });

    const ended = await signIn(shopA);
    await platform.deps.database('dashboard_sessions').where({ token_hash: sha256Hex(ended.sessionToken) }).update({ expires_at: new Date(Date.now() - 1000) });
    expect(await outcome(facade.dashboard.getBalances({ sessionToken: ended.sessionToken }))).toEqual({ reason: 'SESSION_INVALID', code: 'Unauthenticated' });

    const { credentials: shopC } = await createMerchant(platform.deps, { name: 'Dashboard Shop C', callback_url: receiver.url });
    const live = await signIn(shopC);
    await setMerchantStatus(platform.deps.database, shopC.merchant_id, 'suspended');
    expect(await outcome(facade.dashboard.getSession({ sessionToken: live.sessionToken }))).toEqual({ reason: 'SESSION_INVALID', code: 'Unauthenticated' });
    await setMerchantStatus(platform.deps.database, shopC.merchant_id, 'active');
    expect(await outcome(facade.dashboard.getSession({ sessionToken: live.sessionToken }))).toBe('ok');

    expect(await outcome(facade.dashboard.getSession({ sessionToken: 'not-a-session' }))).toEqual({ reason: 'SESSION_INVALID', code: 'Unauthenticated' });
  });

  it('is a façade door: an operator credential cannot call it', async () => {
    expect(await outcome(platform.clients.dashboard.getSession({ sessionToken: (await signIn(shopA)).sessionToken }))).toMatchObject({ code: 'PermissionDenied' });
  });
});

describe('balances', () => {
  it('answers the merchant\'s wallets with balance, available and held, minor units', async () => {
    await platform.clients.admin.creditWallet({ owner: { merchantId: shopA.merchant_id }, amount: '12.34', currency: 'USD', reference: `DASH-CREDIT-${Date.now()}` });
    const { wallets } = await facade.dashboard.getBalances({ sessionToken: (await signIn(shopA)).sessionToken });
    expect(wallets.map((wallet) => wallet.currency)).toEqual(['USD', 'KHR', 'USDT']);
    expect(wallets[0]).toMatchObject({ currency: 'USD', decimals: 2, balanceUnits: 1234n, availableUnits: 1234n, heldUnits: 0n });
    expect(wallets[2]).toMatchObject({ currency: 'USDT', decimals: 6, balanceUnits: 0n });
    const other = await facade.dashboard.getBalances({ sessionToken: (await signIn(shopB)).sessionToken });
    expect(other.wallets[0]).toMatchObject({ currency: 'USD', balanceUnits: 0n });
  });
});

describe('webhook deliveries', () => {
  let ownIds: string[];
  let otherId: string;

  beforeAll(async () => {
    ownIds = [await webhookOf(shopA), await webhookOf(shopA), await webhookOf(shopA)];
    otherId = await webhookOf(shopB);
    // Each first attempt fails (503) and the run waits RETRY_INITIAL_SECONDS for the next one.
    await eventually(async () => (await Promise.all([...ownIds, otherId].map(attemptsOf))).every((count) => count === 1));
  });

  it('lists the merchant\'s own deliveries, newest first, paged, with each attempt and when the next one is due', async () => {
    const sessionToken = (await signIn(shopA)).sessionToken;
    const first = await facade.dashboard.listWebhookDeliveries({ sessionToken, pageSize: 2 });
    expect(first.deliveries.map((delivery) => delivery.webhookId)).toEqual([ownIds[2], ownIds[1]]);
    expect(first.nextPageToken).not.toBe('');
    const second = await facade.dashboard.listWebhookDeliveries({ sessionToken, pageSize: 2, pageToken: first.nextPageToken });
    expect(second.deliveries.map((delivery) => delivery.webhookId)).toEqual([ownIds[0]]);
    expect(second.nextPageToken).toBe('');

    const [delivery] = second.deliveries;
    expect(delivery).toMatchObject({ status: 'pending', event: 'payin.success', callbackUrl: receiver.url, nextRetry: NextRetry.SCHEDULED });
    expect(delivery!.attempts).toEqual([expect.objectContaining({ attempt: 1, statusCode: 503, error: 'HTTP 503' })]);
    const due = Date.parse(delivery!.nextRetryAt) - Date.parse(delivery!.attempts[0]!.attemptedAt);
    // The wait is jittered by ± half of WEBHOOK_RETRY_JITTER (docs/webhooks.md "Retries").
    const jitter = platform.deps.config.WEBHOOK_RETRY_JITTER / 2;
    expect(due).toBeGreaterThan((RETRY_INITIAL_SECONDS * (1 - jitter) - 2) * 1000);
    expect(due).toBeLessThan((RETRY_INITIAL_SECONDS * (1 + jitter) + 5) * 1000);
    // Exactly the time the attempt recorded for the next one.
    const recorded = await platform.deps.database('webhook_delivery_attempts').where({ webhook_id: ownIds[0], attempt: 1 }).first('next_retry_at');
    expect(delivery!.nextRetryAt).toBe((recorded.next_retry_at as Date).toISOString());
  });

  it('reads the next retry from the delivery records (webhook_delivery_attempts.next_retry_at), not from a workflow', async () => {
    const { credentials: shop } = await createMerchant(platform.deps, { name: 'Dashboard Shop Retry', callback_url: receiver.url });
    const id = (suffix: string) => `WH-DASHBOARD-RETRY-${Date.now()}-${suffix}`;
    const record = (webhookId: string) =>
      platform.deps.database.transaction((trx) =>
        recordWebhookEvent(trx, { id: webhookId, merchant_id: shop.merchant_id, subject_reference: `PAYIN-RETRY-${webhookId}`, event: 'payin.success', body: '{}' }),
      );
    // Recorded as a run would record them, with no run at all: only the records can say when the next one is due.
    const scheduled = id('SCHEDULED');
    const overdue = id('OVERDUE');
    const dueAt = new Date(Date.now() + 3_600_000);
    const wasDueAt = new Date(Date.now() - 3_600_000);
    for (const [webhookId, next] of [
      [scheduled, dueAt],
      [overdue, wasDueAt],
    ] as const) {
      await record(webhookId);
      await platform.deps.database('webhook_delivery_attempts').insert({
        webhook_id: webhookId,
        attempt: 1,
        attempted_at: new Date(next.getTime() - 60_000),
        status_code: 503,
        latency_ms: 12,
        error: 'HTTP 503',
        next_retry_at: next,
      });
    }
    const { deliveries } = await facade.dashboard.listWebhookDeliveries({ sessionToken: (await signIn(shop)).sessionToken });
    const byId = new Map(deliveries.map((delivery) => [delivery.webhookId, delivery]));
    expect(byId.get(scheduled)).toMatchObject({ status: 'pending', nextRetry: NextRetry.SCHEDULED, nextRetryAt: dueAt.toISOString() });
    expect(byId.get(overdue)).toMatchObject({ status: 'pending', nextRetry: NextRetry.NOT_SCHEDULED, nextRetryAt: wasDueAt.toISOString() });
  });

  it('never lists another merchant\'s delivery, not even after a page token naming it', async () => {
    const sessionToken = (await signIn(shopA)).sessionToken;
    const all = await facade.dashboard.listWebhookDeliveries({ sessionToken, pageSize: 100 });
    expect(all.deliveries.map((delivery) => delivery.webhookId)).not.toContain(otherId);
    const forged = Buffer.from(otherId, 'utf8').toString('base64url');
    expect((await facade.dashboard.listWebhookDeliveries({ sessionToken, pageToken: forged })).deliveries).toEqual([]);
    expect(await outcome(facade.dashboard.listWebhookDeliveries({ sessionToken, pageToken: '!!' }))).toEqual({ reason: 'VALIDATION_FAILED', code: 'InvalidArgument' });
  });

  it('never redelivers another merchant\'s delivery: answered as an unknown one, nothing started', async () => {
    const signedIn = await signIn(shopA);
    const attack = { sessionToken: signedIn.sessionToken, csrfToken: signedIn.session!.csrfToken };
    const before = await platform.deps.database('webhook_events').where({ id: otherId }).first();
    expect(await outcome(facade.dashboard.redeliverWebhook({ ...attack, webhookId: otherId }))).toEqual({ reason: 'WEBHOOK_NOT_FOUND', code: 'NotFound' });
    expect(await outcome(facade.dashboard.redeliverWebhook({ ...attack, webhookId: 'WH-NO-SUCH-EVENT' }))).toEqual({ reason: 'WEBHOOK_NOT_FOUND', code: 'NotFound' });
    // Its run keeps waiting out its backoff: no new attempt, the record unchanged.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await attemptsOf(otherId)).toBe(1);
    expect(await platform.deps.database('webhook_events').where({ id: otherId }).first()).toEqual(before);
  });

  it('refuses a redelivery without this session\'s CSRF token (none, or another session\'s), and audits the merchant\'s own', async () => {
    const [mine, another] = [await signIn(shopA), await signIn(shopA)];
    const request = { sessionToken: mine.sessionToken, webhookId: ownIds[0]! };
    expect(await outcome(facade.dashboard.redeliverWebhook({ ...request, csrfToken: '' }))).toEqual({ reason: 'CSRF_TOKEN_INVALID', code: 'PermissionDenied' });
    expect(await outcome(facade.dashboard.redeliverWebhook({ ...request, csrfToken: another.session!.csrfToken }))).toEqual({ reason: 'CSRF_TOKEN_INVALID', code: 'PermissionDenied' });

    const answer = await facade.dashboard.redeliverWebhook({ ...request, csrfToken: mine.session!.csrfToken });
    expect(answer.delivery).toMatchObject({ webhookId: ownIds[0], status: 'pending' });
    const records = await platform.deps
      .database('audit_records')
      .where({ procedure: 'payments.dashboard.v1.DashboardService/RedeliverWebhook' })
      .whereRaw("arguments->>'webhook_id' = ?", [ownIds[0]])
      .orderBy('id');
    expect(records.map((record) => record.outcome)).toEqual(['CSRF_TOKEN_INVALID', 'CSRF_TOKEN_INVALID', 'ok']);
    expect(records[2].arguments).toEqual({ session_token: '[redacted]', csrf_token: '[redacted]', webhook_id: ownIds[0] });
  });
});

describe('webhook endpoint', () => {
  it('says where webhooks go and how they are signed, never the secret', async () => {
    const endpoint = await facade.dashboard.getWebhookEndpoint({ sessionToken: (await signIn(shopB)).sessionToken });
    expect(endpoint).toMatchObject({
      callbackUrl: receiver.url,
      signatureHeader: 'X-Signature',
      headers: ['X-Signature', 'x-webhook-id', 'x-webhook-event', 'x-webhook-attempt', 'webhook-id', 'webhook-timestamp', 'webhook-signature'],
      secretName: 'hmac_secret',
    });
    expect(JSON.stringify(endpoint)).not.toContain(shopB.hmac_secret);
  });
});

describe('the dashboard\'s cookies', () => {
  /** The Set-Cookie lines of a sign-in through a façade built with `config`. */
  async function cookiesWith(config: Config): Promise<string[]> {
    const app = createFacadeApp({ clients: facade, config, logger: createLogger('silent', 'test'), areas: createAreaRouters(config) });
    const running = await startFacade(app, '127.0.0.1', 0);
    try {
      const form = await fetch(`${running.url}/dashboard/sign-in`);
      const signInCookie = form.headers.getSetCookie();
      const token = /dashboard_signin=([^;]+)/.exec(signInCookie.join())![1]!;
      const signedIn = await fetch(`${running.url}/dashboard/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `dashboard_signin=${token}` },
        body: new URLSearchParams({ user_name: shopA.api_user_name, password: shopA.api_password, csrf_token: token }).toString(),
      });
      expect(signedIn.status).toBe(303);
      return [...signInCookie, ...signedIn.headers.getSetCookie()];
    } finally {
      await running.close(1);
    }
  }

  it('are HttpOnly, SameSite=Strict on /dashboard; Secure in live mode or behind https, not on plain http in test mode', async () => {
    const plain = await cookiesWith(platform.config);
    const behindHttps = await cookiesWith({ ...platform.config, PUBLIC_BASE_URL: 'https://pay.example.com' });
    const live = await cookiesWith({ ...platform.config, PAYMENTS_MODE: 'live' });
    for (const cookies of [plain, behindHttps, live]) {
      expect(cookies.map((cookie) => cookie.split('=')[0])).toEqual(['dashboard_signin', 'dashboard_signin', 'dashboard_session']);
      for (const cookie of cookies) expect(cookie).toMatch(/; Path=\/dashboard; HttpOnly; SameSite=Strict/);
    }
    expect(plain.filter((cookie) => cookie.endsWith('; Secure'))).toEqual([]);
    expect(behindHttps.every((cookie) => cookie.endsWith('; Secure'))).toBe(true);
    expect(live.every((cookie) => cookie.endsWith('; Secure'))).toBe(true);
    expect(plain[2]).toMatch(/^dashboard_session=[A-Za-z0-9_-]{43}; Max-Age=600;/);
  });
});
