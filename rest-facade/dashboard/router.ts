/**
 * The merchant dashboard (docs/dashboard.md): server-rendered pages under /dashboard, translation only. Every fact
 * and every check of a session, its CSRF token and the merchant's boundaries comes from DashboardService; this
 * router reads cookies and forms, sets the security headers (./http.ts) and renders the views
 * (rest-facade/views/dashboard.ts).
 *
 *   GET  /dashboard                                  → 303 to the first page
 *   GET  /dashboard/style.css                        the one stylesheet
 *   GET  /dashboard/sign-in                          the sign-in form (sets the sign-in cookie its token matches)
 *   POST /dashboard/sign-in                          user_name, password, csrf_token → session cookie, 303 to the
 *                                                    first page; 401 the form again (one message for a wrong name or
 *                                                    password); 429 with Retry-After past the lockouts of /login
 *   POST /dashboard/sign-out                         csrf_token → session ended, cookie cleared, 303 to sign-in
 *   GET  /dashboard<page>                            each page of ./pages.ts (no session: 303 to sign-in)
 *   POST /dashboard/webhooks/:webhookId/redeliver    csrf_token → 303 to the deliveries with a notice
 *   POST /dashboard/payment-policy                   csrf_token, underpaid, overpaid, late, tolerance_percent,
 *                                                    refund_fee → 303 to the policy page with a notice; 400 the
 *                                                    page again naming each refused field (nothing changed)
 *   POST /dashboard/webhook-endpoint/url             csrf_token, callback_url → a test event to it, saved on a 2xx:
 *                                                    303 with a notice; 400 the page naming why (nothing changed)
 *   POST /dashboard/webhook-endpoint/test            csrf_token → the page with the test event's outcome
 *   POST /dashboard/webhook-endpoint/rotate          csrf_token → the page with the new secret, shown once
 *   POST /dashboard/webhook-endpoint/enable          csrf_token → 303 to the page with a notice
 *   GET  /dashboard/payments.csv                     the filtered payments list as CSV, every page, streamed
 *   GET  /dashboard/balances/:currency               one wallet's balance transactions, newest first (before=)
 *   GET  /dashboard/balances/:currency.csv           all of them as CSV, streamed
 *   GET  /dashboard/payments/:reference              one payment in the merchant's words (DashboardService
 *                                                    GetPayment; 404 for an unknown reference and another
 *                                                    merchant's alike)
 *   POST /dashboard/payments/:reference/refund       csrf_token, idempotency_key, amount, reason → 303 to the
 *                                                    payment with a notice; 400 naming why a refund was refused
 *   POST /dashboard/payouts                          csrf_token, idempotency_key, amount, address, memo → a crypto
 *                                                    payout (DashboardService RequestPayout), 303 to the payouts page
 *                                                    with a notice; 400 naming why a payout was refused
 *   POST /dashboard/payouts/schedule                 csrf_token, every (off|daily|weekly), minimum, reserve, address →
 *                                                    the merchant's automatic payouts (DashboardService
 *                                                    SetPayoutSchedule), 303 with a notice; 400 naming each bad field
 *   POST /dashboard/payouts/:reference/decision      csrf_token, decision (approve|reject) → 303 with a notice; 400
 *                                                    when the payout no longer waits; 404 another merchant's payout
 *
 * A form from another site (Sec-Fetch-Site), without its CSRF token or with another session's changes nothing and
 * answers 403. Errors are pages that say nothing internal.
 */
import Router from '@koa/router';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { readRpcFailure } from '../../src/rpc/errors';
import type { AreaRouter, EdgeStatus } from '../app';
import type { FacadeContext, FacadeState } from '../context';
import { rpcCallOptions, setRetryAfter } from '../rpc-call';
import { dashboardDocument, DASHBOARD_BASE, DASHBOARD_STYLESHEET_PATH, endpointContent, invalidContent, messageContent, signInContent, type EndpointResult, type SignedIn } from '../views/dashboard';
import { paymentContent } from '../views/dashboard-payment';
import { POLICY_FIELD_TEXTS, policyContent, POLICY_PATH } from '../views/dashboard-policy';
import { DASHBOARD_STYLESHEET } from '../views/dashboard-style';
import { cookieOf, formOf, fromThisOrigin, seeOther, sendPage, SESSION_COOKIE, setCookie, setSecurityHeaders, SIGN_IN_COOKIE, signInToken, signInTokenMatches } from './http';
import { DASHBOARD_PAGES, listQuery, queryText, type DashboardPage } from './pages';
import { exportBalanceTransactions, exportPayments } from './csv';
import { PAYMENT_FILTER_NAMES } from '../views/dashboard-lists';
import { balanceTransactionsContent } from '../views/dashboard-balance';
import { PAYOUT_SCHEDULE_PATH, PAYOUTS_PATH } from '../views/dashboard-payouts';

