/**
 * The upstream's payin notifications (platform decisions §4; docs/payins.md "Workflow start and notification
 * hand-over"): B4 takes a body whose `X-Upstream-Signature` the upstream's door verified (src/upstream
 * notifications.ts, which hands a payin's notification here), reads the notification with its field rules, records it once,
 * decides whether it applies, and hands it to the payin's workflow (Update-with-Start, within the upstream's
 * patience; the run's start input and its signal-with-start are built here, and the dispatcher uses them too);
 * what did not get through is handed over by the dispatcher (./outbox.ts). Reconciliation decides a recorded
 * notification whose process died with `applyRecordedNotification`.
 */
import { WithStartWorkflowOperation } from '@temporalio/client';
import { DomainError, invalidFields, reasonError } from '../../errors';
import { problem } from '../../field-problems';
import { amount, present, Problem, readFields, refuse as refuseField, text, type FieldRule } from '../../field-rules';
import { isLosslessNumber, parseJsonObject } from '../../money';
import type { Config } from '../../config';
import type { PlatformDeps } from '../../platform-deps';
import { requestDeadlineSeconds, withRequestDeadline } from '../../temporal/deadline';
import { paymentSearchAttributes } from '../../temporal/search-attributes';
import { payinWorkflow } from '../../../workflows/payin';
import { closedSignal, NOTIFICATION_LIMITS, notifyUpdate, PAYER_ADDRESS, PAYIN_REASONS, settledSignal, type PayinNotificationInput, type PayinWorkflowInput } from './contract';
import type { UpstreamNotificationAnswer, VerifiedUpstreamBody } from '../../upstream/notifications';
import {
  findNotificationOutcome,
  findPayin,
  insertNotification,
  markNotificationHanded,
  releaseHandoffs,
  setNotificationOutcome,
  settledBy,
  type PayinRow,
} from './store';

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
  // Optional: the payer's TRON address, where an outcome policy's refund goes (docs/payins.md "Settlement").
  payer_address: ((value) =>
    value === undefined || value === null ? undefined : typeof value === 'string' && PAYER_ADDRESS.test(value) ? value : refuseField('invalid')) as FieldRule<
    string | undefined
  >,
};

/** The JSON object of an upstream body (numbers read losslessly, depth bounded), else undefined. */
const bodyObject = (signed_body: Uint8Array) => parseJsonObject(Buffer.from(signed_body).toString('utf8'));

/**
 * A notification's fields, read from verified bytes, before anything is recorded: a validly signed body is still
 * checked against §4's shape.
 * @throws DomainError VALIDATION_FAILED naming each refused field's problem (Area B renders them)
 */
