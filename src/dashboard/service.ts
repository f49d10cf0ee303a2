/**
 * DashboardService (docs/dashboard.md): the merchant dashboard's facts, each for the merchant of one dashboard
 * session and nobody else. The façade (rest-facade/dashboard) renders them as pages; it holds no key and reads no
 * table, so the session, its CSRF token and every merchant boundary are checked here.
 *
 *   SignIn                 API user name and password, as Area C's /login checks them (onboarding
 *                          `verifyMerchantApiLogin`: constant time, a suspended merchant fails like a wrong password),
 *                          counted at /login's door `merchant_login` (src/abuse) by (credential, client address), by
 *                          credential and by address. The credential is the merchant id the name belongs to, so
 *                          guesses at /login and here share one count; an unknown name counts under itself.
 *   SignOut                session + CSRF token; deletes the session
 *   GetSession             the session's merchant and CSRF token
 *   GetBalances            the merchant's wallets (ledger `accountsOf`)
 *   ListWebhookDeliveries  the merchant's webhook events with every attempt and the next retry, newest first, paged
 *   RedeliverWebhook       session + CSRF token; the merchant's own event only (another's is WEBHOOK_NOT_FOUND, as an
 *                          unknown one), then src/webhooks `redeliverWebhook`, as the operator's; audited (src/rpc/audit.ts)
 *   GetWebhookEndpoint     callback URL, signature header, the headers every webhook carries, the secret's name
 *   ListPayments           the merchant's payments, one per reference, from its event stream (src/events
 *                          `listPayments`): filters kind, status, reference, creation days; keyset paging by seq
 *   ListEvents             the merchant's own event stream after a seq (src/events `listEvents`), by type, subject
 *   GetOutcomePolicy       the merchant's payment-outcome policy (src/flows/payin/policy.ts), the default without one
 *   SetOutcomePolicy       session + CSRF token; sets the merchant's own policy (every field checked, nothing changed
 *                          on a refusal); `updated_by` is `dashboard:<merchant id>`; audited (src/rpc/audit.ts)
 *   GetPayment             one payment in the merchant's words (./payment-story.ts over src/timeline's timeline as
 *                          the merchant sees it): summary, steps, technical entries (Web UI links only when
 *                          TEMPORAL_UI_PUBLIC)
 *   RefundPayment          session + CSRF token; src/flows/refund `createRefund` to the payer's reported address,
 *                          idempotent on the form's key; audited (src/rpc/audit.ts)
 *   SetPayoutSchedule      session + CSRF token; the merchant's own automatic payouts through src/flows/payout
 *                          `setPayoutSchedule` / `removePayoutSchedule` (their Temporal Schedule); every field checked,
 *                          nothing changed on a refusal; audited (src/rpc/audit.ts)
 *
 * Every call but SignIn counts against the merchant's request rate (REQUESTS_PER_CALLER_PER_MINUTE).
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { COMMON_REASONS, invalidFields, reasonError } from '../errors';
import { type DashboardService, type WebhookDeliverySchema } from '../gen/payments/dashboard/v1/dashboard_pb';
import { EVENT_SUBJECT_MAX_LENGTH, EVENT_TYPES, isEventType, isPaymentKind, listEvents, listPayments, paymentStatuses, PAYMENT_KINDS, recordEvent, type PaymentKind } from '../events';
import { problem } from '../field-problems';
import { decimalsOf, isCurrency } from '../money';
import {
  checkCallbackUrl,
  enableWebhookEndpoint,
  getMerchant,
  MERCHANT_WALLET_CURRENCIES,
  merchantIdOfApiUserName,
  rotateMerchantHmacSecret,
  setMerchantCallbackUrl,
  verifyMerchantApiLogin,
  webhookEndpointState,
} from '../onboarding/merchants';
import type { PlatformDeps } from '../platform-deps';
import { clientAddressOf } from '../rpc/client-address';
import { attemptsOf, findWebhookEvent, merchantWebhooksPage, redeliverWebhook, sendTestWebhook, type WebhookEventRow } from '../webhooks';
import { retryScheduleOf } from './next-retry';
import { checkPolicyChange, findOutcomePolicy, outcomePolicyFields, saveOutcomePolicy } from '../flows/payin/policy';
import { DASHBOARD_REASONS } from './reasons';
import { timelineFor, timelineMessage } from '../timeline/service';
import { latestPayerAddress } from '../flows/payin/store';
import { createRefund } from '../flows/refund/service';
import { createPayout, CRYPTO_PAYOUT_CHANNEL, isTronAddress, listPayouts, merchantDecidesPayout, type PayoutRow } from '../flows/payout/service';
import { feePayoutOf } from '../flows/payout/store';
import { payoutScheduleId, payoutScheduleOf, removePayoutSchedule, setPayoutSchedule, type PayoutSchedule } from '../flows/payout/schedules';
import { merchantRefundFee, refundableOf, refundBasis } from '../flows/refund/store';
import { parseAmount } from '../money';
import { stepsOf, summaryOf, technicalEntries } from './payment-story';
import { TIMELINE_REASONS } from '../timeline/reasons';
import { closeDashboardSession, csrfTokenMatches, findDashboardSession, openDashboardSession, type DashboardSession } from './sessions';

/** Deliveries per page unless the request asks for another number (1 to 100). */
export const DEFAULT_PAGE_SIZE = 20;