const WRONG_CREDENTIALS = 'The user name or password is wrong.';
const SIGN_IN = '/sign-in';
/** A webhook id as the platform makes them; anything else is an unknown delivery. */
const WEBHOOK_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function sendMessage(ctx: FacadeContext, status: number, title: string, message: string, link?: { href: string; text: string }): void {
  sendPage(ctx, status, dashboardDocument({ title, content: messageContent(message, link) }));
}

const TO_SIGN_IN = { href: `${DASHBOARD_BASE}${SIGN_IN}`, text: 'Sign in' };

/** 403: a form this dashboard session did not send (or no session at all). Nothing was changed. */
function refuseForm(ctx: FacadeContext): void {
  sendMessage(
    ctx,
    403,
    'Form refused',
    'This form was not accepted: it did not come from your signed-in dashboard, or your session has ended. Nothing was changed.',
    { href: `${DASHBOARD_BASE}${DASHBOARD_PAGES[0]!.path}`, text: 'Back to the dashboard' },
  );
}

/** 404: no delivery of this merchant has this id (another merchant's included). */
function unknownDelivery(ctx: FacadeContext): void {
  sendMessage(ctx, 404, 'Not found', 'There is no such webhook delivery.', { href: `${DASHBOARD_BASE}/webhooks`, text: 'Webhook deliveries' });
}

/**
 * Answers a failed RPC: an ended session (GET: back to sign-in; POST: 403), a refused CSRF token (403), an unknown
 * delivery (404), a lockout or rate limit (429 with Retry-After), a malformed link (400), anything else 500 (logged).
 */
function answerFailure(ctx: FacadeContext, error: unknown): void {
  const failure = readRpcFailure(error);
  switch (failure.reason) {
    case 'SESSION_INVALID':
      if (ctx.method === 'GET' || ctx.method === 'HEAD') {
        setCookie(ctx, SESSION_COOKIE, '', 0);
        return seeOther(ctx, SIGN_IN);
      }
      return refuseForm(ctx);
    case 'CSRF_TOKEN_INVALID':
      return refuseForm(ctx);
    case 'WEBHOOK_NOT_FOUND':
      return unknownDelivery(ctx);
    case 'RATE_LIMITED':
      setRetryAfter(ctx, failure.retryAfterSeconds);
      return sendMessage(
        ctx,
        429,
        'Too many attempts',
        `Too many attempts. Please wait ${failure.retryAfterSeconds ?? 60} seconds before trying again.`,
        ctx.path.endsWith(SIGN_IN) ? undefined : TO_SIGN_IN,
      );
    case 'VALIDATION_FAILED':
      return sendPage(ctx, 400, dashboardDocument({ title: 'Not valid', content: invalidContent(problemTexts(failure.fields), { href: `${DASHBOARD_BASE}${listPathOf(ctx.path)}`, text: 'Show the list without filters' }) }));
    default:
      ctx.state.logger.error({ err: error, request_id: ctx.state.requestId }, 'dashboard request failed');
      return sendMessage(ctx, 500, 'Something went wrong', 'The dashboard could not answer. Please try again in a moment.');
  }
}

/** What the 400 page says of each field (`code` is the field problem's, src/field-problems.ts). */
function fieldText(field: string, code: string): string {
  switch (field) {
    case 'kind':
      return 'Kind must be one of the kinds the list offers.';
    case 'status':
      return 'Status must be one of the statuses the list offers, and one a payment of the chosen kind can have.';
    case 'reference':
    case 'subject':
      return `${field === 'reference' ? 'Reference' : 'Subject'} must be one value of at most 128 characters.`;
    case 'created_from':
      return 'Created from must be one day, written YYYY-MM-DD.';
    case 'created_to':
      return code === 'invalid' ? 'Created to must not be before Created from.' : 'Created to must be one day, written YYYY-MM-DD.';
    case 'type':
      return 'Type must be one of the event types the list offers.';
    case 'out_trade_no':
      return 'Order id must be one value of at most 128 characters.';
    case 'amount_from':
      return 'Amount from must be an amount such as 10 or 12.50.';
    case 'amount_to':
      return code === 'min' ? 'Amount to must not be less than Amount from.' : 'Amount to must be an amount such as 10 or 12.50.';
    case 'currency':
      return 'There is no wallet in this currency.';
    case 'page_size':
      return 'Page size must be a whole number from 1 to 100.';
    case 'before':
    case 'after':
    case 'page_token':
      return 'The page link is not valid: open the list again and follow its links.';
    default:
      return `${field} is not valid.`;
  }
}