function readNotification(signed_body: Uint8Array) {
  const body = bodyObject(signed_body);
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
 * A payin's search attributes and static summary from its workflow's start: owner, kind, amount, currency, the
 * merchant's order id (`out_trade_no`), status `waiting`.
 */
export function payinSearchAttributes(payin: { merchant_id: string; amount_units: bigint | string; currency: string; out_trade_no: string }) {
  return paymentSearchAttributes({
    owner: { merchant_id: payin.merchant_id },
    kind: 'payin',
    amount_units: BigInt(payin.amount_units),
    currency: payin.currency,
    status: 'waiting',
    order_id: payin.out_trade_no,
  });
}

/** Input of the PayinWorkflow of a payin: the expiry timer runs to `expires_at`. */
export function payinWorkflowInputOf(
  deps: Pick<PlatformDeps, 'config'>,
  row: { invoice_reference: string; expires_at?: Date | null },
): PayinWorkflowInput {
  return {
    invoice_reference: row.invoice_reference,
    ttl_seconds: deps.config.PAYIN_TTL_SECONDS,
    ...(row.expires_at ? { expires_at: row.expires_at.toISOString() } : {}),
  };
}

/**
 * Queues a recorded notification in its payin's workflow as a signal (`settled` or `closed`; signal-with-start, so
 * a payin whose run completed gets a new run). Amount in minor units. Call it within a deadline.
 * @throws the Temporal client's error
 */
export async function signalPayin(
  deps: Pick<PlatformDeps, 'config' | 'temporal'>,
  payin: { invoice_reference: string; expires_at?: Date | null; merchant_id: string; amount_units: bigint | string; currency: string; out_trade_no: string },
  notification: { status: 'success' | 'close'; amount_units: bigint; trx_ref: string },
): Promise<void> {
  // A run this starts carries the same search attributes as one the outbox starts.
  const workflow = {
    taskQueue: deps.temporal.taskQueue,
    workflowId: payin.invoice_reference,
    args: [payinWorkflowInputOf(deps, payin)] as [PayinWorkflowInput],
    ...payinSearchAttributes(payin),
  };
  if (notification.status === 'success') {
    await deps.temporal.client.workflow.signalWithStart(payinWorkflow, {
      ...workflow,
      signal: settledSignal,
      signalArgs: [{ amount_units: notification.amount_units.toString(), trx_ref: notification.trx_ref }],
    });
  } else {
    await deps.temporal.client.workflow.signalWithStart(payinWorkflow, { ...workflow, signal: closedSignal, signalArgs: [{ trx_ref: notification.trx_ref }] });
  }
}

/**
 * A notification's two Temporal steps, seconds: the wait for its run to apply it, then the signal that queues it.
 * Both fit NOTIFICATION_TEMPORAL_SECONDS and the request's own Temporal deadline (requestDeadlineSeconds: a
 * REQUEST_TIMEOUT_SECONDS below 8 leaves less than 6), else the caller's deadline would end the request before the
 * signal could queue the notification.
 */
export function notificationBudget(config: Pick<Config, 'NOTIFICATION_APPLY_WAIT_SECONDS' | 'REQUEST_TIMEOUT_SECONDS'>): { wait_seconds: number; signal_seconds: number } {
  const budget = Math.min(NOTIFICATION_TEMPORAL_SECONDS, requestDeadlineSeconds(config));
  const signal_seconds = Math.min(NOTIFICATION_SIGNAL_SECONDS, budget / 2);
  return { wait_seconds: Math.min(config.NOTIFICATION_APPLY_WAIT_SECONDS, budget - signal_seconds), signal_seconds };
}

/**
 * Hands a recorded notification to the payin's workflow and answers once the run applied it (credited or closed,
 * its webhook's first attempt made): one Update-with-Start call, so a payin whose run completed (expired, or settled
 * by another payment) gets a new run, which credits the payment late. When the run does not answer within
 * NOTIFICATION_APPLY_WAIT_SECONDS (at most 4 s: no worker polling, or far behind), the notification is queued in the
 * workflow as a signal (signal-with-start, within 2 s); both together within the request's Temporal deadline
 * (requestDeadlineSeconds), which shortens each when REQUEST_TIMEOUT_SECONDS is short. Safe to repeat, and both at once are safe: the settlement
 * re-reads its authority and posts under the payment's ledger idempotency key, and the run answers a repeated payment
 * with the same webhook.
 * @throws DomainError DEADLINE_EXCEEDED when even the signal ran out of time; the Temporal client's error when the
 *   frontend cannot be reached (the caller answers; the dispatcher or the upstream's repeat re-drives it)
 */
export async function notifyPayin(deps: PlatformDeps, payin: PayinRow, notification: PayinNotification): Promise<void> {
  const { wait_seconds: wait, signal_seconds } = notificationBudget(deps.config);
  if (wait > 0) {
    const workflow = { taskQueue: deps.temporal.taskQueue, workflowId: payin.invoice_reference, args: [payinWorkflowInputOf(deps, payin)] as [PayinWorkflowInput] };
    const payment = { amount_units: notification.amount_units.toString(), trx_ref: notification.trx_ref };
    const input: PayinNotificationInput = notification.status === 'success' ? { status: 'success', ...payment } : { status: 'close', trx_ref: payment.trx_ref };
    // An open run takes the notification; a closed one (expired, settled) is followed by a new run.
    const startWorkflowOperation = new WithStartWorkflowOperation(payinWorkflow, { ...workflow, workflowIdConflictPolicy: 'USE_EXISTING', ...payinSearchAttributes(payin) });
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
  await withRequestDeadline(deps, () => signalPayin(deps, payin, notification), signal_seconds);
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

/** The payin's status as it is now (after its workflow handled a notification). */
async function currentStatus(deps: PlatformDeps, payin: PayinRow): Promise<string> {
  return (await findPayin(deps.database, payin.invoice_reference))?.status ?? payin.status;
}

/**
 * Applies a payin's notification whose signature the upstream's door verified: records it once (key: invoice,
 * status, trx_ref, amount) and hands it to the PayinWorkflow with Update-with-Start (a success after expiry starts a
 * new run that credits it late), answering once the run handled it: `applied: true` with the payin's status after
 * it. While Temporal cannot be reached the recorded notification is answered as accepted (`applied: true`, the
 * payin's status unchanged) within NOTIFICATION_TEMPORAL_SECONDS, and the dispatcher hands it over once Temporal is
 * back. Repeats and no-longer-applicable notifications answer `applied: false` and change nothing.
 * @throws DomainError VALIDATION_FAILED (the notification's fields), PAYIN_NOT_FOUND
 */
export async function applyPayinNotification(deps: PlatformDeps, body: VerifiedUpstreamBody): Promise<UpstreamNotificationAnswer> {
  const notification = readNotification(body);
  const { invoice_reference, status, amount_units, trx_ref } = notification;
  const payin = await findPayin(deps.database, invoice_reference);
  if (!payin || payin.status === 'failed') throw reasonError(PAYIN_REASONS, 'PAYIN_NOT_FOUND');
  const idempotency_key = `${invoice_reference}|${status}|${trx_ref}|${amount_units}`;
  const recorded = await insertNotification(deps.database, {
    idempotency_key,
    invoice_reference,
    status,
    amount_units: status === 'success' ? amount_units : null,
    trx_ref: trx_ref || null,
    raw_body: Buffer.from(body).toString('utf8'),
  });
  const outcome = recorded ? 'received' : await findNotificationOutcome(deps.database, idempotency_key);
  if (outcome === 'ignored') return { applied: false, invoiceReference: invoice_reference, status: payin.status };
  if (outcome === 'applied') {
    // A repeat of an applied notification changes nothing, but it may never have reached the workflow (Temporal
    // down, or this process died after the commit): re-drive it while the payin does not show it.
    if (!shows(payin, notification)) await handOverInTime(deps, payin, idempotency_key, notification);
    return { applied: false, invoiceReference: invoice_reference, status: await currentStatus(deps, payin) };
  }
  const applies = appliesTo(payin, notification);
  // Decided and committed before Temporal is called: from here on the notification is the upstream's recorded
  // word, applied by this request or, when Temporal cannot take it in time, by the dispatcher.
  await setNotificationOutcome(deps.database, idempotency_key, applies ? 'applied' : 'ignored', NOTIFICATION_HANDOFF_AFTER_SECONDS);
  if (!applies) return { applied: false, invoiceReference: invoice_reference, status: payin.status };
  await handOverInTime(deps, payin, idempotency_key, notification);
  // The run has handled it (or it is queued): the status answered is the payin's own, read after the fact.
  return { applied: true, invoiceReference: invoice_reference, status: await currentStatus(deps, payin) };
}
