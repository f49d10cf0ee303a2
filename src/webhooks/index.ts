/**
 * Outbound webhooks (platform decisions §5, docs/webhooks.md): one durable, recorded, signed sender for every event
 * the platform announces to a merchant. Every webhook is produced from its event: `recordWebhookEvent` writes the
 * event (src/events, the merchant's next `seq`) and the webhook that carries it, inside the transaction of the change
 * they announce. Its delivery starts after the commit (`startWebhookDeliveries`, or from a workflow's activity
 * `deliverWebhooks`, which makes the first attempt itself when the webhook's turn has come); the
 * WebhookDeliveryWorkflow (id = webhook id, the X-Webhook-Id) waits for its turn, retries with backoff and records
 * every attempt.
 *
 * Order: for one merchant and subject, webhook N+1 is not delivered before webhook N was delivered or given up
 * (its run waits for its turn); different subjects never wait on each other. Operators list and redeliver webhooks,
 * one or every one of a merchant after an event seq.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { Knex } from '../db/knex';
import { reasonError } from '../errors';
import { eventRowOf, recordEvent, type EventType } from '../events';
import { getMerchant } from '../onboarding/merchants';
import type { PlatformDeps } from '../platform-deps';
import { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery';
import { withRequestDeadline } from '../temporal/deadline';
import { attemptDelivery, webhookRetrySettings } from './activities';
import { retryDelaySeconds, WEBHOOK_REASONS } from './contract';
import {
  attemptsOf,
  findEventForAttempt,
  findWebhookEvent,
  insertWebhookEvent,
  listMerchantEvents,
  insertWebhookWithEvent,
  markEventPending,
  merchantWebhooksAfter,
  type WebhookEventRow,
} from './store';

export { EVENT_SEQ_HEADER } from './activities';

/** The default signature header of a merchant that configured none (payment-services-interface.md "Area B"). */
export const DEFAULT_SIGNATURE_HEADER = 'X-Signature';
const MAX_LISTED_EVENTS = 500;
/** Most webhooks one `redeliverAfter` call sends again. */
export const REDELIVER_MAX = 500;

/** PlatformDeps.benchFloor: set by bench/events.ts only. */
type BenchFloor = PlatformDeps['benchFloor'];

export interface OutboundWebhook {
  /** Stable id: X-Webhook-Id, and the id of its delivery workflow. */
  id: string;
  merchant_id: string;
  /** The payment (or record) the event is about: its public reference (≤ 128), the event's subject. */
  subject_reference: string;
  /** The event's type, also X-Webhook-Event. */
  event: EventType;
  /** The JSON body, exactly as it will be signed and sent. */
  body: string;
  /** Where to POST it: the record's own call-back URL; absent = the merchant's callback_url; null = nowhere (the event only). */
  url?: string | null;
  /** The event's data (docs/events.md); absent: the body's JSON object. */
  data?: Record<string, unknown>;
  /** The ledger transaction the change wrote, when money moved. */
  ledger_transaction_id?: string | null;
}

/**
 * Records `webhook`'s event (owner: the merchant, with its next `seq`) and the webhook produced from it, for delivery
 * to its own URL, else the merchant's callback URL, signed under the merchant's HMAC secret with its signature
 * header, inside the caller's transaction: both exist if and only if the change they announce committed. A webhook
 * id recorded before writes nothing (a replayed change announces nothing twice). Call it as the transaction's last
 * write (the event locks the merchant's sequence until the commit). Start its delivery after the commit with
 * `startWebhookDeliveries`. With `url: null` (a record without a call-back URL) only the event is written.
 * @returns the webhook id (null with `url: null`)
 * @throws Error when the merchant does not exist (a programming error).
 */
