import { ActivityFailure, allHandlersFinished, ApplicationFailure, condition, ParentClosePolicy, patched, proxyLocalActivities, setHandler, startChild } from '@temporalio/workflow';
import {
  closedSignal,
  notifyUpdate,
  settledSignal,
  WEBHOOK_START_BY_ACTIVITY,
  type PayinActivities,
  type PayinNotificationOutcome,
  type PayinReason,
  type PayinWorkflowInput,
  type PayinWorkflowResult,
  type SettledSignalInput,
} from '../src/flows/payin/contract';
import { webhookDeliveryWorkflow } from './webhook-delivery';

// Local activities: short database transactions, recorded with the workflow task (fewer Temporal round trips).
const { settlePayin, expirePayin, closePayin, startWebhookDeliveries } = proxyLocalActivities<PayinActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Patch id: the run handles every message until it is quiescent (histories recorded before it replay as they were). */
export const DRAIN_ALL_MESSAGES = 'payin-drain-all-messages';

/** Every message the run received, in arrival order, and what the run did with each (same index). */
interface Messages {
  settlements: SettledSignalInput[];
  closes: Array<{ trx_ref: string }>;
  settled: PayinNotificationOutcome[];
  closed: PayinNotificationOutcome[];
  /** Webhook events whose delivery the run has made (first attempt) or handed to their delivery workflow. */
  delivered: Set<string>;
}

/** The reason an activity refused for good, or undefined for anything else. */
function refusalOf(error: unknown): PayinReason | undefined {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure && cause.nonRetryable ? ((cause.type ?? 'SETTLEMENT_NOT_AUTHORIZED') as PayinReason) : undefined;
}

/**
 * PayinWorkflow (platform decisions §4), id = invoice_reference. Waits in `waiting` until a notification (the
 * `notify` Update, answered once the run handled it; or a `settled` / `closed` signal) or the expiry timer (to `expires_at`, else PAYIN_TTL_SECONDS), applies each transition through one
 * local activity (the settlement credits the paid amount and charges the fee in one ledger transaction, after
 * re-reading its authority, the applied upstream notification, from the database) and starts the
 * WebhookDeliveryWorkflow of each resulting event (id = webhook id) from another; they outlive this workflow.
 *
 * No message is dropped: after every await the run looks again at what arrived meanwhile, and it completes only when
 * every settlement, close and webhook start has been handled (quiescent). No message is authority (docs/security.md
 * "Temporal messages"): a settlement the activity refuses (no applied notification with that amount and trx_ref) or
 * a close it refuses (no applied close notification) moves nothing and the payin keeps waiting; a later close is
 * still handled after a refused one. A success that
 * arrives after the run completed reaches a new run through Update-with-Start (or signal-with-start); the settlement
 * is credited late.
 */
