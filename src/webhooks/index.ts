/**
 * Outbound webhooks (platform decisions §5): one durable, recorded, signed sender for every event the platform
 * announces to a merchant. A capability records its event inside its own database transaction
 * (`recordWebhookEvent`), then starts its delivery (`startWebhookDeliveries`, or from a workflow's activity
 * `deliverWebhooks`, which makes the first attempt itself); the WebhookDeliveryWorkflow (id = webhook id, the
 * X-Webhook-Id) retries with backoff and records every attempt. Operators list and redeliver events.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { Knex } from '../db/knex';
import { reasonError } from '../errors';
import { getMerchant } from '../onboarding/merchants';
import type { PlatformDeps } from '../platform-deps';
import { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery';
import { withRequestDeadline } from '../temporal/deadline';
import { attemptDelivery, webhookRetrySettings } from './activities';
import { WEBHOOK_REASONS, type WebhookDeliveryInput } from './contract';
import { attemptsOf, findEventForAttempt, findWebhookEvent, insertWebhookEvent, listMerchantEvents, markEventPending, type WebhookEventRow } from './store';

/** The default signature header of a merchant that configured none (payment-services-interface.md "Area B"). */
export const DEFAULT_SIGNATURE_HEADER = 'X-Signature';
const MAX_LISTED_EVENTS = 500;

export interface OutboundWebhook {
  /** Stable id: X-Webhook-Id, and the id of its delivery workflow. */
  id: string;
  merchant_id: string;
  /** The record the event is about: a payin's invoice_reference, a bank-account or preorder token (≤ 128). */
  subject_reference: string;
  event: string;
  /** The JSON body, exactly as it will be signed and sent. */
  body: string;
  /** Where to POST it: the record's own call-back URL; absent = the merchant's callback_url. */
  url?: string;
}

/**
 * Records `webhook` for delivery (to its own URL, else the merchant's callback URL) signed under the merchant's
 * HMAC secret with its signature header, inside the caller's transaction: the event exists if and only if the change
 * it announces committed. A repeat with the same id is ignored. Start its delivery after the commit with
 * `startWebhookDeliveries`.
 * @throws Error when the merchant does not exist (a programming error).
 */
export async function recordWebhookEvent(trx: Knex.Transaction, webhook: OutboundWebhook): Promise<string> {
  const merchant = await getMerchant(trx, webhook.merchant_id);
  if (!merchant) throw new Error(`merchant ${webhook.merchant_id} of webhook ${webhook.id} not found`);
  await insertWebhookEvent(trx, {
    id: webhook.id,
    merchant_id: webhook.merchant_id,
    invoice_reference: webhook.subject_reference,
    event: webhook.event,
    body: webhook.body,
    callback_url: webhook.url ?? merchant.callback_url,
    signature_header: merchant.signature_header || DEFAULT_SIGNATURE_HEADER,
  });
  return webhook.id;
}

/**
 * Starts the deliveries of events recorded by a transaction that has committed; a failure to reach Temporal is
 * logged, not thrown (the change itself stands, and the pending event is delivered by a later redelivery or by
 * reconciliation).
 */
export async function startWebhookDeliveriesAfterCommit(deps: PlatformDeps, webhook_ids: string[]): Promise<void> {
  if (webhook_ids.length === 0) return;
  try {
    await startWebhookDeliveries(deps, webhook_ids);
  } catch (error) {
    deps.logger.warn({ webhook_ids, err: (error as Error).message }, 'webhook delivery not started; left pending');
  }
}

/**
 * Starts the delivery workflow of each recorded event, unless one was ever started for it (`REJECT_DUPLICATE`: a
 * retried call never delivers twice; redelivery is an explicit operator action).
 */
