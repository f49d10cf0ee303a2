/**
 * PayinService (Area B, platform decisions §4, §5, §8): the business rules of the crypto payin portal. Payins are
 * recorded with a workflow-start outbox row and forwarded upstream; status and balances are answered from the
 * database and the ledger; upstream notifications are verified, recorded once and handed to the PayinWorkflow
 * (id = invoice_reference) by reference, with Update-with-Start, within the upstream's patience (platform decisions
 * §4: it waits 10 s); what did not get through is handed over by the dispatcher (./outbox.ts).
 *
 * Errors: the reasons of PAYIN_REASONS and WEBHOOK_REASONS, UNAUTHENTICATED and VALIDATION_FAILED. The Area B
 * façade turns them into the documented messages (rest-facade/payin/contract.ts).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { randomInt } from 'node:crypto';
import { changeAwareCache } from '../../auth-changes';
import { verifyHmacSha256Hex } from '../../crypto/hmac';
import { sha256Hex } from '../../crypto/secrets';
import { COMMON_REASONS, DomainError, invalidFields, reasonError, type FieldViolations } from '../../errors';
import { CreatePayinResponseSchema, type CreatePayinRequest, type PayinService } from '../../gen/payments/payin/v1/payin_pb';
import { answerIdempotently } from '../../idempotency';
import { problem } from '../../field-problems';
import { amount, present, Problem, readFields, refuse as refuseField, text, type FieldRule } from '../../field-rules';
import { CURRENCIES, decimalsOf, isLosslessNumber, parseJsonLossless, percentOf } from '../../money';
import { findMerchantByApiKey, type Merchant } from '../../onboarding/merchants';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
import { listWebhookDeliveries, redeliverWebhook } from '../../webhooks';
import { withRequestDeadline } from '../../temporal/deadline';
import { exceedsJsonDepth } from '../../text';
import { renderQrPng } from '../../web/qr-png';
import { payinWorkflow } from '../../../workflows/payin';
import { NOTIFICATION_LIMITS, notifyUpdate, PAYIN_REASONS, type PayinNotificationInput, type PayinReason, type PayinWorkflowInput } from './contract';
import { payinWorkflowInputOf, signalPayin } from './outbox';
import {
  findLatestPayin,
  findPayin,
  findNotificationOutcome,
  insertNotification,
  insertPayinWithOutbox,
  markNotificationHanded,
  markPayinFailed,
  recordForwarded,
  releaseAbandonedForward,
  releaseHandoffs,
  setNotificationOutcome,
  settledBy,
  type PayinRow,
} from './store';
import { forwardPayin, UpstreamUnavailableError } from './upstream-client';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
/** Most API keys remembered by one process. */
const API_KEY_CACHE_MAX = 10_000;

/** `PAYIN-` + 20 random uppercase letters and digits (platform decisions §4). */
export function newInvoiceReference(): string {
  let suffix = '';
  for (let index = 0; index < 20; index += 1) suffix += ALPHABET[randomInt(ALPHABET.length)];
  return `PAYIN-${suffix}`;
}

const refuse = (reason: PayinReason, detail?: string, fields?: FieldViolations) => reasonError(PAYIN_REASONS, reason, detail, fields);
const unauthenticated = () => reasonError(COMMON_REASONS, 'UNAUTHENTICATED', 'invalid or missing API key');

/**
 * How long past UPSTREAM_TIMEOUT_SECONDS an unanswered forward still holds its out_trade_no: covers recording the
 * answer after it arrived, so only a forward whose process died is ever released.
 */
const FORWARD_MARGIN_SECONDS = 30;

/** B1's answer for a forwarded payin. */
function payinAnswer(payin: Pick<PayinRow, 'invoice_reference' | 'amount_units' | 'fee_units' | 'out_trade_no' | 'qr_content'>, qr_image: string) {
  return {
    invoiceReference: payin.invoice_reference,
    amountUnits: payin.amount_units,
    currency: 'USDT',
    feeUnits: payin.fee_units,
    qrContent: payin.qr_content ?? '',
    qrImage: qr_image,
    outTradeNo: payin.out_trade_no,
  };
}