/** Each failing field's sentence, once each (before and after say the same). */
function problemTexts(fields: Record<string, string[]>): string[] {
  const texts = Object.entries(fields).map(([field, codes]) => fieldText(field, (codes[0] ?? '').split(':')[0]!));
  return texts.length ? [...new Set(texts)] : ['This link is not valid.'];
}

/** The list page a refused request was for (its path without a query), else the first page. */
function listPathOf(path: string): string {
  const relative = path.slice(DASHBOARD_BASE.length);
  return DASHBOARD_PAGES.some((page) => page.path === relative) ? relative : DASHBOARD_PAGES[0]!.path;
}

/** The sign-in page, with `error` and the refused `userName` after a refusal. */
function sendSignIn(ctx: FacadeContext, status: number, error?: string, userName?: string): void {
  sendPage(ctx, status, dashboardDocument({ title: 'Sign in', content: signInContent({ csrfToken: signInToken(ctx), error, userName }) }));
}

async function showSignIn(ctx: FacadeContext): Promise<void> {
  const sessionToken = cookieOf(ctx, SESSION_COOKIE);
  if (sessionToken) {
    // Already signed in: straight to the dashboard. An ended session just shows the form (and loses its cookie).
    try {
      await ctx.state.clients.dashboard.getSession({ sessionToken }, rpcCallOptions(ctx));
      return seeOther(ctx, DASHBOARD_PAGES[0]!.path);
    } catch (error) {
      if (readRpcFailure(error).reason !== 'SESSION_INVALID') return answerFailure(ctx, error);
      setCookie(ctx, SESSION_COOKIE, '', 0);
    }
  }
  sendSignIn(ctx, 200);
}

async function signIn(ctx: FacadeContext): Promise<void> {
  const form = formOf(ctx);
  if (!fromThisOrigin(ctx) || !signInTokenMatches(ctx, form.get('csrf_token') ?? '')) return refuseForm(ctx);
  const userName = form.get('user_name') ?? '';
  const password = form.get('password') ?? '';
  if (!userName || !password) return sendSignIn(ctx, 400, 'Enter your API user name and password.', userName);
  // Longer than any credential the platform issues: wrong, answered like any wrong one.
  if (userName.length > 256 || password.length > 256) return sendSignIn(ctx, 401, WRONG_CREDENTIALS);
  try {
    const answer = await ctx.state.clients.dashboard.signIn({ userName, password }, rpcCallOptions(ctx));
    setCookie(ctx, SIGN_IN_COOKIE, '', 0);
    setCookie(ctx, SESSION_COOKIE, answer.sessionToken, Number(answer.expiresInSeconds));
    seeOther(ctx, DASHBOARD_PAGES[0]!.path);
  } catch (error) {
    if (readRpcFailure(error).reason === 'LOGIN_FAILED') return sendSignIn(ctx, 401, WRONG_CREDENTIALS, userName);
    answerFailure(ctx, error);
  }
}

/** A changing form: same origin, a session cookie, then `change` (the service checks the session and CSRF token). */
async function changingForm(ctx: FacadeContext, change: (sessionToken: string, csrfToken: string) => Promise<void>): Promise<void> {
  const sessionToken = cookieOf(ctx, SESSION_COOKIE);
  if (!fromThisOrigin(ctx) || !sessionToken) return refuseForm(ctx);
  try {
    await change(sessionToken, formOf(ctx).get('csrf_token') ?? '');
  } catch (error) {
    answerFailure(ctx, error);
  }
}

/**
 * The policy form: sets the merchant's policy (the service checks the session, the CSRF token and every value), then
 * 303 to the page with a notice; a refused value answers 400 with the page (the policy as stored) naming each field.
 */
