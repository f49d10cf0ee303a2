import { ActivityFailure, allHandlersFinished, ApplicationFailure, condition, log, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import {
  closedSignal,
  NOTIFICATION_LIMITS,
  notifyUpdate,
  settledSignal,
  type PayinActivities,
  type PayinNotificationInput,
  type PayinNotificationOutcome,
  type PayinReason,
  type PayinWorkflowInput,
  type PayinWorkflowResult,
  type SettledSignalInput,
} from '../src/flows/payin/contract';
import { upsertPaymentStatus } from './search-attributes';

// Local activities: short database transactions, recorded with the workflow task (fewer Temporal round trips).
const { settlePayin, expirePayin, closePayin, startWebhookDeliveries, startRefunds } = proxyLocalActivities<PayinActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

type PayinOutcome = 'waiting' | 'success' | 'close' | 'expired';

/** One run's state: every message it received, in arrival order, and what it did with each (same index). */
interface PayinRun {
  readonly input: PayinWorkflowInput;
  /** Workflow time (ms since the epoch) the payin expires at. */
  readonly deadline_ms: number;
  readonly settlements: SettledSignalInput[];
  readonly closes: Array<{ trx_ref: string }>;
  readonly settled: PayinNotificationOutcome[];
  readonly closed: PayinNotificationOutcome[];
  settlementsHandled: number;
  closesHandled: number;
  /** A close reached closePayin and was not refused: later closes have nothing to do. */
  closeAccepted: boolean;
  /** Every webhook event of the run, in order; the first `deliveriesStarted` were handed to startWebhookDeliveries. */
  readonly webhook_ids: string[];
  deliveriesStarted: number;
  /** Refunds the settlements' outcome policy recorded, in order; the first `refundsStarted` were handed to startRefunds. */
  readonly refund_references: string[];
  refundsStarted: number;
  outcome: PayinOutcome;
}

/** An amount in minor units as the platform writes it: a canonical decimal that fits PostgreSQL's bigint. */
const CANONICAL_UNITS = /^(0|[1-9][0-9]{0,18})$/;
const MAX_UNITS = 9223372036854775807n;

function isUnits(value: unknown): value is string {
  return typeof value === 'string' && CANONICAL_UNITS.test(value) && BigInt(value) <= MAX_UNITS;
}

/** A trx_ref within the notification's limit (in characters, as the service counts it). */
function isTrxRef(value: unknown): value is string {
  return typeof value === 'string' && [...value].length <= NOTIFICATION_LIMITS.trx_ref;
}

/**
 * Whether a message has the shape the platform sends. Anyone who reaches Temporal can send any payload; a malformed
 * one must not reach an activity, where it would fail retryably forever (a non-decimal amount) and hold up every
 * later message, or spell one recorded amount another way ('06000000', '0x5B8D80') than the payment's ledger key.
 */
function isSettlement(message: unknown): message is SettledSignalInput {
  const payment = message as Partial<SettledSignalInput> | undefined;
  return isUnits(payment?.amount_units) && isTrxRef(payment?.trx_ref);
}

function isClose(message: unknown): message is { trx_ref: string } {
  return isTrxRef((message as { trx_ref?: unknown } | undefined)?.trx_ref);
}

/** The reason an activity refused for good, or undefined for anything else. */
function refusalOf(error: unknown): PayinReason | undefined {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure && cause.nonRetryable ? ((cause.type ?? 'SETTLEMENT_NOT_AUTHORIZED') as PayinReason) : undefined;
}

function unhandled(run: PayinRun): boolean {
  return run.settlementsHandled < run.settlements.length || run.closesHandled < run.closes.length;
}

/** An Update is answered once its outcome is recorded and its webhook delivered or handed to its workflow. */
function answered(run: PayinRun, outcome: PayinNotificationOutcome | undefined): outcome is PayinNotificationOutcome {
  return outcome !== undefined && (outcome.webhook_id === null || run.webhook_ids.indexOf(outcome.webhook_id) < run.deliveriesStarted);
}

function recordWebhook(run: PayinRun, webhook_id: string | null): void {
  if (webhook_id && !run.webhook_ids.includes(webhook_id)) run.webhook_ids.push(webhook_id);
}

/**
 * The `notify` Update, the `settled` and `closed` signals (the hand-over when the Update did not get through) and
 * their with-Start forms: each queues its message; the Update answers once the run handled it.
 */
function takeMessages(run: PayinRun): void {
  setHandler(settledSignal, (payment) => {
    if (isSettlement(payment)) run.settlements.push({ amount_units: payment.amount_units, trx_ref: payment.trx_ref });
    else log.warn('payin settled signal ignored: malformed', { invoice_reference: run.input.invoice_reference });
  });
  setHandler(closedSignal, (closing) => {
    if (isClose(closing)) run.closes.push({ trx_ref: closing.trx_ref });
    else log.warn('payin closed signal ignored: malformed', { invoice_reference: run.input.invoice_reference });
  });
  setHandler(
    notifyUpdate,
    async (notification) => {
      const [queue, outcomes] =
        notification.status === 'success'
          ? [() => run.settlements.push({ amount_units: notification.amount_units, trx_ref: notification.trx_ref }), run.settled]
          : [() => run.closes.push({ trx_ref: notification.trx_ref }), run.closed];
      const index = queue() - 1;
      await condition(() => answered(run, outcomes[index]));
      return outcomes[index]!;
    },
    {
      validator: (notification: PayinNotificationInput) => {
        const wellFormed = notification?.status === 'success' ? isSettlement(notification) : notification?.status === 'close' && isClose(notification);
        if (!wellFormed) {
          const reason: PayinReason = notification?.status === 'close' ? 'CLOSE_NOT_AUTHORIZED' : 'SETTLEMENT_NOT_AUTHORIZED';
          throw ApplicationFailure.nonRetryable('malformed payin notification', reason);
        }
      },
    },
  );
}

/** Settles the oldest settlement not handled yet; a refused one (no applied notification) moves nothing. */
async function settleNext(run: PayinRun): Promise<void> {
  const index = run.settlementsHandled++;
  try {
    const settled = await settlePayin({ invoice_reference: run.input.invoice_reference, ...run.settlements[index]! });
    recordWebhook(run, settled.webhook_id);
    for (const reference of settled.refund_references ?? []) if (!run.refund_references.includes(reference)) run.refund_references.push(reference);
    if (settled.webhook_id) run.outcome = 'success';
    run.settled[index] = { webhook_id: settled.webhook_id };
  } catch (error) {
    // A settlement without its recorded notification (a forged or replayed message): nothing moved; keep going.
    const refused = refusalOf(error);
    if (refused === undefined) throw error;
    run.settled[index] = { webhook_id: null, refused };
  }
}

/** Closes a waiting payin on the oldest close not handled yet; after an accepted close, later ones do nothing. */
async function closeNext(run: PayinRun): Promise<void> {
  const index = run.closesHandled++;
  let closed: PayinNotificationOutcome = { webhook_id: null };
  if (run.outcome === 'waiting' && !run.closeAccepted) {
    try {
      closed = await closePayin({ invoice_reference: run.input.invoice_reference, trx_ref: run.closes[index]!.trx_ref });
      run.closeAccepted = true;
      recordWebhook(run, closed.webhook_id);
      if (closed.webhook_id) run.outcome = 'close';
    } catch (error) {
      // A close without its recorded notification (a forged message): nothing changed; keep waiting.
      const refused = refusalOf(error);
      if (refused === undefined) throw error;
      closed = { webhook_id: null, refused };
    }
  }
  run.closed[index] = closed;
}

/** Hands every webhook event recorded since the last call to startWebhookDeliveries. */
async function deliverNew(run: PayinRun): Promise<void> {
  const batch = run.webhook_ids.slice(run.deliveriesStarted);
  await startWebhookDeliveries({ webhook_ids: batch });
  run.deliveriesStarted += batch.length;
}

/** Hands every policy refund recorded since the last call to startRefunds (their RefundWorkflows start). */
async function startNewRefunds(run: PayinRun): Promise<void> {
  const batch = run.refund_references.slice(run.refundsStarted);
  await startRefunds({ refund_references: batch });
  run.refundsStarted += batch.length;
}

/** Waits for a message or the expiry; at the expiry, the payin expires. */
async function waitForMessageOrExpiry(run: PayinRun): Promise<void> {
  // At least 1 ms: a run started after the deadline (late start, or a late success with-Start) still takes the
  // messages of its first task before expiring.
  if (await condition(() => unhandled(run), Math.max(1, run.deadline_ms - Date.now()))) return;
  const expired = await expirePayin({ invoice_reference: run.input.invoice_reference });
  recordWebhook(run, expired.webhook_id);
  run.outcome = 'expired';
}

/**
 * Takes the run's next step: the oldest settlement, then the oldest close, then the new webhooks' deliveries, then
 * the policy refunds' starts, then the wait while the payin is waiting.
 * @returns true once the run is over and quiescent (every Update answered)
 */
async function step(run: PayinRun): Promise<boolean> {
  if (run.settlementsHandled < run.settlements.length) await settleNext(run);
  else if (run.closesHandled < run.closes.length) await closeNext(run);
  else if (run.deliveriesStarted < run.webhook_ids.length) await deliverNew(run);
  else if (run.refundsStarted < run.refund_references.length) await startNewRefunds(run);
  else if (run.outcome === 'waiting') await waitForMessageOrExpiry(run);
  else if (allHandlersFinished()) return true;
  // An Update still waits for its answer: a message may arrive meanwhile, and is handled before the run completes.
  else await condition(() => allHandlersFinished() || unhandled(run));
  return false;
}

/**
 * PayinWorkflow (platform decisions §4), id = invoice_reference. Waits in `waiting` until a notification (the
 * `notify` Update, answered once the run handled it; or a `settled` / `closed` signal) or the expiry timer (to
 * `expires_at`, else `ttl_seconds`), applies each transition through one local activity (the settlement credits the
 * paid amount and charges the fee in one ledger transaction, after re-reading its authority, the applied upstream
 * notification, from the database) and hands each resulting webhook event to another (its first attempt, then its
 * WebhookDeliveryWorkflow, which outlives this one).
 *
 * No message is dropped: after every step the run looks again at what arrived meanwhile, and it completes only when
 * every settlement, close and webhook delivery has been handled (quiescent). No message is authority (docs/security.md
 * "Temporal messages"): a settlement the activity refuses (no applied notification with that amount and trx_ref) or a
 * close it refuses (no applied close notification) moves nothing and the payin keeps waiting; a later close is still
 * handled after a refused one; a malformed message never reaches an activity. A success that arrives after the run
 * completed reaches a new run through Update-with-Start (or signal-with-start); the settlement is credited late.
 *
 * Search attributes: PaymentKind `payin` and PaymentStatus, the outcome, upserted as it changes.
 */
export async function payinWorkflow(input: PayinWorkflowInput): Promise<PayinWorkflowResult> {
  const run: PayinRun = {
    input,
    // Workflow time (Date.now() is deterministic here).
    deadline_ms: input.expires_at ? Date.parse(input.expires_at) : Date.now() + input.ttl_seconds * 1000,
    settlements: [],
    closes: [],
    settled: [],
    closed: [],
    settlementsHandled: 0,
    closesHandled: 0,
    closeAccepted: false,
    webhook_ids: [],
    deliveriesStarted: 0,
    refund_references: [],
    refundsStarted: 0,
    outcome: 'waiting',
  };
  takeMessages(run);
  for (;;) {
    // PaymentStatus follows the outcome (waiting, then success, close or expired): looked at before each step, an
    // upsert only when it changed, in the workflow task of the step that changed it.
    upsertPaymentStatus('payin', run.outcome);
    if (await step(run)) break;
  }
  return { outcome: run.outcome, webhook_ids: run.webhook_ids };
}