function payinMessage(row: PayinRow) {
  return {
    invoiceReference: row.invoice_reference,
    outTradeNo: row.out_trade_no,
    amountUnits: row.amount_units,
    paidAmountUnits: row.paid_amount_units ?? 0n,
    feeUnits: row.fee_units,
    currency: row.currency,
    status: row.status,
    trxRef: row.trx_ref ?? '',
    late: row.late,
    paymentMatchStatus: row.payment_match_status ?? '',
  };
}


const USDT_AMOUNT = amount({ required: true, currency: () => 'USDT' });

/** A notification's text field: required, else any refusal is `invalid` (platform decisions §4). */
function notificationText(max: number, count: 'units' | 'code_points'): FieldRule<string> {
  const read = text({ required: true, max, count });
  return (value, context) => {
    const outcome = read(value, context);
    return outcome instanceof Problem && present(value) ? refuseField('invalid') : outcome;
  };
}

/** An upstream notification's fields (platform decisions §4), read from verified bytes. */
const NOTIFICATION = {
  invoice_reference: notificationText(NOTIFICATION_LIMITS.invoice_reference, 'units'),
  status: ((value) => (value === 'success' || value === 'close' ? value : refuseField('invalid'))) as FieldRule<'success' | 'close'>,
  // Only a success carries an amount: a JSON number of USDT (6 decimals).
  amount: ((value, context) => {
    if (context.body.status !== 'success') return 0n;
    return isLosslessNumber(value) ? USDT_AMOUNT(value, context) : refuseField('decimal');
  }) as FieldRule<bigint>,
  currency: ((value) => (value === undefined || value === 'USDT' ? 'USDT' : refuseField('invalid'))) as FieldRule<'USDT'>,
  trx_ref: notificationText(NOTIFICATION_LIMITS.trx_ref, 'code_points'),
};

/**
 * A notification's fields, read from verified bytes, before anything is recorded: a validly signed body is still
 * checked against §4's shape.
 * @throws DomainError VALIDATION_FAILED naming each refused field's problem (Area B renders them)
 */