async function savePolicy(ctx: FacadeContext, sessionToken: string, csrfToken: string): Promise<void> {
  const form = formOf(ctx);
  const field = (name: string) => form.get(name) ?? '';
  try {
    await ctx.state.clients.dashboard.setOutcomePolicy(
      {
        sessionToken,
        csrfToken,
        underpaid: field('underpaid'),
        overpaid: field('overpaid'),
        late: field('late'),
        tolerancePercent: field('tolerance_percent').trim(),
        refundFee: field('refund_fee'),
      },
      rpcCallOptions(ctx),
    );
    seeOther(ctx, `${POLICY_PATH}?saved=1`);
  } catch (error) {
    const failure = readRpcFailure(error);
    if (failure.reason !== 'VALIDATION_FAILED') throw error;
    const problems = Object.keys(failure.fields).map((name) => POLICY_FIELD_TEXTS[name] ?? `${name} is not valid.`);
    const { session } = await ctx.state.clients.dashboard.getSession({ sessionToken }, rpcCallOptions(ctx));
    const { policy } = await ctx.state.clients.dashboard.getOutcomePolicy({ sessionToken }, rpcCallOptions(ctx));
    const content = policyContent({ policy: policy!, csrfToken: session!.csrfToken, problems });
    sendPage(ctx, 400, dashboardDocument({ title: 'Payment policy', content, signedIn: session!, navigation: DASHBOARD_PAGES, current: POLICY_PATH }));
  }
}

async function showPage(ctx: FacadeContext, page: DashboardPage): Promise<void> {
  const sessionToken = cookieOf(ctx, SESSION_COOKIE);
  if (!sessionToken) return seeOther(ctx, SIGN_IN);
  try {
    const { session } = await ctx.state.clients.dashboard.getSession({ sessionToken }, rpcCallOptions(ctx));
    const content = await page.render(ctx, sessionToken, session!);
    const signedIn: SignedIn = session!;
    sendPage(ctx, 200, dashboardDocument({ title: page.title, content, signedIn, navigation: DASHBOARD_PAGES, current: page.path }));
  } catch (error) {
    answerFailure(ctx, error);
  }
}

/** A payment reference as the platform makes them; anything else is an unknown payment. */
const PAYMENT_REFERENCE = /^[A-Za-z0-9._:-]{1,128}$/;

/** One payment's page: the session's merchant's payment only (404 otherwise, whoever's it is). */
async function showPayment(ctx: FacadeContext): Promise<void> {
  const sessionToken = cookieOf(ctx, SESSION_COOKIE);
  if (!sessionToken) return seeOther(ctx, SIGN_IN);
  const reference = ctx.params.reference ?? '';
  try {
    const { session } = await ctx.state.clients.dashboard.getSession({ sessionToken }, rpcCallOptions(ctx));
    if (!PAYMENT_REFERENCE.test(reference)) return unknownPayment(ctx);
    const answer = await ctx.state.clients.dashboard.getPayment({ sessionToken, reference }, rpcCallOptions(ctx));
    const refunded = queryText(ctx, 'refunded');
    const notice = refunded ? `Refund ${refunded} requested: the amount is held on your balance until the provider sends it.` : undefined;
    const content = paymentContent(answer, session!.csrfToken, randomUUID(), notice);
    sendPage(ctx, 200, dashboardDocument({ title: `Payment ${answer.payment!.outTradeNo || answer.payment!.reference}`, content, signedIn: session!, navigation: DASHBOARD_PAGES }));
  } catch (error) {
    if (readRpcFailure(error).reason === 'PAYMENT_NOT_FOUND') return unknownPayment(ctx);
    answerFailure(ctx, error);
  }
}

function unknownPayment(ctx: FacadeContext): void {
  sendMessage(ctx, 404, 'Not found', 'There is no such payment.', { href: `${DASHBOARD_BASE}${DASHBOARD_PAGES[0]!.path}`, text: 'Back to the dashboard' });
}

/** What a refused refund says (the refund rules, docs/refunds.md). */
const REFUND_REFUSALS: Record<string, string> = {
  REFUND_PAYIN_NOT_SETTLED: 'This payment is not settled: there is nothing to refund.',
  REFUND_AMOUNT_EXCEEDS_REFUNDABLE: 'The amount is more than what can still be refunded.',
  REFUND_INSUFFICIENT_BALANCE: 'Your available balance is less than the refund.',
  REFUND_PROVIDER_NOT_CONFIGURED: 'Refunds are not available on this platform.',
  IDEMPOTENCY_KEY_REUSED: 'This form was already sent with other values: open the payment again.',
};

