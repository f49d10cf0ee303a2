import { condition, defineSignal, ParentClosePolicy, proxyLocalActivities, setHandler, startChild } from '@temporalio/workflow';
import type { Activities } from '../src/activities';
import { webhookDeliveryWorkflow } from './webhook-delivery';

// Local activities: short database transactions, recorded with the workflow task (fewer Temporal round trips).
const { settlePayin, expirePayin, closePayin } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export interface PayinWorkflowInput {
  invoice_reference: string;
  /** PAYIN_TTL_SECONDS at creation. */
  ttl_seconds: number;
}

/** The upstream reported the payment (amount in USDT minor units, as a decimal string). */
export const settledSignal = defineSignal<[{ amount_units: string; trx_ref: string }]>('settled');
/** The upstream closed (cancelled) the payin. */
export const closedSignal = defineSignal<[{ trx_ref: string }]>('closed');

/**
 * PayinWorkflow (issue 5, platform decisions §4), id = invoice_reference. Waits in `waiting` until a `settled`
 * signal, a `closed` signal or the PAYIN_TTL_SECONDS timer, applies the transition through one activity (the
 * settlement credits the paid amount and charges the fee in one ledger transaction) and starts the
 * WebhookDeliveryWorkflow of the resulting event (abandoned child, id = webhook id).
 *
 * A success that arrives after expiry reaches a new run of this workflow through signal-with-start; the
 * settlement activity then marks it late and still credits it.
 */
export async function payinWorkflow(input: PayinWorkflowInput): Promise<{ outcome: string; webhook_ids: string[] }> {
  let settled: { amount_units: string; trx_ref: string } | undefined;
  let closed: { trx_ref: string } | undefined;
  setHandler(settledSignal, (payment) => {
    settled ??= payment;
  });
  setHandler(closedSignal, (closing) => {
    closed ??= closing;
  });
  const webhook_ids: string[] = [];
  let outcome = 'expired';
  const signalled = await condition(() => settled !== undefined || closed !== undefined, input.ttl_seconds * 1000);
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
  for (const webhook_id of webhook_ids) {
    await startChild(webhookDeliveryWorkflow, {
      workflowId: webhook_id,
      args: [{ webhook_id }],
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
  }
  return { outcome, webhook_ids };
}