export async function recordWebhookEvent(trx: Knex.Transaction, webhook: OutboundWebhook & { url: null }): Promise<null>;
export async function recordWebhookEvent(trx: Knex.Transaction, webhook: OutboundWebhook & { url?: string }, floor?: BenchFloor): Promise<string>;
export async function recordWebhookEvent(trx: Knex.Transaction, webhook: OutboundWebhook, floor?: BenchFloor): Promise<string | null>;
export async function recordWebhookEvent(trx: Knex.Transaction, webhook: OutboundWebhook, floor?: BenchFloor): Promise<string | null> {
  const event = {
    owner: { type: 'merchant' as const, id: webhook.merchant_id },
    subject: webhook.subject_reference,
    type: webhook.event,
    data: webhook.data ?? (JSON.parse(webhook.body) as Record<string, unknown>),
    ledger_transaction_id: webhook.ledger_transaction_id ?? null,
  };
  if (webhook.url === null) {
    await recordEvent(trx, event);
    return null;
  }
  if (floor?.eventsOff) return recordWithoutEvent(trx, webhook);
  const written = await insertWebhookWithEvent(trx, eventRowOf(event), {
    id: webhook.id,
    merchant_id: webhook.merchant_id,
    invoice_reference: webhook.subject_reference,
    event: webhook.event,
    body: webhook.body,
    url: webhook.url ?? null,
    default_header: DEFAULT_SIGNATURE_HEADER,
  });
  if (!written.merchant_found) throw new Error(`merchant ${webhook.merchant_id} of webhook ${webhook.id} not found`);
  return webhook.id;
}

/** The bench's floor only (PlatformDeps.benchFloor): the webhook recorded as it was before events, without one. */
async function recordWithoutEvent(trx: Knex.Transaction, webhook: OutboundWebhook): Promise<string> {
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
    event_seq: null,
  });
  return webhook.id;
}

/**
 * Starts the deliveries of events recorded by a transaction that has committed; a failure to reach Temporal is
 * logged, not thrown (the change itself stands, and the pending event is delivered by a later redelivery or by
 * reconciliation's `webhook_stalled` repair).
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
 * retried call never delivers twice; redelivery is an explicit operator action). Each run waits for its turn.
 */
export async function startWebhookDeliveries(deps: PlatformDeps, webhook_ids: string[], options: { first_attempt_failed?: boolean } = {}): Promise<void> {
  for (const webhook_id of webhook_ids) {
    try {
      await deps.temporal.client.workflow.start(webhookDeliveryWorkflow, {
        taskQueue: deps.temporal.taskQueue,
        workflowId: webhook_id,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        args: [{ webhook_id, retry: webhookRetrySettings(deps), ...(options.first_attempt_failed ? { first_attempt_failed: true } : {}) }],
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }
}

/**
 * Delivers recorded events from a workflow's activity, in the order given (their subject's order): an event whose
 * turn has come (no earlier webhook of its subject pending) gets its first attempt right here (bounded by
 * WEBHOOK_INLINE_TIMEOUT_SECONDS), so an event the merchant accepts at once costs no workflow; any other event, and
 * one whose first attempt fails, gets its WebhookDeliveryWorkflow, which waits for its turn, backs off and retries
 * (durable, visible in the Temporal UI). A retried call skips delivered and failed events and hands an event already
 * attempted to its workflow, so an event is attempted inline at most once (delivery stays at least once, as every
 * webhook's: merchants dedupe on webhook-id). WEBHOOK_INLINE_FIRST_ATTEMPT=false starts every workflow instead.
 */
export async function deliverWebhooks(deps: PlatformDeps, webhook_ids: string[]): Promise<void> {
  if (!deps.config.WEBHOOK_INLINE_FIRST_ATTEMPT) return startWebhookDeliveries(deps, webhook_ids);
  const timeout_seconds = Math.min(deps.config.WEBHOOK_INLINE_TIMEOUT_SECONDS, deps.config.WEBHOOK_TIMEOUT_SECONDS);
  // One after the other: an event's turn depends on the one before it.
  for (const webhook_id of webhook_ids) {
    const event = await findEventForAttempt(deps.database, webhook_id);
    if (!event) throw new Error(`webhook ${webhook_id} not found`);
    if (event.status !== 'pending') continue;
    if (event.last_attempt > 0) {
      await startWebhookDeliveries(deps, [webhook_id], { first_attempt_failed: true });
      continue;
    }
    if (event.pending_predecessor) {
      await startWebhookDeliveries(deps, [webhook_id]);
      continue;
    }
    const next_retry_seconds = retryDelaySeconds(webhookRetrySettings(deps), undefined, 0);
    const first = await attemptDelivery(deps, webhook_id, { timeout_seconds, next_retry_seconds, read: event });
    if (!first.delivered) await startWebhookDeliveries(deps, [webhook_id], { first_attempt_failed: true });
  }
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
    eventSeq: event.event_seq ?? 0n,
    attempts: attempts
      .filter((attempt) => attempt.webhook_id === event.id)
      .map((attempt) => ({
        attempt: attempt.attempt,
        attemptedAt: attempt.attempted_at.toISOString(),
        statusCode: attempt.status_code ?? 0,
        latencyMs: attempt.latency_ms,
        error: attempt.error ?? '',
        nextRetryAt: attempt.next_retry_at ? attempt.next_retry_at.toISOString() : '',
      })),
  }));
}