/** The refund form: a refund through the refund flow, then 303 to the payment with a notice; refusals are 400 pages. */
async function refundPayment(ctx: FacadeContext, sessionToken: string, csrfToken: string): Promise<void> {
  const reference = ctx.params.reference ?? '';
  if (!PAYMENT_REFERENCE.test(reference)) return unknownPayment(ctx);
  const form = formOf(ctx);
  const back = { href: `${DASHBOARD_BASE}/payments/${encodeURIComponent(reference)}`, text: 'Back to the payment' };
  try {
    const answer = await ctx.state.clients.dashboard.refundPayment(
      { sessionToken, csrfToken, reference, amount: (form.get('amount') ?? '').trim(), reason: form.get('reason') ?? '', idempotencyKey: form.get('idempotency_key') ?? '' },
      rpcCallOptions(ctx),
    );
    seeOther(ctx, `/payments/${encodeURIComponent(reference)}?refunded=${encodeURIComponent(answer.refundReference)}`);
  } catch (error) {
    const failure = readRpcFailure(error);
    if (failure.reason === 'PAYMENT_NOT_FOUND') return unknownPayment(ctx);
    const refusal = REFUND_REFUSALS[failure.reason ?? ''];
    if (refusal) return sendMessage(ctx, 400, 'Refund refused', `${refusal} Nothing was refunded.`, back);
    if (failure.reason === 'VALIDATION_FAILED') {
      const texts = Object.keys(failure.fields).map((field) =>
        field === 'amount'
          ? 'Amount must be a positive amount in the payment\'s currency, such as 12.50.'
          : field === 'address'
            ? 'No payer address was reported with this payment: it cannot be refunded from here.'
            : field === 'reason'
              ? 'Reason must be at most 255 characters, without control characters.'
              : 'The form is not valid: open the payment again.',
      );
      return sendMessage(ctx, 400, 'Refund refused', `${texts.join(' ')} Nothing was refunded.`, back);
    }
    throw error;
  }
}

const PAYOUTS_BACK = { href: `${DASHBOARD_BASE}${PAYOUTS_PATH}`, text: 'Back to payouts' };

/** What a refused payout says (the payout rules, docs/payouts.md). */
const PAYOUT_REFUSALS: Record<string, string> = {
  PAYOUT_INSUFFICIENT_BALANCE: 'Your available balance is less than the payout and its fee.',
  PAYOUT_BELOW_MINIMUM: 'The amount is below your minimum payout.',
  PAYOUT_ABOVE_LIMIT: 'The amount is above your limit per payout.',
  PAYOUT_DAILY_LIMIT_EXCEEDED: 'This payout would take your payouts of today above your daily limit.',
  PAYOUT_PROVIDER_NOT_CONFIGURED: 'Payouts are not available on this platform.',
  PAYOUT_FEE_NOT_CONFIGURED: 'Your fee schedule has no payout fee: payouts are not available yet.',
  PAYOUT_NOT_AWAITING_APPROVAL: 'This payout is not waiting for approval any more.',
  IDEMPOTENCY_KEY_REUSED: 'This form was already sent with other values: open the payouts page again.',
};

const PAYOUT_FIELD_TEXTS: Record<string, string> = {
  amount: 'Amount must be a positive amount in USDT, such as 12.50.',
  address: 'Destination address must be a TRON address (T followed by 33 characters, with a valid checksum).',
  memo: 'Memo must be at most 255 characters, without control characters.',
};

/** The request form: a crypto payout through DashboardService, then 303 with a notice; refusals are 400 pages. */
async function requestPayout(ctx: FacadeContext, sessionToken: string, csrfToken: string): Promise<void> {
  const form = formOf(ctx);
  try {
    const { payout } = await ctx.state.clients.dashboard.requestPayout(
      { sessionToken, csrfToken, amount: (form.get('amount') ?? '').trim().slice(0, 64), address: (form.get('address') ?? '').trim().slice(0, 128), memo: (form.get('memo') ?? '').slice(0, 1024), idempotencyKey: (form.get('idempotency_key') ?? '').slice(0, 128) },
      rpcCallOptions(ctx),
    );
    seeOther(ctx, `${PAYOUTS_PATH}?requested=${encodeURIComponent(payout!.payoutReference)}`);
  } catch (error) {
    const failure = readRpcFailure(error);
    const refusal = PAYOUT_REFUSALS[failure.reason ?? ''];
    if (refusal) return sendMessage(ctx, 400, 'Payout refused', `${refusal} Nothing was paid out.`, PAYOUTS_BACK);
    if (failure.reason === 'VALIDATION_FAILED') {
      const texts = [...new Set(Object.keys(failure.fields).map((field) => PAYOUT_FIELD_TEXTS[field] ?? 'The form is not valid: open the payouts page again.'))];
      return sendMessage(ctx, 400, 'Payout refused', `${texts.join(' ')} Nothing was paid out.`, PAYOUTS_BACK);
    }
    throw error;
  }
}