export async function startWebhookDeliveries(deps: PlatformDeps, webhook_ids: string[], input: Omit<WebhookDeliveryInput, 'webhook_id'> = {}): Promise<void> {
  for (const webhook_id of webhook_ids) {
    try {
      await deps.temporal.client.workflow.start(webhookDeliveryWorkflow, {
        taskQueue: deps.temporal.taskQueue,
        workflowId: webhook_id,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        args: [{ webhook_id, ...input }],
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }
}

/**
 * Delivers recorded events from a workflow's activity: each event's first attempt is made right here (bounded by
 * WEBHOOK_INLINE_TIMEOUT_SECONDS), so an event the merchant accepts at once costs no workflow; an event whose first
 * attempt fails gets its WebhookDeliveryWorkflow, which backs off and retries (durable, visible in the Temporal UI).
 * A retried call skips delivered and failed events and hands an event already attempted to its workflow, so an
 * event is attempted inline at most once (delivery stays at least once, as every webhook's: merchants dedupe on
 * webhook-id). WEBHOOK_INLINE_FIRST_ATTEMPT=false starts every workflow instead.
 */
export async function deliverWebhooks(deps: PlatformDeps, webhook_ids: string[]): Promise<void> {
  if (!deps.config.WEBHOOK_INLINE_FIRST_ATTEMPT) return startWebhookDeliveries(deps, webhook_ids);
  const timeout_seconds = Math.min(deps.config.WEBHOOK_INLINE_TIMEOUT_SECONDS, deps.config.WEBHOOK_TIMEOUT_SECONDS);
  await Promise.all(
    webhook_ids.map(async (webhook_id) => {
      const event = await findEventForAttempt(deps.database, webhook_id);
      if (!event) throw new Error(`webhook ${webhook_id} not found`);
      if (event.status !== 'pending') return;
      if (event.last_attempt > 0) {
        return startWebhookDeliveries(deps, [webhook_id], { first_attempt_failed: true, retry: webhookRetrySettings(deps) });
      }
      const first = await attemptDelivery(deps, webhook_id, timeout_seconds, event);
      if (!first.delivered) await startWebhookDeliveries(deps, [webhook_id], { first_attempt_failed: true, retry: first.retry });
    }),
  );
}

async function deliveryRecords(deps: PlatformDeps, events: WebhookEventRow[]) {
  const attempts = await attemptsOf(
    deps.database,
    events.map((event) => event.id),
  );
  return events.map((event) => ({
    webhookId: event.id,
    merchantId: event.merchant_id,
    invoiceReference: event.invoice_reference,
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
      })),
  }));
}

/** The merchant's webhook events, newest first (at most 500), each with every delivery attempt. */
export async function listWebhookDeliveries(deps: PlatformDeps, merchant_id: string) {
  return deliveryRecords(deps, await listMerchantEvents(deps.database, merchant_id, MAX_LISTED_EVENTS));
}

/**
 * Starts a new delivery run for an event (same webhook id, attempt numbers continue). A run still retrying is left
 * alone. @throws DomainError WEBHOOK_NOT_FOUND
 */
export async function redeliverWebhook(deps: PlatformDeps, webhook_id: string) {
  const event = await findWebhookEvent(deps.database, webhook_id);
  if (!event) throw reasonError(WEBHOOK_REASONS, 'WEBHOOK_NOT_FOUND');
  const start = () =>
    deps.temporal.client.workflow.start(webhookDeliveryWorkflow, {
      taskQueue: deps.temporal.taskQueue,
      workflowId: event.id,
      args: [{ webhook_id: event.id }],
    });
  try {
    await start();
    await markEventPending(deps.database, event.id);
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    // A run is open. One that is still retrying is left alone; one whose event already ended (delivered or failed)
    // is only finishing: wait for it, then start the new run.
    if (event.status !== 'pending') {
      await withRequestDeadline(deps, () => deps.temporal.client.workflow.getHandle(event.id).result());
      await start();
      await markEventPending(deps.database, event.id);
    }
  }
  const [delivery] = await deliveryRecords(deps, [(await findWebhookEvent(deps.database, event.id))!]);
  return delivery!;
}