/** The merchant's webhook events, newest first (at most 500), each with every delivery attempt. */
export async function listWebhookDeliveries(deps: PlatformDeps, merchant_id: string) {
  return deliveryRecords(deps, await listMerchantEvents(deps.database, merchant_id, MAX_LISTED_EVENTS));
}

/**
 * Starts a new delivery run of a recorded event (same webhook id, attempt numbers continue): marked pending first,
 * then its run started, which waits for its turn. A run still retrying is left alone; one whose event already ended
 * is only finishing: waited for, then the new run starts.
 */
async function startNewRun(deps: PlatformDeps, event: WebhookEventRow): Promise<void> {
  const wasPending = event.status === 'pending';
  if (!wasPending) await markEventPending(deps.database, event.id);
  const start = () =>
    deps.temporal.client.workflow.start(webhookDeliveryWorkflow, {
      taskQueue: deps.temporal.taskQueue,
      workflowId: event.id,
      args: [{ webhook_id: event.id, retry: webhookRetrySettings(deps) }],
    });
  try {
    await start();
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    if (wasPending) return;
    await withRequestDeadline(deps, () => deps.temporal.client.workflow.getHandle(event.id).result());
    await start();
  }
}

/**
 * Starts a new delivery run for an event (same webhook id, attempt numbers continue; it waits for its turn). A run
 * still retrying is left alone. @throws DomainError WEBHOOK_NOT_FOUND
 */
export async function redeliverWebhook(deps: PlatformDeps, webhook_id: string) {
  const event = await findWebhookEvent(deps.database, webhook_id);
  if (!event) throw reasonError(WEBHOOK_REASONS, 'WEBHOOK_NOT_FOUND');
  await startNewRun(deps, event);
  const [delivery] = await deliveryRecords(deps, [(await findWebhookEvent(deps.database, event.id))!]);
  return delivery!;
}

/**
 * Sends again every webhook produced from the merchant's events after `after_seq` (at most REDELIVER_MAX, in seq
 * order): each gets a new run (see redeliverWebhook), which waits for its turn, so each subject's webhooks go out in
 * order. @returns the webhook ids sent again, and the last event seq among them (0 when none)
 */
export async function redeliverAfter(deps: PlatformDeps, merchant_id: string, after_seq: bigint): Promise<{ webhook_ids: string[]; last_seq: bigint; has_more: boolean }> {
  const rows = await merchantWebhooksAfter(deps.database, merchant_id, after_seq, REDELIVER_MAX + 1);
  const chosen = rows.slice(0, REDELIVER_MAX);
  // Every one is pending before any run starts: a later webhook's run then finds its earlier ones pending and waits.
  for (const row of chosen) if (row.status !== 'pending') await markEventPending(deps.database, row.id);
  for (const row of chosen) await startNewRun(deps, { ...row, status: row.status === 'pending' ? 'pending' : 'delivered' });
  return { webhook_ids: chosen.map((row) => row.id), last_seq: chosen.at(-1)?.event_seq ?? 0n, has_more: rows.length > chosen.length };
}