/**
 * The headers every webhook carries besides Content-Type, in the order docs/webhooks.md lists them; the first is
 * the merchant's signature header (src/webhooks/index.ts sends them).
 */
export const WEBHOOK_HEADERS = ['x-webhook-id', 'x-webhook-event', 'x-webhook-attempt', 'webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

/** No merchant has this id ("-" is no character of theirs): an unknown name's password is checked against none. */
const NO_MERCHANT = '-';

const sessionInvalid = () => reasonError(DASHBOARD_REASONS, 'SESSION_INVALID', 'no live dashboard session');

/** A page token: the base64url of the last event id of the previous page. @throws VALIDATION_FAILED on page_token */
function afterIdOf(pageToken: string): string | undefined {
  if (!pageToken) return undefined;
  const id = /^[A-Za-z0-9_-]{1,120}$/.test(pageToken) ? Buffer.from(pageToken, 'base64url').toString('utf8') : '';
  if (!id || id.length > 80 || Buffer.from(id, 'utf8').toString('base64url') !== pageToken) throw invalidFields({ page_token: ['invalid'] });
  return id;
}

/** The statuses the deliveries' filter takes. */
const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'];

/** A test delivery as the RPC answers it. */
function testMessage(test: { webhook_id: string; status_code: number | null; response_body: string | null; error: string | null }) {
  return { webhookId: test.webhook_id, statusCode: test.status_code ?? 0, responseBody: test.response_body ?? '', error: test.error ?? '' };
}

/** The payment a ledger key belongs to: the flows key theirs `<reference>:<step>`; '' for another key. */
function paymentOfLedgerKey(key: string): string {
  const [reference, step] = key.split(':');
  return step !== undefined && /^[A-Za-z0-9._-]{1,128}$/.test(reference ?? '') ? reference! : '';
}

const pageTokenOf = (id: string) => Buffer.from(id, 'utf8').toString('base64url');

const SEQ = /^\d{1,18}$/;
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 86_400_000;

/** The start (00:00 UTC) of a YYYY-MM-DD day that exists, else undefined. */
function dayStart(text: string): Date | undefined {
  const match = DAY.exec(text);
  if (!match) return undefined;
  const day = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));
  return day.toISOString().slice(0, 10) === text ? day : undefined;
}

/**
 * The payments list's filters and cursor, checked: every failing field is named (kind: invalid; status: invalid, a
 * verb no payment of the kind has; reference: max_length:128; created_from / created_to: date, created_to: invalid
 * before created_from; before / after: integer, after: invalid with before).
 * @throws DomainError VALIDATION_FAILED
 */
/** A major-units bound of the amount filters: a plain decimal, at most 8 decimals. */
const MAJOR_AMOUNT = /^\d{1,15}(\.\d{1,8})?$/;

