import { ActivityFailure, ApplicationFailure, condition, ParentClosePolicy, patched, proxyLocalActivities, setHandler, startChild } from '@temporalio/workflow';
import {
  closedSignal,
  settledSignal,
  WEBHOOK_START_BY_ACTIVITY,
  type PayinActivities,
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

/** Every message the run received, in arrival order. */
interface Messages {
  settlements: SettledSignalInput[];
  closed: { trx_ref: string } | undefined;
}

/** The reason an activity refused for good, or undefined for anything else. */
function refusalOf(error: unknown): string | undefined {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure && cause.nonRetryable ? (cause.type ?? 'REFUSED') : undefined;
}

/**
 * PayinWorkflow (platform decisions §4), id = invoice_reference. Waits in `waiting` until a `settled` signal, a
 * `closed` signal or the expiry timer (to `expires_at`, else PAYIN_TTL_SECONDS), applies each transition through one
 * local activity (the settlement credits the paid amount and charges the fee in one ledger transaction, after
 * re-reading its authority, the applied upstream notification, from the database) and starts the
 * WebhookDeliveryWorkflow of each resulting event (id = webhook id) from another; they outlive this workflow.
 *
 * No message is dropped: after every await the run looks again at what arrived meanwhile, and it completes only when
 * every settlement, close and webhook start has been handled (quiescent). A settlement the activity refuses (no
 * applied notification with that amount and trx_ref) moves nothing and the payin keeps waiting. A success that
 * arrives after the run completed reaches a new run through signal-with-start; the settlement is credited late.
 */
export async function payinWorkflow(input: PayinWorkflowInput): Promise<PayinWorkflowResult> {
  const messages: Messages = { settlements: [], closed: undefined };
  setHandler(settledSignal, (payment) => {
    messages.settlements.push(payment);
  });
  setHandler(closedSignal, (closing) => {
    messages.closed ??= closing;
  });
  if (!patched(DRAIN_ALL_MESSAGES)) return legacyPayinRun(input, messages);

  // Workflow time (Date.now() is deterministic here). At least 1 ms: a run started after the deadline (late start,
  // or a late success through signal-with-start) still takes the signals of its first task before expiring.
  const deadline_ms = input.expires_at ? Date.parse(input.expires_at) : Date.now() + input.ttl_seconds * 1000;
  const webhook_ids: string[] = [];
  let settlementsHandled = 0;
  let closeHandled = false;
  let deliveriesStarted = 0;
  let outcome: 'waiting' | 'success' | 'close' | 'expired' = 'waiting';
  const record = (webhook_id: string | null) => {
    if (webhook_id && !webhook_ids.includes(webhook_id)) webhook_ids.push(webhook_id);
  };
  const unhandled = () => settlementsHandled < messages.settlements.length || (messages.closed !== undefined && !closeHandled);

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
      const payment = messages.settlements[settlementsHandled++]!;
      try {
        const settled = await settlePayin({ invoice_reference: input.invoice_reference, ...payment });
        record(settled.webhook_id);
        if (settled.webhook_id) outcome = 'success';
      } catch (error) {
        // A settlement without its recorded notification (a forged or replayed signal): nothing moved; keep going.
        if (refusalOf(error) === undefined) throw error;
      }
      continue;
    }
    if (messages.closed !== undefined && !closeHandled) {
      closeHandled = true;
      if (outcome === 'waiting') {
        const closed = await closePayin({ invoice_reference: input.invoice_reference });
        record(closed.webhook_id);
        if (closed.webhook_id) outcome = 'close';
      }
      continue;
    }
    if (deliveriesStarted < webhook_ids.length) {
      const batch = webhook_ids.slice(deliveriesStarted);
      deliveriesStarted = webhook_ids.length;
      await startWebhookDeliveries({ webhook_ids: batch });
      continue;
    }
    if (outcome !== 'waiting') break;
  }
  return { outcome, webhook_ids };
}

/**
 * The run of histories recorded before DRAIN_ALL_MESSAGES: it reads each message once, so it replays exactly as
 * they were recorded. New runs never take this path.
 */
async function legacyPayinRun(input: PayinWorkflowInput, messages: Messages): Promise<PayinWorkflowResult> {
  const settledNow = () => messages.settlements[0];
  const closedNow = () => messages.closed;
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