function readNotification(signed_body: Uint8Array) {
  let body: Record<string, unknown> | undefined;
  try {
    const parsed = parseJsonLossless(Buffer.from(signed_body).toString('utf8'));
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && !exceedsJsonDepth(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    body = undefined;
  }
  if (!body) throw invalidFields({ body: [problem('json_object')] });
  const { values, problems } = readFields(NOTIFICATION, body);
  if (Object.keys(problems).length > 0) throw invalidFields(problems);
  return { invoice_reference: values.invoice_reference, status: values.status, amount_units: values.amount, trx_ref: values.trx_ref };
}

/** True when the payin already shows this notification's effect (settled by this payment, or no longer waiting). */
function shows(payin: PayinRow, notification: PayinNotification): boolean {
  return notification.status === 'close' ? payin.status !== 'waiting' : settledBy(payin, notification);
}

/** A notification's effect on its payin: a payment received, or the upstream closing the order. Minor units. */
export interface PayinNotification {
  status: 'success' | 'close';
  amount_units: bigint;
  trx_ref: string;
}

/**
 * How long an upstream notification's hand-over to Temporal may take in all, seconds: the upstream waits 10 s for the
 * answer (platform decisions §4), and the rest is for verifying, recording and the way back. Of it, the signal that
 * queues the notification when the run did not apply it in time gets NOTIFICATION_SIGNAL_SECONDS; the wait for the
 * run to apply it gets the rest at most (NOTIFICATION_APPLY_WAIT_SECONDS, capped).
 */
const NOTIFICATION_TEMPORAL_SECONDS = 6;
const NOTIFICATION_SIGNAL_SECONDS = 2;
/**
 * When the dispatcher takes over a decided notification's hand-over, seconds after the decision: after the request
 * that decided it has answered (or its process died).
 */
const NOTIFICATION_HANDOFF_AFTER_SECONDS = NOTIFICATION_TEMPORAL_SECONDS + 4;

/**
 * Hands a recorded notification to the payin's workflow and answers once the run applied it (credited or closed,
 * its webhook's first attempt made): one Update-with-Start call, so a payin whose run completed (expired, or settled
 * by another payment) gets a new run, which credits the payment late. When the run does not answer within
 * NOTIFICATION_APPLY_WAIT_SECONDS (at most 4 s: no worker polling, or far behind), the notification is queued in the
 * workflow as a signal (signal-with-start, within 2 s). Safe to repeat, and both at once are safe: the settlement
 * re-reads its authority and posts under the payment's ledger idempotency key, and the run answers a repeated payment
 * with the same webhook.
 * @throws DomainError DEADLINE_EXCEEDED when even the signal ran out of time; the Temporal client's error when the
 *   frontend cannot be reached (the caller answers; the dispatcher or the upstream's repeat re-drives it)
 */
export async function notifyPayin(deps: PlatformDeps, payin: PayinRow, notification: PayinNotification): Promise<void> {
  const wait = Math.min(deps.config.NOTIFICATION_APPLY_WAIT_SECONDS, NOTIFICATION_TEMPORAL_SECONDS - NOTIFICATION_SIGNAL_SECONDS);
  if (wait > 0) {
    const workflow = { taskQueue: deps.temporal.taskQueue, workflowId: payin.invoice_reference, args: [payinWorkflowInputOf(deps, payin)] as [PayinWorkflowInput] };
    const payment = { amount_units: notification.amount_units.toString(), trx_ref: notification.trx_ref };
    const input: PayinNotificationInput = notification.status === 'success' ? { status: 'success', ...payment } : { status: 'close', trx_ref: payment.trx_ref };
    // An open run takes the notification; a closed one (expired, settled) is followed by a new run.
    const startWorkflowOperation = new WithStartWorkflowOperation(payinWorkflow, { ...workflow, workflowIdConflictPolicy: 'USE_EXISTING' });
    try {
      const outcome = await withRequestDeadline(
        deps,
        () => deps.temporal.client.workflow.executeUpdateWithStart(notifyUpdate, { args: [input], startWorkflowOperation }),
        wait,
      );
      if (outcome.refused) deps.logger.warn({ invoice_reference: payin.invoice_reference, reason: outcome.refused }, 'payin workflow refused a recorded notification');
      return;
    } catch (error) {
      if (!(error instanceof DomainError && error.reason === 'DEADLINE_EXCEEDED')) throw error;
      deps.logger.warn({ invoice_reference: payin.invoice_reference }, 'payin workflow did not apply a notification in time; queued as a signal');
    }
  }
  await withRequestDeadline(deps, () => signalPayin(deps, payin, notification), NOTIFICATION_SIGNAL_SECONDS);
}

/**
 * Hands a decided notification to its workflow (notifyPayin) and records that it got there.
 * @throws what notifyPayin throws (the hand-over stays due: the dispatcher re-drives it)
 */
export async function handOverNotification(deps: PlatformDeps, payin: PayinRow, idempotency_key: string, notification: PayinNotification): Promise<void> {
  await notifyPayin(deps, payin, notification);
  await markNotificationHanded(deps.database, idempotency_key);
}

/**
 * handOverNotification for a request that must answer in time: a hand-over that fails (Temporal unreachable, or
 * slower than the upstream's patience) is left to the dispatcher, woken now. @returns whether it got through
 */
async function handOverInTime(deps: PlatformDeps, payin: PayinRow, idempotency_key: string, notification: PayinNotification): Promise<boolean> {
  try {
    await handOverNotification(deps, payin, idempotency_key, notification);
    return true;
  } catch (error) {
    deps.logger.warn({ invoice_reference: payin.invoice_reference, err: (error as Error).message }, 'notification recorded but not handed to its workflow; the dispatcher hands it over');
    await releaseHandoffs(deps.database, [idempotency_key]).catch(() => undefined);
    deps.payinOutbox?.wake();
    return false;
  }
}

/** Whether a notification applies to its payin: money received is never dropped; a close applies only while waiting. */
function appliesTo(payin: PayinRow, notification: PayinNotification): boolean {
  return notification.status === 'success' || payin.status === 'waiting';
}

/**
 * Decides a recorded notification (outcome still `received`) and acts on it: money received is never dropped, so a
 * success applies to any live payin, even one settled by another payment (credited as an additional payment); a
 * close only to a waiting one. Used by reconciliation, for a notification whose process died before this.
 * @returns true when it applies (and its workflow handled it)
 * @throws what notifyPayin throws (the outcome stays `applied` and its hand-over due: the dispatcher re-drives it)
 */
export async function applyRecordedNotification(deps: PlatformDeps, payin: PayinRow, idempotency_key: string, notification: PayinNotification): Promise<boolean> {
  const applies = appliesTo(payin, notification);
  await setNotificationOutcome(deps.database, idempotency_key, applies ? 'applied' : 'ignored', NOTIFICATION_HANDOFF_AFTER_SECONDS);
  if (applies) await handOverNotification(deps, payin, idempotency_key, notification);
  return applies;
}

export function createPayinService(deps: PlatformDeps): ServiceImpl<typeof PayinService> {
  /**
   * Active merchants by SHA-256 of their API key, for AUTH_CACHE_SECONDS (this service's own cache). Only active
   * merchants are kept: an unknown or suspended key is looked up every time; a suspension announced through
   * `authChanges` empties the cache at once.
   */
  const apiKeys = changeAwareCache<Merchant>(deps.authChanges, { ttlSeconds: deps.config.AUTH_CACHE_SECONDS, max: API_KEY_CACHE_MAX });
  const merchantOfApiKey = (api_key: string) =>
    apiKeys.get(sha256Hex(api_key), () => findMerchantByApiKey(deps.database, api_key), (merchant) => merchant.status === 'active');

  /**
   * The merchant owning `api_key`. Unknown keys are counted per key and per client address (src/abuse): past the
   * limit the address's next unknown keys answer RATE_LIMITED; a verified merchant's calls count against its
   * request rate.
   * @throws UNAUTHENTICATED (unknown or missing key), MERCHANT_SUSPENDED, RATE_LIMITED
   */
  async function authenticate(api_key: string, context: HandlerContext): Promise<Merchant> {
    const merchant = api_key ? await merchantOfApiKey(api_key) : undefined;
    if (!merchant) {
      // A key is 256 random bits: only a wrong one is counted (a valid key is no guess), and an address past its
      // failures gets RATE_LIMITED instead of another "unknown key". Only a digest of the key names it.
      const address = clientAddressOf(context);
      const credential = sha256Hex(api_key).slice(0, 32);
      await (await deps.abuse.beginAttempt('api_key', credential, address)).failed();
      throw unauthenticated();
    }
    if (merchant.status !== 'active') throw refuse('MERCHANT_SUSPENDED');
    await deps.abuse.consumeRequest(`merchant:${merchant.id}`);
    return merchant;
  }

  /**
   * B1 for an authenticated merchant: records the payin with its outbox row, forwards it, answers its QR.
   *
   * The recorded payin holds its out_trade_no only while its forward can still answer (UPSTREAM_TIMEOUT_SECONDS plus
   * a margin): a process that died mid-forward leaves a payin that a retry then marks failed and replaces (platform
   * decisions §4: a failed forward does not hold the key). A duplicate of a forwarded payin stays 422 as the
   * interface documents; a retry that must get the first answer sends an Idempotency-Key.
   */
  async function createPayin(merchant: Merchant, request: CreatePayinRequest, ownKey: string | undefined) {
    const upstreamUrl = deps.config.UPSTREAM_PAYIN_URL;
    if (!upstreamUrl) throw refuse('UPSTREAM_NOT_CONFIGURED', 'no upstream payin server', { upstream: ['not configured'] });
    const out_trade_no = request.outTradeNo;
    const invoice_reference = newInvoiceReference();
    const amount_units = request.amountUnits;
    const fee_units = percentOf(amount_units, merchant.payin_fee_percent);
    const taken = () => refuse('OUT_TRADE_NO_TAKEN', 'out_trade_no held by a live payin', { out_trade_no: [problem('taken', 'out trade no')] });
    const record = () =>
      // The payin and its workflow-start outbox row commit together: a committed payin always gets its
      // PayinWorkflow, and B1 does not wait for Temporal.
      insertPayinWithOutbox(deps.database, {
        invoice_reference,
        merchant_id: merchant.id,
        out_trade_no,
        amount_units,
        fee_units,
        payin_fee_percent: merchant.payin_fee_percent,
        currency: 'USDT',
        memo: request.memo ?? null,
        expires_at: new Date(Date.now() + deps.config.PAYIN_TTL_SECONDS * 1000),
        forwarding_until: new Date(Date.now() + (deps.config.UPSTREAM_TIMEOUT_SECONDS + FORWARD_MARGIN_SECONDS) * 1000),
        request_key: ownKey ?? null,
      });
    try {
      await record();
    } catch (error) {
      // The unique index payins_merchant_out_trade_no_live owns "taken".
      if ((error as { code?: string }).code !== '23505') throw error;
      // This request ran before under the same Idempotency-Key, and its process died after the upstream answered but
      // before the answer was kept: the payin is this request's own, answered again.
      const holder = ownKey ? await findLatestPayin(deps.database, merchant.id, out_trade_no) : undefined;
      if (holder && holder.request_key === ownKey && holder.qr_content) {
        return payinAnswer(holder, holder.qr_image ?? (await renderQrPng(holder.qr_content)).toString('base64'));
      }
      if (!(await releaseAbandonedForward(deps.database, merchant.id, out_trade_no))) throw taken();
      deps.logger.warn({ merchant_id: merchant.id, out_trade_no }, 'released an abandoned payin forward');
      try {
        await record();
      } catch (retryError) {
        if ((retryError as { code?: string }).code === '23505') throw taken();
        throw retryError;
      }
    }
    let answer;
    try {
      answer = await forwardPayin(upstreamUrl, request.upstreamBody, {
        api_key: deps.config.UPSTREAM_API_KEY,
        invoice_reference,
        notify_url: `${deps.config.PUBLIC_BASE_URL}/api/v1/upstream/notifications`,
        timeout_seconds: deps.config.UPSTREAM_TIMEOUT_SECONDS,
      });
    } catch (error) {
      await markPayinFailed(deps.database, invoice_reference, (error as Error).message);
      if (error instanceof UpstreamUnavailableError) {
        deps.logger.warn({ invoice_reference, err: error.message }, 'upstream payin server unavailable');
        throw refuse('UPSTREAM_UNAVAILABLE');
      }
      deps.logger.error({ invoice_reference, err: error }, 'payin forwarding failed');
      throw refuse('PAYIN_FAILED', 'payin forwarding failed');
    }
    deps.payinOutbox?.wake();
    try {
      const qr_image = answer.qr_image ?? (await renderQrPng(answer.qr_content)).toString('base64');
      await recordForwarded(deps.database, invoice_reference, { qr_content: answer.qr_content, trx_ref: answer.trx_ref ?? null, qr_image });
      return payinAnswer({ invoice_reference, amount_units, fee_units, out_trade_no, qr_content: answer.qr_content }, qr_image);
    } catch (error) {
      await markPayinFailed(deps.database, invoice_reference, (error as Error).message).catch(() => undefined);
      deps.logger.error({ invoice_reference, err: error }, 'payin creation failed after forwarding');
      throw refuse('PAYIN_FAILED', 'payin creation failed');
    }
  }

  async function currentStatus(payin: PayinRow): Promise<string> {
    return (await findPayin(deps.database, payin.invoice_reference))?.status ?? payin.status;
  }

  return {
    async authenticateApiKey(request, context) {
      await authenticate(request.apiKey, context);
      return {};
    },

    async createPayin(request, context) {
      const merchant = await authenticate(request.apiKey, context);
      // A retry with the same Idempotency-Key answers the first payin (its QR included) instead of a "taken" 422.
      return answerIdempotently(
        deps.idempotency,
        {
          scope: `merchant:${merchant.id}`,
          key: request.idempotencyKey,
          operation: 'area-b.create_payin',
          parameters: [request.amountUnits, request.currency, request.memo ?? null, request.outTradeNo],
        },
        CreatePayinResponseSchema,
        (ownKey) => createPayin(merchant, request, ownKey),
      );
    },

    async getPayinStatus(request, context) {
      const merchant = await authenticate(request.apiKey, context);
      const row = await findLatestPayin(deps.database, merchant.id, request.outTradeNo);
      if (!row) throw refuse('PAYIN_NOT_FOUND');
      return { payin: payinMessage(row) };
    },

    async getBalances(request, context) {
      const merchant = await authenticate(request.apiKey, context);
      const accounts = (await deps.ledger.accountsOf('merchant', merchant.id)).filter((account) => account.kind === 'wallet');
      accounts.sort((a, b) => CURRENCIES.indexOf(a.currency) - CURRENCIES.indexOf(b.currency));
      return {
        wallets: accounts.map((account) => ({
          currency: account.currency,
          availableUnits: account.available_units,
          postedUnits: account.posted_units,
          decimals: decimalsOf(account.currency),
        })),
      };
    },

    /**
     * Verifies `X-Upstream-Signature`, records the notification once (key: invoice, status, trx_ref, amount) and
     * hands it to the PayinWorkflow with Update-with-Start (a success after expiry starts a new run that credits it
     * late), answering once the run handled it: `applied: true` with the payin's status after it. While Temporal
     * cannot be reached the recorded notification is answered as accepted (`applied: true`, the payin's status
     * unchanged) within NOTIFICATION_TEMPORAL_SECONDS, and the dispatcher hands it over once Temporal is back. Repeats
     * and no-longer-applicable notifications answer `applied: false` and change nothing.
     */
    async applyUpstreamNotification(request) {
      const secret = deps.config.UPSTREAM_WEBHOOK_SECRET;
      if (!secret || !verifyHmacSha256Hex(secret, request.signedBody, request.signature)) {
        throw refuse('UPSTREAM_SIGNATURE_INVALID', 'invalid upstream signature');
      }
      const notification = readNotification(request.signedBody);
      const { invoice_reference, status, amount_units, trx_ref } = notification;
      const payin = await findPayin(deps.database, invoice_reference);
      if (!payin || payin.status === 'failed') throw refuse('PAYIN_NOT_FOUND');
      const idempotency_key = `${invoice_reference}|${status}|${trx_ref}|${amount_units}`;
      const recorded = await insertNotification(deps.database, {
        idempotency_key,
        invoice_reference,
        status,
        amount_units: status === 'success' ? amount_units : null,
        trx_ref: trx_ref || null,
        raw_body: Buffer.from(request.signedBody).toString('utf8'),
      });
      const outcome = recorded ? 'received' : await findNotificationOutcome(deps.database, idempotency_key);
      if (outcome === 'ignored') return { applied: false, invoiceReference: invoice_reference, status: payin.status };
      if (outcome === 'applied') {
        // A repeat of an applied notification changes nothing, but it may never have reached the workflow (Temporal
        // down, or this process died after the commit): re-drive it while the payin does not show it.
        if (!shows(payin, notification)) await handOverInTime(deps, payin, idempotency_key, notification);
        return { applied: false, invoiceReference: invoice_reference, status: await currentStatus(payin) };
      }
      const applies = appliesTo(payin, notification);
      // Decided and committed before Temporal is called: from here on the notification is the upstream's recorded
      // word, applied by this request or, when Temporal cannot take it in time, by the dispatcher.
      await setNotificationOutcome(deps.database, idempotency_key, applies ? 'applied' : 'ignored', NOTIFICATION_HANDOFF_AFTER_SECONDS);
      if (!applies) return { applied: false, invoiceReference: invoice_reference, status: payin.status };
      await handOverInTime(deps, payin, idempotency_key, notification);
      // The run has handled it (or it is queued): the status answered is the payin's own, read after the fact.
      return { applied: true, invoiceReference: invoice_reference, status: await currentStatus(payin) };
    },

    async listWebhookDeliveries(request) {
      if (!request.merchantId) throw invalidFields({ merchant_id: [problem('required')] });
      return { deliveries: await listWebhookDeliveries(deps, request.merchantId) };
    },

    async redeliverWebhook(request) {
      return { delivery: await redeliverWebhook(deps, request.webhookId) };
    },
  };
}