function paymentsQueryOf(request: {
  kind: string;
  status: string;
  reference: string;
  createdFrom: string;
  createdTo: string;
  before: string;
  after: string;
  outTradeNo: string;
  amountFrom: string;
  amountTo: string;
}) {
  const problems: Record<string, string[]> = {};
  const kind = request.kind === '' ? undefined : isPaymentKind(request.kind) ? request.kind : undefined;
  if (request.kind !== '' && !kind) problems.kind = [problem('invalid')];
  if (request.status !== '' && !paymentStatuses(kind as PaymentKind | undefined).includes(request.status)) problems.status = [problem('invalid')];
  if ([...request.reference].length > EVENT_SUBJECT_MAX_LENGTH) problems.reference = [problem('max_length', EVENT_SUBJECT_MAX_LENGTH)];
  const from = request.createdFrom === '' ? undefined : dayStart(request.createdFrom);
  const to = request.createdTo === '' ? undefined : dayStart(request.createdTo);
  if (request.createdFrom !== '' && !from) problems.created_from = [problem('date')];
  if (request.createdTo !== '' && !to) problems.created_to = [problem('date')];
  else if (from && to && to < from) problems.created_to = [problem('invalid')];
  if (request.before !== '' && !SEQ.test(request.before)) problems.before = [problem('integer')];
  if (request.after !== '' && !SEQ.test(request.after)) problems.after = [problem('integer')];
  else if (request.after !== '' && request.before !== '') problems.after = [problem('invalid')];
  if ([...request.outTradeNo].length > EVENT_SUBJECT_MAX_LENGTH) problems.out_trade_no = [problem('max_length', EVENT_SUBJECT_MAX_LENGTH)];
  const amountFrom = request.amountFrom.trim();
  const amountTo = request.amountTo.trim();
  if (amountFrom !== '' && !MAJOR_AMOUNT.test(amountFrom)) problems.amount_from = [problem('invalid')];
  if (amountTo !== '' && !MAJOR_AMOUNT.test(amountTo)) problems.amount_to = [problem('invalid')];
  else if (amountFrom !== '' && amountTo !== '' && MAJOR_AMOUNT.test(amountFrom) && Number(amountTo) < Number(amountFrom)) problems.amount_to = [problem('min', amountFrom)];
  if (Object.keys(problems).length > 0) throw invalidFields(problems);
  return {
    out_trade_no: request.outTradeNo || undefined,
    amount_from: amountFrom || undefined,
    amount_to: amountTo || undefined,
    kind: kind as PaymentKind | undefined,
    status: request.status || undefined,
    reference: request.reference || undefined,
    created_from: from,
    created_before: to ? new Date(to.getTime() + DAY_MS) : undefined,
    before: request.before ? BigInt(request.before) : undefined,
    after: request.after ? BigInt(request.after) : undefined,
  };
}

/**
 * The events list's filters and cursor, checked (type: invalid, not a type of the catalog; subject: max_length:128;
 * after: integer). @throws DomainError VALIDATION_FAILED
 */
function eventsQueryOf(request: { type: string; subject: string; after: string; before: string; newestFirst: boolean }) {
  const problems: Record<string, string[]> = {};
  if (request.before !== '' && !SEQ.test(request.before)) problems.before = [problem('integer')];
  if (request.newestFirst && request.after !== '') problems.after = [problem('invalid')];
  if (request.type !== '' && !isEventType(request.type)) problems.type = [problem('invalid')];
  if ([...request.subject].length > EVENT_SUBJECT_MAX_LENGTH) problems.subject = [problem('max_length', EVENT_SUBJECT_MAX_LENGTH)];
  if (request.after !== '' && !SEQ.test(request.after)) problems.after = [problem('integer')];
  if (Object.keys(problems).length > 0) throw invalidFields(problems);
  return {
    type: request.type || undefined,
    subject: request.subject || undefined,
    after: request.after ? BigInt(request.after) : 0n,
    ...(request.newestFirst ? { before: request.before ? BigInt(request.before) : 0n } : {}),
  };
}