const SCHEDULE_FIELD_TEXTS: Record<string, string> = {
  every: 'Schedule must be Off, Daily or Weekly.',
  minimum: 'Minimum payout must be a positive amount in USDT, such as 10.00.',
  reserve: 'Reserve must be an amount in USDT of 0 or more, such as 5.00.',
  address: 'Destination address must be a TRON address (T followed by 33 characters, with a valid checksum).',
};

/** The automatic payouts form: sets or turns off the schedule, then 303 with a notice; a bad field is a 400 page. */
async function setPayoutSchedule(ctx: FacadeContext, sessionToken: string, csrfToken: string): Promise<void> {
  const form = formOf(ctx);
  const field = (name: string, max: number) => (form.get(name) ?? '').trim().slice(0, max);
  const every = field('every', 16);
  try {
    await ctx.state.clients.dashboard.setPayoutSchedule(
      { sessionToken, csrfToken, every, minimum: field('minimum', 64), reserve: field('reserve', 64), address: field('address', 128) },
      rpcCallOptions(ctx),
    );
    seeOther(ctx, `${PAYOUTS_PATH}?schedule=${every === 'off' ? 'off' : 'saved'}`);
  } catch (error) {
    const failure = readRpcFailure(error);
    if (failure.reason === 'VALIDATION_FAILED') {
      const texts = [...new Set(Object.keys(failure.fields).map((name) => SCHEDULE_FIELD_TEXTS[name] ?? 'The form is not valid: open the payouts page again.'))];
      return sendMessage(ctx, 400, 'Schedule not saved', `${texts.join(' ')} Nothing was changed.`, PAYOUTS_BACK);
    }
    throw error;
  }
}

/** A payout reference as the platform makes them; anything else is an unknown payout. */
const PAYOUT_REFERENCE = /^[A-Za-z0-9_-]{1,64}$/;

/** The approve / reject form of a payout awaiting approval: 303 with a notice; 404 for another merchant's payout. */
async function decidePayout(ctx: FacadeContext, sessionToken: string, csrfToken: string): Promise<void> {
  const payoutReference = ctx.params.reference ?? '';
  const decision = formOf(ctx).get('decision') ?? '';
  const unknown = () => sendMessage(ctx, 404, 'Not found', 'There is no such payout.', PAYOUTS_BACK);
  if (!PAYOUT_REFERENCE.test(payoutReference)) return unknown();
  if (decision !== 'approve' && decision !== 'reject') return sendMessage(ctx, 400, 'Not valid', 'Choose Approve or Reject. Nothing was changed.', PAYOUTS_BACK);
  try {
    await ctx.state.clients.dashboard.decidePayout({ sessionToken, csrfToken, payoutReference, decision }, rpcCallOptions(ctx));
    seeOther(ctx, `${PAYOUTS_PATH}?decided=${encodeURIComponent(payoutReference)}&decision=${decision}`);
  } catch (error) {
    const failure = readRpcFailure(error);
    if (failure.reason === 'PAYOUT_NOT_FOUND') return unknown();
    const refusal = PAYOUT_REFUSALS[failure.reason ?? ''];
    if (refusal) return sendMessage(ctx, 400, 'Not changed', `${refusal} Nothing was changed.`, PAYOUTS_BACK);
    throw error;
  }
}

const ENDPOINT_PATH = '/webhook-endpoint';

/** The endpoint page after one of its forms, with what it did (a new secret, a test's outcome, a refusal). */
async function sendEndpointPage(ctx: FacadeContext, status: number, sessionToken: string, result: EndpointResult): Promise<void> {
  const { session } = await ctx.state.clients.dashboard.getSession({ sessionToken }, rpcCallOptions(ctx));
  const endpoint = await ctx.state.clients.dashboard.getWebhookEndpoint({ sessionToken }, rpcCallOptions(ctx));
  const page = DASHBOARD_PAGES.find((entry) => entry.path === ENDPOINT_PATH)!;
  sendPage(ctx, status, dashboardDocument({ title: page.title, content: endpointContent(endpoint, session!.csrfToken, result), signedIn: session!, navigation: DASHBOARD_PAGES, current: ENDPOINT_PATH }));
}

/**
 * The URL form: the SSRF rules, then a test event to the new URL; saved only when it answered 2xx (303 with a
 * notice), else 400 with the page naming why (nothing changed).
 */