export async function payinWorkflow(input: PayinWorkflowInput): Promise<PayinWorkflowResult> {
  const messages: Messages = { settlements: [], closes: [], settled: [], closed: [], delivered: new Set() };
  // An Update is answered once its outcome is recorded and its webhook delivered or handed to its workflow.
  const answered = (outcome: PayinNotificationOutcome | undefined) => outcome !== undefined && (outcome.webhook_id === null || messages.delivered.has(outcome.webhook_id));
  setHandler(settledSignal, (payment) => {
    messages.settlements.push(payment);
  });
  setHandler(closedSignal, (closing) => {
    messages.closes.push(closing);
  });
  // Runs recorded before DRAIN_ALL_MESSAGES take a notification as its signal and answer at once (they never record
  // outcomes); every new run answers once the notification is handled.
  const drains = patched(DRAIN_ALL_MESSAGES);
  setHandler(notifyUpdate, async (notification) => {
    if (notification.status === 'success') {
      const index = messages.settlements.push({ amount_units: notification.amount_units, trx_ref: notification.trx_ref }) - 1;
      if (!drains) return { webhook_id: null };
      await condition(() => answered(messages.settled[index]));
      return messages.settled[index]!;
    }
    const index = messages.closes.push({ trx_ref: notification.trx_ref }) - 1;
    if (!drains) return { webhook_id: null };
    await condition(() => answered(messages.closed[index]));
    return messages.closed[index]!;
  });
  if (!drains) return legacyPayinRun(input, messages);

  // Workflow time (Date.now() is deterministic here). At least 1 ms: a run started after the deadline (late start,
  // or a late success through signal-with-start) still takes the signals of its first task before expiring.
  const deadline_ms = input.expires_at ? Date.parse(input.expires_at) : Date.now() + input.ttl_seconds * 1000;
  const webhook_ids: string[] = [];
  let settlementsHandled = 0;
  let closesHandled = 0;
  // Whether a close reached closePayin and was not refused: later closes then have nothing to do. (Runs recorded
  // before closes could be refused handled only their first close; none of theirs was ever refused.)
  let closeAccepted = false;
  let deliveriesStarted = 0;
  let outcome: 'waiting' | 'success' | 'close' | 'expired' = 'waiting';
  const record = (webhook_id: string | null) => {
    if (webhook_id && !webhook_ids.includes(webhook_id)) webhook_ids.push(webhook_id);
  };
  const unhandled = () => settlementsHandled < messages.settlements.length || closesHandled < messages.closes.length;

  for (;;) {
    if (outcome === 'waiting' && !unhandled()) {
      const arrived = await condition(unhandled, Math.max(1, deadline_ms - Date.now()));
      if (!arrived) {
        const expired = await expirePayin({ invoice_reference: input.invoice_reference });
        record(expired.webhook_id);
        outcome = 'expired';
      }
      continue;
    }
    if (settlementsHandled < messages.settlements.length) {
      const index = settlementsHandled++;
      const payment = messages.settlements[index]!;
      try {
        const settled = await settlePayin({ invoice_reference: input.invoice_reference, ...payment });
        record(settled.webhook_id);
        if (settled.webhook_id) outcome = 'success';
        messages.settled[index] = settled;
      } catch (error) {
        // A settlement without its recorded notification (a forged or replayed signal): nothing moved; keep going.
        const refused = refusalOf(error);
        if (refused === undefined) throw error;
        messages.settled[index] = { webhook_id: null, refused };
      }
      continue;
    }
    if (closesHandled < messages.closes.length) {
      const index = closesHandled++;
      let closed: PayinNotificationOutcome = { webhook_id: null };
      if (outcome === 'waiting' && !closeAccepted) {
        try {
          closed = await closePayin({ invoice_reference: input.invoice_reference, trx_ref: messages.closes[index]!.trx_ref });
          closeAccepted = true;
          record(closed.webhook_id);
          if (closed.webhook_id) outcome = 'close';
        } catch (error) {
          // A close without its recorded notification (a forged message): nothing changed; keep waiting.
          const refused = refusalOf(error);
          if (refused === undefined) throw error;
          closed = { webhook_id: null, refused };
        }
      }
      messages.closed[index] = closed;
      continue;
    }
    if (deliveriesStarted < webhook_ids.length) {
      const batch = webhook_ids.slice(deliveriesStarted);
      deliveriesStarted = webhook_ids.length;
      await startWebhookDeliveries({ webhook_ids: batch });
      for (const webhook_id of batch) messages.delivered.add(webhook_id);
      continue;
    }
    if (outcome !== 'waiting') {
      // Every Update is answered before the run completes; a message that arrives meanwhile is handled above.
      if (allHandlersFinished()) break;
      await condition(() => allHandlersFinished() || unhandled());
    }
  }
  return { outcome, webhook_ids };
}

/**
 * The run of histories recorded before DRAIN_ALL_MESSAGES: it reads each message once, so it replays exactly as
 * they were recorded. New runs never take this path.
 */
async function legacyPayinRun(input: PayinWorkflowInput, messages: Messages): Promise<PayinWorkflowResult> {
  const settledNow = () => messages.settlements[0];
  const closedNow = () => messages.closes[0];
  const webhook_ids: string[] = [];
  let outcome = 'expired';
  // Workflow time (Date.now() is deterministic here). At least 1 ms: a run started after the deadline (late start,
  // or a late success through signal-with-start) still takes the signals of its first task before expiring.
  const wait_ms = input.expires_at ? Math.max(1, Date.parse(input.expires_at) - Date.now()) : input.ttl_seconds * 1000;
  const signalled = await condition(() => settledNow() !== undefined || closedNow() !== undefined, wait_ms);
  if (!signalled) {
    const expired = await expirePayin({ invoice_reference: input.invoice_reference });
    if (expired.webhook_id) webhook_ids.push(expired.webhook_id);
  }
  const settled = settledNow();
  const closed = closedNow();
  // A success signal that raced with the expiry timer is still credited (late) in this run.
  if (settled) {
    outcome = 'success';
    const result = await settlePayin({ invoice_reference: input.invoice_reference, ...settled });
    if (result.webhook_id) webhook_ids.push(result.webhook_id);
  } else if (closed && signalled) {
    outcome = 'close';
    const result = await closePayin({ invoice_reference: input.invoice_reference });
    if (result.webhook_id) webhook_ids.push(result.webhook_id);
  }
  if (webhook_ids.length > 0) {
    if (patched(WEBHOOK_START_BY_ACTIVITY)) {
      // One client start per event from a local activity: no child-started event, no extra workflow task.
      await startWebhookDeliveries({ webhook_ids });
    } else {
      // Runs whose history already started the deliveries as children (before the patch) replay this way.
      for (const webhook_id of webhook_ids) {
        await startChild(webhookDeliveryWorkflow, {
          workflowId: webhook_id,
          args: [{ webhook_id }],
          parentClosePolicy: ParentClosePolicy.ABANDON,
        });
      }
    }
  }
  return { outcome, webhook_ids };
}
