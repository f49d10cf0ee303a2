import { condition, ParentClosePolicy, patched, proxyLocalActivities, setHandler, startChild } from '@temporalio/workflow';
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

/**
 * PayinWorkflow (platform decisions §4), id = invoice_reference. Waits in `waiting` until a `settled`
 * signal, a `closed` signal or the expiry timer (to `expires_at`, else PAYIN_TTL_SECONDS), applies the transition
 * through one activity (the settlement credits the paid amount and charges the fee in one ledger transaction) and
 * starts the WebhookDeliveryWorkflow of the resulting event (id = webhook id) from a second local activity; it
 * outlives this workflow.
 *
 * A success that arrives after expiry reaches a new run of this workflow through signal-with-start; the
 * settlement activity then marks it late and still credits it.
 */
export async function payinWorkflow(input: PayinWorkflowInput): Promise<PayinWorkflowResult> {
  let settled: SettledSignalInput | undefined;
  let closed: { trx_ref: string } | undefined;
  setHandler(settledSignal, (payment) => {
    settled ??= payment;
  });
  setHandler(closedSignal, (closing) => {
    closed ??= closing;
  });
  const webhook_ids: string[] = [];
  let outcome = 'expired';
  // Workflow time (Date.now() is deterministic here). At least 1 ms: a run started after the deadline (late start,
  // or a late success through signal-with-start) still takes the signals of its first task before expiring.
  const wait_ms = input.expires_at ? Math.max(1, Date.parse(input.expires_at) - Date.now()) : input.ttl_seconds * 1000;
  const signalled = await condition(() => settled !== undefined || closed !== undefined, wait_ms);
  if (!signalled) {
    const expired = await expirePayin({ invoice_reference: input.invoice_reference });
    if (expired.webhook_id) webhook_ids.push(expired.webhook_id);
  }
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