async function changeEndpointUrl(ctx: FacadeContext, sessionToken: string, csrfToken: string): Promise<void> {
  const callbackUrl = (formOf(ctx).get('callback_url') ?? '').trim();
  try {
    await ctx.state.clients.dashboard.updateWebhookEndpoint({ sessionToken, csrfToken, callbackUrl: callbackUrl.slice(0, 2048) }, rpcCallOptions(ctx));
    seeOther(ctx, `${ENDPOINT_PATH}?done=changed`);
  } catch (error) {
    const failure = readRpcFailure(error);
    if (failure.reason !== 'VALIDATION_FAILED') throw error;
    const why = (failure.fields.callback_url ?? []).join(' ') || 'the URL is not valid';
    await sendEndpointPage(ctx, 400, sessionToken, { test: undefined, notice: undefined, refused: `The URL was not changed: ${why}.` });
  }
}

/** A wallet's currency as the platform names them; anything else is refused like an unknown wallet. */
const CURRENCY = /^[A-Z]{3,5}$/;

/** A GET behind sign-in that answers something else than a page of ./pages.ts (a download, a sub-page). */
async function signedInGet(ctx: FacadeContext, answer: (sessionToken: string) => Promise<void>): Promise<void> {
  const sessionToken = cookieOf(ctx, SESSION_COOKIE);
  if (!sessionToken) return seeOther(ctx, SIGN_IN);
  try {
    await answer(sessionToken);
  } catch (error) {
    answerFailure(ctx, error);
  }
}

/** One wallet's balance transactions, newest first, paged. */
async function showBalanceTransactions(ctx: FacadeContext, sessionToken: string): Promise<void> {
  const currency = ctx.params.currency ?? '';
  const { session } = await ctx.state.clients.dashboard.getSession({ sessionToken }, rpcCallOptions(ctx));
  const before = queryText(ctx, 'before', 64);
  const answer = await ctx.state.clients.dashboard.listBalanceTransactions({ sessionToken, currency: CURRENCY.test(currency) ? currency : '', before }, rpcCallOptions(ctx));
  const content = balanceTransactionsContent(answer, before !== '');
  sendPage(ctx, 200, dashboardDocument({ title: `${answer.currency} balance transactions`, content, signedIn: session!, navigation: DASHBOARD_PAGES, current: '/balances' }));
}

function serveStylesheet(ctx: FacadeContext): void {
  // Like every dashboard answer, not stored (2 KB, read once per page).
  setSecurityHeaders(ctx);
  ctx.status = 200;
  ctx.type = 'text/css; charset=utf-8';
  ctx.body = DASHBOARD_STYLESHEET;
}