export function createDashboardService(deps: PlatformDeps): ServiceImpl<typeof DashboardService> {
  const { database } = deps;

  /**
   * The live session of `token`, counted against its merchant's request rate.
   * @throws DomainError SESSION_INVALID, RATE_LIMITED
   */
  async function requireSession(token: string): Promise<DashboardSession> {
    const session = await findDashboardSession(database, token);
    if (!session) throw sessionInvalid();
    await deps.abuse.consumeRequest(`merchant:${session.merchant_id}`);
    return session;
  }

  /** A changing call: the live session, then its CSRF token. @throws SESSION_INVALID, CSRF_TOKEN_INVALID, RATE_LIMITED */
  async function requireSessionAndCsrf(token: string, csrfToken: string): Promise<DashboardSession> {
    const session = await requireSession(token);
    if (!csrfTokenMatches(session, csrfToken)) throw reasonError(DASHBOARD_REASONS, 'CSRF_TOKEN_INVALID', 'the CSRF token is not this session\'s');
    return session;
  }

  const sessionMessage = (session: DashboardSession) => ({
    merchantId: session.merchant_id,
    merchantName: session.merchant_name,
    csrfToken: session.csrf_token,
    expiresAt: session.expires_at.toISOString(),
    webhookDisabledAt: session.webhook_disabled_at?.toISOString() ?? '',
  });

  /** The events as deliveries: their attempts (one query) and, for pending ones, when the next is due (./next-retry.ts). */
  async function deliveriesOf(events: WebhookEventRow[]): Promise<Array<MessageInitShape<typeof WebhookDeliverySchema>>> {
    const attempts = await attemptsOf(
      database,
      events.map((event) => event.id),
    );
    const now = new Date();
    const schedules = events.map((event) =>
      retryScheduleOf(
        event,
        attempts.filter((attempt) => attempt.webhook_id === event.id),
        deps.config.WEBHOOK_TIMEOUT_SECONDS,
        now,
      ),
    );
    return events.map((event, index) => ({
      webhookId: event.id,
      subjectReference: event.invoice_reference,
      event: event.event,
      status: event.status,
      callbackUrl: event.callback_url,
      createdAt: event.created_at.toISOString(),
      deliveredAt: event.delivered_at ? event.delivered_at.toISOString() : '',
      attempts: attempts
        .filter((attempt) => attempt.webhook_id === event.id)
        .map((attempt) => ({
          attempt: attempt.attempt,
          attemptedAt: attempt.attempted_at.toISOString(),
          statusCode: attempt.status_code ?? 0,
          latencyMs: attempt.latency_ms,
          error: attempt.error ?? '',
          responseBody: attempt.response_body ?? '',
        })),
      body: event.body,
      nextRetry: schedules[index]!.next,
      nextRetryAt: schedules[index]!.at?.toISOString() ?? '',
    }));
  }

  /** A payin's refundable amount now (minor units, never negative), 0 for any other kind or an unsettled payin. */
  async function refundableNow(merchant_id: string, reference: string, kind: string, status: string): Promise<bigint> {
    if (kind !== 'payin' || status !== 'success') return 0n;
    const refundable = refundableOf(await refundBasis(deps.ledger, database, reference), await merchantRefundFee(database, merchant_id));
    return refundable > 0n ? refundable : 0n;
  }

  return {
    /**
     * Opens a dashboard session. @throws DomainError LOGIN_FAILED (wrong name or password, unknown name, suspended
     * merchant: one answer), RATE_LIMITED (with retryAfterSeconds)
     */
    async signIn(request, context) {
      const address = clientAddressOf(context);
      const merchantId = await merchantIdOfApiUserName(database, request.userName);
      const attempt = await deps.abuse.beginAttempt('merchant_login', merchantId ?? request.userName, address);
      let ok: boolean;
      try {
        ok = await deps.abuse.hashing(
          () => verifyMerchantApiLogin(database, merchantId ?? NO_MERCHANT, { user_name: request.userName, password: request.password }),
          context.signal,
        );
      } catch (error) {
        await attempt.withdrawn();
        throw error;
      }
      if (!ok || !merchantId) {
        await attempt.failed();
        throw reasonError(DASHBOARD_REASONS, 'LOGIN_FAILED', 'dashboard sign-in failed');
      }
      await attempt.succeeded();
      const ttl = deps.config.DASHBOARD_SESSION_TTL_SECONDS;
      const { token, session } = await openDashboardSession(database, merchantId, ttl);
      return { sessionToken: token, expiresInSeconds: BigInt(ttl), session: sessionMessage(session) };
    },

    /** @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID */
    async signOut(request) {
      await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      await closeDashboardSession(database, request.sessionToken);
      return {};
    },

    /** @throws DomainError SESSION_INVALID */
    async getSession(request) {
      return { session: sessionMessage(await requireSession(request.sessionToken)) };
    },

    /** The merchant's wallets in USD, KHR, USDT order (minor units). @throws DomainError SESSION_INVALID */
    async getBalances(request) {
      const session = await requireSession(request.sessionToken);
      const accounts = (await deps.ledger.accountsOf('merchant', session.merchant_id)).filter((account) => account.kind === 'wallet');
      const order = (currency: string) => {
        const index = MERCHANT_WALLET_CURRENCIES.indexOf(currency as (typeof MERCHANT_WALLET_CURRENCIES)[number]);
        return index === -1 ? MERCHANT_WALLET_CURRENCIES.length : index;
      };
      accounts.sort((a, b) => order(a.currency) - order(b.currency) || a.currency.localeCompare(b.currency));
      return {
        wallets: accounts.map((account) => ({
          currency: account.currency,
          decimals: isCurrency(account.currency) ? decimalsOf(account.currency) : 0,
          balanceUnits: account.posted_units,
          availableUnits: account.available_units,
          heldUnits: account.held_units,
        })),
      };
    },

    /** @throws DomainError SESSION_INVALID; VALIDATION_FAILED on page_token */
    async listWebhookDeliveries(request) {
      const session = await requireSession(request.sessionToken);
      const afterId = afterIdOf(request.pageToken);
      if (request.status !== '' && !DELIVERY_STATUSES.includes(request.status)) throw invalidFields({ status: [problem('invalid')] });
      const { rows, more } = await merchantWebhooksPage(database, session.merchant_id, request.pageSize || DEFAULT_PAGE_SIZE, afterId, request.status || undefined);
      return {
        deliveries: await deliveriesOf(rows),
        nextPageToken: more && rows.length > 0 ? pageTokenOf(rows[rows.length - 1]!.id) : '',
      };
    },

    /** @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID, WEBHOOK_NOT_FOUND, DEADLINE_EXCEEDED */
    async redeliverWebhook(request) {
      const session = await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      const event = request.webhookId ? await findWebhookEvent(database, request.webhookId) : undefined;
      // Another merchant's delivery is answered exactly as one that does not exist.
      if (!event || event.merchant_id !== session.merchant_id) throw reasonError(DASHBOARD_REASONS, 'WEBHOOK_NOT_FOUND');
      await redeliverWebhook(deps, event.id);
      const [delivery] = await deliveriesOf([(await findWebhookEvent(database, event.id))!]);
      return { delivery };
    },

    /** @throws DomainError SESSION_INVALID */
    async getOutcomePolicy(request) {
      const session = await requireSession(request.sessionToken);
      return { policy: outcomePolicyFields(await findOutcomePolicy(database, session.merchant_id)) };
    },

    /**
     * Sets every field of the session's merchant's policy (the form sends them all; an empty refund_fee is unchanged).
     * @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID, VALIDATION_FAILED (underpaid, overpaid, late,
     *   tolerance_percent, refund_fee; nothing changed)
     */
    async setOutcomePolicy(request) {
      const session = await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      const change = checkPolicyChange({
        underpaid: request.underpaid,
        overpaid: request.overpaid,
        late: request.late,
        tolerance_percent: request.tolerancePercent,
        // Empty: unchanged (a form without the field); any other value is checked.
        refund_fee: request.refundFee || undefined,
      });
      const row = await saveOutcomePolicy(database, session.merchant_id, change, `dashboard:${session.merchant_id}`);
      deps.logger.info({ merchant_id: session.merchant_id, policy: change }, 'merchant outcome policy set on the dashboard');
      return { policy: outcomePolicyFields(row) };
    },

    /**
     * One of the merchant's payments: summary, the merchant's steps and the technical entries.
     * @throws DomainError SESSION_INVALID, PAYMENT_NOT_FOUND (unknown or another merchant's: one answer),
     *   VALIDATION_FAILED (reference)
     */
    async getPayment(request) {
      const session = await requireSession(request.sessionToken);
      const timeline = await timelineFor(deps, request.reference, { kind: 'owner', owner: { type: 'merchant', id: session.merchant_id } });
      const summary = summaryOf(timeline.entries);
      const reference = timeline.reference;
      const payer = summary.kind === 'payin' ? await latestPayerAddress(database, reference) : null;
      const refundable = await refundableNow(session.merchant_id, reference, summary.kind, summary.status);
      const message = timelineMessage(timeline);
      return {
        payment: {
          reference,
          kind: summary.kind,
          status: summary.status,
          currency: summary.currency,
          decimals: isCurrency(summary.currency) ? decimalsOf(summary.currency) : 0,
          amountUnits: summary.amount_units,
          feeUnits: summary.fee_units,
          netUnits: summary.net_units,
          paidAmountUnits: summary.paid_units ?? 0n,
          hasPaid: summary.paid_units !== undefined,
          payerAddress: payer ?? summary.payer_address,
          outTradeNo: summary.out_trade_no,
          createdAt: summary.created_at,
          settledAt: summary.settled_at,
          refunds: summary.refunds.map((refund) => ({
            refundReference: refund.refund_reference,
            amountUnits: refund.amount_units,
            status: refund.status,
            createdAt: refund.created_at,
            decidedAt: refund.decided_at,
            reason: refund.reason,
          })),
          refundableUnits: refundable,
        },
        steps: stepsOf(timeline.entries, summary),
        technical: technicalEntries(message.entries, deps.config.TEMPORAL_UI_PUBLIC),
        sources: message.sources,
        truncated: message.truncated,
      };
    },

    /**
     * Refunds one of the merchant's settled payins to the address its payer paid from (the refund flow's rules).
     * @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID, VALIDATION_FAILED (amount, reason, address: no payer
     *   address known), PAYMENT_NOT_FOUND (not the merchant's payin) and the refund flow's reasons
     *   (REFUND_PAYIN_NOT_SETTLED, REFUND_AMOUNT_EXCEEDS_REFUNDABLE, REFUND_INSUFFICIENT_BALANCE,
     *   REFUND_PROVIDER_NOT_CONFIGURED)
     */
    async refundPayment(request) {
      const session = await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      const payin = (await database('payins').where({ invoice_reference: request.reference, merchant_id: session.merchant_id }).first('invoice_reference', 'currency')) as
        | { invoice_reference: string; currency: string }
        | undefined;
      if (!payin) throw reasonError(TIMELINE_REASONS, 'PAYMENT_NOT_FOUND', 'no payin of the merchant with this reference');
      const problems: Record<string, string[]> = {};
      let amount_units: bigint | undefined;
      if (request.amount.trim() !== '') {
        try {
          amount_units = isCurrency(payin.currency) ? parseAmount(request.amount.trim(), payin.currency) : undefined;
        } catch {
          problems.amount = [problem('invalid')];
        }
      }
      const address = await latestPayerAddress(database, payin.invoice_reference);
      if (!address) problems.address = [problem('required')];
      if (!/^[\x21-\x7e]{1,100}$/.test(request.idempotencyKey)) problems.idempotency_key = [problem('invalid')];
      if (Object.keys(problems).length > 0) throw invalidFields(problems);
      const refund = await createRefund(
        deps,
        session.merchant_id,
        { invoice_reference: payin.invoice_reference, ...(amount_units !== undefined ? { amount_units } : {}), reason: request.reason, address: address! },
        `dashboard:${request.idempotencyKey}`,
      );
      deps.logger.info({ merchant_id: session.merchant_id, refund_reference: refund.refund_reference }, 'refund created on the dashboard');
      return { refundReference: refund.refund_reference, status: refund.status };
    },

    /**
     * The session's merchant's payouts (src/flows/payout), newest first, at most 100, and the payout fee shown before
     * a payout is requested (the fee schedule's `fee_payout` of the crypto channel, major units).
     * @throws DomainError SESSION_INVALID
     */
    async listPayouts(request) {
      const session = await requireSession(request.sessionToken);
      const rows = await listPayouts(database, { merchant_id: session.merchant_id, limit: 100 });
      const fee = await feePayoutOf(database, CRYPTO_PAYOUT_CHANNEL);
      const schedule = await payoutScheduleOf(deps, session.merchant_id);
      return { payouts: rows.map(dashboardPayout), payoutFee: fee?.amount ?? '', payoutFeeCurrency: fee?.currency ?? '', ...(schedule ? { schedule: dashboardSchedule(schedule) } : {}) };
    },

    /**
     * Sets the session's merchant's automatic payouts (daily or weekly; minimum and reserve in major units of USDT, an
     * empty reserve 0; a TRON address), or turns them off (`every` "off"), through the payout flow's schedule path
     * (the admin path's rules: a positive minimum, a reserve not below 0, a valid address).
     * @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID, VALIDATION_FAILED (every, minimum, reserve, address)
     */
    async setPayoutSchedule(request) {
      const session = await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      const merchant_id = session.merchant_id;
      if (request.every === 'off') {
        await removePayoutSchedule(deps, merchant_id);
        deps.logger.info({ merchant_id }, 'payout schedule turned off on the dashboard');
        return {};
      }
      const problems: Record<string, string[]> = {};
      if (request.every !== 'daily' && request.every !== 'weekly') problems.every = [problem('invalid')];
      let minimum_units = 0n;
      try {
        minimum_units = parseAmount(request.minimum.trim(), 'USDT');
      } catch {
        problems.minimum = [problem('positive')];
      }
      let reserve_units = 0n;
      try {
        reserve_units = request.reserve.trim() === '' ? 0n : parseAmount(request.reserve.trim(), 'USDT', { allowZero: true });
      } catch {
        problems.reserve = [problem('not_negative')];
      }
      const address = request.address.trim();
      if (!isTronAddress(address)) problems.address = [problem('invalid')];
      if (Object.keys(problems).length > 0) throw invalidFields(problems);
      const set = await setPayoutSchedule(deps, { merchant_id, every: request.every as PayoutSchedule['every'], minimum_units, reserve_units, address });
      deps.logger.info({ merchant_id, every: set.every }, 'payout schedule set on the dashboard');
      return { schedule: dashboardSchedule(set) };
    },

    /**
     * A crypto payout (USDT to a TRON address) through the payout flow's create path, source `dashboard`, under the
     * form's idempotency key (namespaced `dashboard:` so an API key of the same text never collides).
     * @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID, VALIDATION_FAILED (amount, address, memo,
     *   idempotency_key) and the payout flow's reasons (PAYOUT_INSUFFICIENT_BALANCE, PAYOUT_BELOW_MINIMUM,
     *   PAYOUT_ABOVE_LIMIT, PAYOUT_DAILY_LIMIT_EXCEEDED, PAYOUT_PROVIDER_NOT_CONFIGURED, PAYOUT_FEE_NOT_CONFIGURED,
     *   IDEMPOTENCY_KEY_REUSED)
     */
    async requestPayout(request) {
      const session = await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      const problems: Record<string, string[]> = {};
      let amount_units = 0n;
      try {
        amount_units = parseAmount(request.amount.trim(), 'USDT');
      } catch {
        problems.amount = [problem('invalid')];
      }
      if (!/^[\x21-\x7e]{1,100}$/.test(request.idempotencyKey)) problems.idempotency_key = [problem('invalid')];
      if (Object.keys(problems).length > 0) throw invalidFields(problems);
      const payout = await createPayout(
        deps,
        session.merchant_id,
        { amount_units, currency: 'USDT', address: request.address.trim(), memo: request.memo, source: 'dashboard' },
        `dashboard:${request.idempotencyKey}`,
      );
      deps.logger.info({ merchant_id: session.merchant_id, payout_reference: payout.payout_reference }, 'payout requested on the dashboard');
      return { payout: dashboardPayout(payout) };
    },

    /**
     * The merchant's approval or rejection of its payout awaiting approval (the payout flow records it as
     * `merchant:<merchant_id>` and audits it).
     * @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID, PAYOUT_NOT_FOUND, PAYOUT_NOT_AWAITING_APPROVAL
     */
    async decidePayout(request) {
      const session = await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      const decision = request.decision === 'approve' ? 'approve' : 'reject';
      const payout = await merchantDecidesPayout(deps, session.merchant_id, request.payoutReference, decision);
      deps.logger.info({ merchant_id: session.merchant_id, payout_reference: payout.payout_reference, decision }, 'payout decided on the dashboard');
      return { payout: dashboardPayout(payout) };
    },

    /**
     * Every posting on one of the merchant's wallets, newest first (the ledger's `entriesOf`), each with the balance it
     * left and its payment (the reference its ledger key starts with).
     * @throws DomainError SESSION_INVALID, VALIDATION_FAILED (currency: no wallet of the merchant; before: not a
     *   transaction of it)
     */
    async listBalanceTransactions(request) {
      const session = await requireSession(request.sessionToken);
      const wallet = (await deps.ledger.accountsOf('merchant', session.merchant_id)).find((account) => account.kind === 'wallet' && account.currency === request.currency);
      if (!wallet) throw invalidFields({ currency: [problem('invalid')] });
      const limit = request.pageSize || 50;
      const entries = await deps.ledger.entriesOf(wallet.id, { limit: limit + 1, ...(request.before ? { before_transaction_id: request.before } : {}) });
      const page = entries.slice(0, limit);
      return {
        currency: wallet.currency,
        decimals: isCurrency(wallet.currency) ? decimalsOf(wallet.currency) : 0,
        transactions: page.map((entry) => ({
          transactionId: entry.transaction_id,
          at: entry.created_at.toISOString(),
          amountUnits: entry.amount_units,
          balanceAfterUnits: entry.balance_after_units ?? 0n,
          description: entry.description,
          paymentReference: paymentOfLedgerKey(entry.idempotency_key),
          ledgerKey: entry.idempotency_key,
        })),
        nextBefore: entries.length > limit ? page.at(-1)!.transaction_id : '',
      };
    },

    /** @throws DomainError SESSION_INVALID */
    async getWebhookEndpoint(request) {
      const session = await requireSession(request.sessionToken);
      const merchant = await getMerchant(database, session.merchant_id);
      const state = await webhookEndpointState(database, session.merchant_id);
      // The session's merchant exists (the session joined it); a vanished one is a fault, not the caller's doing.
      if (!merchant || !state) throw reasonError(COMMON_REASONS, 'INTERNAL', 'the session\'s merchant is gone');
      return {
        callbackUrl: merchant.callback_url,
        signatureHeader: merchant.signature_header,
        headers: [merchant.signature_header, ...WEBHOOK_HEADERS],
        secretName: 'hmac_secret',
        secretIssuedAt: (state.secret_rotated_at ?? merchant.created_at).toISOString(),
        previousSecretValidUntil: state.previous_secret_until?.toISOString() ?? '',
        disabledAt: state.disabled_at?.toISOString() ?? '',
        failingSince: state.failing_since?.toISOString() ?? '',
        disableAfterSeconds: Math.round(deps.config.WEBHOOK_DISABLE_AFTER_DAYS * 86_400),
      };
    },

    /**
     * A new signing secret (answered once); the replaced one signs beside it for WEBHOOK_SECRET_OVERLAP_SECONDS.
     * @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID
     */
    async rotateWebhookSecret(request) {
      const session = await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      const rotated = await rotateMerchantHmacSecret(deps, session.merchant_id, deps.config.WEBHOOK_SECRET_OVERLAP_SECONDS);
      deps.logger.info({ merchant_id: session.merchant_id, previous_until: rotated.previous_until.toISOString() }, 'webhook signing secret rotated on the dashboard');
      return { secret: rotated.secret, previousSecretValidUntil: rotated.previous_until.toISOString() };
    },

    /**
     * A new callback URL, saved only after a signed test event to it answered 2xx.
     * @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID, VALIDATION_FAILED (callback_url: not a public http(s)
     *   URL, or the test delivery was not accepted: the test's outcome in the message)
     */
    async updateWebhookEndpoint(request) {
      const session = await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      const url = checkCallbackUrl(deps, request.callbackUrl.trim());
      const test = await sendTestWebhook(deps, session.merchant_id, url);
      if (test.error !== null) {
        throw invalidFields({ callback_url: [`the test delivery was not accepted (${test.status_code === null ? 'no answer' : `HTTP ${test.status_code}`}): nothing changed`] });
      }
      const saved = await setMerchantCallbackUrl(deps, session.merchant_id, url);
      deps.logger.info({ merchant_id: session.merchant_id }, 'webhook callback URL changed on the dashboard');
      return { callbackUrl: saved, test: testMessage(test) };
    },

    /** One signed test event to the current URL. @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID */
    async sendTestWebhook(request) {
      const session = await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      const merchant = await getMerchant(database, session.merchant_id);
      if (!merchant) throw reasonError(COMMON_REASONS, 'INTERNAL', 'the session\'s merchant is gone');
      return { test: testMessage(await sendTestWebhook(deps, session.merchant_id, merchant.callback_url)) };
    },

    /** Enables a disabled endpoint (`webhook_endpoint.enabled`). @throws DomainError SESSION_INVALID, CSRF_TOKEN_INVALID */
    async enableWebhookEndpoint(request) {
      const session = await requireSessionAndCsrf(request.sessionToken, request.csrfToken);
      await database.transaction(async (trx) => {
        if (!(await enableWebhookEndpoint(trx, session.merchant_id))) return;
        const merchant = await getMerchant(trx as unknown as typeof database, session.merchant_id);
        await recordEvent(trx, {
          owner: { type: 'merchant', id: session.merchant_id },
          subject: session.merchant_id,
          type: 'webhook_endpoint.enabled',
          data: { callback_url: merchant?.callback_url ?? null },
        });
      });
      return {};
    },

    /**
     * The merchant's payments from its own event stream (src/events `listPayments`), newest activity first.
     * @throws DomainError SESSION_INVALID; VALIDATION_FAILED naming every failing filter
     */
    async listPayments(request) {
      const session = await requireSession(request.sessionToken);
      const query = paymentsQueryOf(request);
      const page = await listPayments(database, { owner: { type: 'merchant', id: session.merchant_id }, ...query, limit: request.pageSize || DEFAULT_PAGE_SIZE });
      return {
        payments: page.payments.map((payment) => ({
          reference: payment.reference,
          kind: payment.kind,
          status: payment.status,
          amountUnits: payment.amount_units,
          currency: payment.currency,
          decimals: isCurrency(payment.currency) ? decimalsOf(payment.currency) : 0,
          createdAt: payment.created_at.toISOString(),
          updatedAt: payment.updated_at.toISOString(),
          seq: payment.seq,
          outTradeNo: payment.out_trade_no,
          feeUnits: payment.fee_units,
          netUnits: payment.net_units ?? 0n,
          hasNet: payment.net_units !== undefined,
        })),
        nextBefore: page.next_before ?? 0n,
        newerAfter: page.newer_after ?? 0n,
        kinds: [...PAYMENT_KINDS],
        statuses: paymentStatuses(),
      };
    },

    /**
     * The merchant's own events after a seq, in seq order (src/events `listEvents`).
     * @throws DomainError SESSION_INVALID; VALIDATION_FAILED naming type, subject or after
     */
    async listEvents(request) {
      const session = await requireSession(request.sessionToken);
      const query = eventsQueryOf(request);
      const page = await listEvents(database, { owner: { type: 'merchant', id: session.merchant_id }, ...query, limit: request.pageSize || DEFAULT_PAGE_SIZE });
      return {
        events: page.events.map((event) => ({
          seq: event.seq,
          type: event.type,
          subject: event.subject,
          dataJson: JSON.stringify(event.data),
          createdAt: event.created_at.toISOString(),
        })),
        hasMore: page.has_more,
        nextAfter: page.next_after,
        types: [...EVENT_TYPES],
        nextBefore: request.newestFirst && page.has_more ? page.next_after : 0n,
      };
    },
  };
}

/** A payout schedule as the dashboard shows it (amounts in minor units). */
function dashboardSchedule(schedule: PayoutSchedule) {
  return {
    every: schedule.every,
    minimumUnits: BigInt(schedule.minimum_units),
    reserveUnits: BigInt(schedule.reserve_units),
    address: schedule.address,
    scheduleId: payoutScheduleId(schedule.merchant_id),
  };
}

/** A payout as the dashboard shows it (amounts in minor units). */
function dashboardPayout(row: PayoutRow) {
  return {
    payoutReference: row.payout_reference,
    outTradeNo: row.out_trade_no ?? '',
    amountUnits: BigInt(row.amount_units),
    feeUnits: BigInt(row.fee_units),
    currency: row.currency,
    status: row.status,
    address: row.address,
    memo: row.memo,
    failureReason: row.failure_reason ?? '',
    createdAt: new Date(row.created_at).toISOString(),
    kind: row.kind,
  };
}