export function dashboardRouter(): Router<FacadeState> {
  const router = new Router<FacadeState>();
  router.get(DASHBOARD_BASE, (ctx) => seeOther(ctx, DASHBOARD_PAGES[0]!.path));
  router.get(DASHBOARD_STYLESHEET_PATH, serveStylesheet);
  router.get(`${DASHBOARD_BASE}${SIGN_IN}`, showSignIn);
  router.post(`${DASHBOARD_BASE}${SIGN_IN}`, signIn);
  router.post(`${DASHBOARD_BASE}/sign-out`, (ctx) =>
    changingForm(ctx, async (sessionToken, csrfToken) => {
      await ctx.state.clients.dashboard.signOut({ sessionToken, csrfToken }, rpcCallOptions(ctx));
      setCookie(ctx, SESSION_COOKIE, '', 0);
      seeOther(ctx, SIGN_IN);
    }),
  );
  router.post(`${DASHBOARD_BASE}/webhooks/:webhookId/redeliver`, (ctx) =>
    changingForm(ctx, async (sessionToken, csrfToken) => {
      const webhookId = ctx.params.webhookId ?? '';
      if (!WEBHOOK_ID.test(webhookId)) return unknownDelivery(ctx);
      await ctx.state.clients.dashboard.redeliverWebhook({ sessionToken, csrfToken, webhookId }, rpcCallOptions(ctx));
      seeOther(ctx, `/webhooks?redelivered=${encodeURIComponent(webhookId)}`);
    }),
  );
  router.post(`${DASHBOARD_BASE}${ENDPOINT_PATH}/url`, (ctx) => changingForm(ctx, (sessionToken, csrfToken) => changeEndpointUrl(ctx, sessionToken, csrfToken)));
  router.post(`${DASHBOARD_BASE}${ENDPOINT_PATH}/test`, (ctx) =>
    changingForm(ctx, async (sessionToken, csrfToken) => {
      const { test } = await ctx.state.clients.dashboard.sendTestWebhook({ sessionToken, csrfToken }, rpcCallOptions(ctx));
      await sendEndpointPage(ctx, 200, sessionToken, { test });
    }),
  );
  // The new secret is shown in this answer only: never in a URL, so no redirect.
  router.post(`${DASHBOARD_BASE}${ENDPOINT_PATH}/rotate`, (ctx) =>
    changingForm(ctx, async (sessionToken, csrfToken) => {
      const rotated = await ctx.state.clients.dashboard.rotateWebhookSecret({ sessionToken, csrfToken }, rpcCallOptions(ctx));
      await sendEndpointPage(ctx, 200, sessionToken, { rotated: { secret: rotated.secret, previousValidUntil: rotated.previousSecretValidUntil } });
    }),
  );
  router.post(`${DASHBOARD_BASE}${ENDPOINT_PATH}/enable`, (ctx) =>
    changingForm(ctx, async (sessionToken, csrfToken) => {
      await ctx.state.clients.dashboard.enableWebhookEndpoint({ sessionToken, csrfToken }, rpcCallOptions(ctx));
      seeOther(ctx, `${ENDPOINT_PATH}?done=enabled`);
    }),
  );
  router.post(`${DASHBOARD_BASE}${POLICY_PATH}`, (ctx) => changingForm(ctx, (sessionToken, csrfToken) => savePolicy(ctx, sessionToken, csrfToken)));
  for (const page of DASHBOARD_PAGES) router.get(`${DASHBOARD_BASE}${page.path}`, (ctx) => showPage(ctx, page));
  router.get(`${DASHBOARD_BASE}/payments.csv`, (ctx) => signedInGet(ctx, (sessionToken) => exportPayments(ctx, sessionToken, listQuery(ctx, PAYMENT_FILTER_NAMES).filters)));
  router.get(`${DASHBOARD_BASE}/balances/:currency.csv`, (ctx) =>
    signedInGet(ctx, (sessionToken) => exportBalanceTransactions(ctx, sessionToken, CURRENCY.test(ctx.params.currency ?? '') ? ctx.params.currency! : '')),
  );
  router.get(`${DASHBOARD_BASE}/balances/:currency`, (ctx) => signedInGet(ctx, (sessionToken) => showBalanceTransactions(ctx, sessionToken)));
  router.get(`${DASHBOARD_BASE}/payments/:reference`, showPayment);
  router.post(`${DASHBOARD_BASE}${PAYOUTS_PATH}`, (ctx) => changingForm(ctx, (sessionToken, csrfToken) => requestPayout(ctx, sessionToken, csrfToken)));
  router.post(`${DASHBOARD_BASE}${PAYOUT_SCHEDULE_PATH}`, (ctx) => changingForm(ctx, (sessionToken, csrfToken) => setPayoutSchedule(ctx, sessionToken, csrfToken)));
  router.post(`${DASHBOARD_BASE}${PAYOUTS_PATH}/:reference/decision`, (ctx) => changingForm(ctx, (sessionToken, csrfToken) => decidePayout(ctx, sessionToken, csrfToken)));
  router.post(`${DASHBOARD_BASE}/payments/:reference/refund`, (ctx) => changingForm(ctx, (sessionToken, csrfToken) => refundPayment(ctx, sessionToken, csrfToken)));
  return router;
}

/**
 * The façade's own answers on a dashboard path (unknown page, wrong method, too large, busy, fault): dashboard pages
 * (the one stylesheet, no inline style: the dashboard's policy allows none), with the dashboard's headers (`headers`
 * of the area, below).
 */
function dashboardEdgePage(status: EdgeStatus): string {
  const back = { href: `${DASHBOARD_BASE}${DASHBOARD_PAGES[0]!.path}`, text: 'Back to the dashboard' };
  const [title, message] =
    status === 404
      ? ['Not found', 'There is no such dashboard page.']
      : status === 405
        ? ['Not allowed', 'This page cannot be used this way.']
        : status === 413
          ? ['Too large', 'The form sent is too large.']
          : status === 503
            ? ['Busy', 'The dashboard is busy. Please try again in a moment.']
            : ['Something went wrong', 'The dashboard could not answer. Please try again in a moment.'];
  return dashboardDocument({ title, content: messageContent(message, back) });
}

/** The dashboard as an area of the façade: every path under /dashboard, all of them pages. */
export function dashboardArea(): AreaRouter {
  const paths = /^\/dashboard(\/|$)/;
  return {
    prefix: '',
    router: dashboardRouter(),
    paths,
    pages: paths,
    pageEdge: dashboardEdgePage,
    headers: setSecurityHeaders,
    edge: (status) => ({ status, body: { success: false, code: status, message: http.STATUS_CODES[status] } }),
  };
}
