/**
 * The WebhookDeliveryWorkflow's activities (platform decisions §5, docs/webhooks.md): whose turn it is, one signed
 * delivery attempt, recorded; and the final "failed" mark with its event. Attempt numbers continue across every run
 * of one event (X-Webhook-Attempt 1, 2, …). A webhook that ends (delivered or given up) tells the next pending
 * webhook of its subject, so that one's run stops waiting.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { request } from 'undici';
import { hmacSha256Hex, standardWebhookSignature } from '../crypto/hmac';
import { recordEvent } from '../events';
import { merchantHmacSecret } from '../onboarding/merchants';
import type { PlatformDeps } from '../platform-deps';
import { predecessorSettledSignal, type WebhookAttemptResult, type WebhookDeliveryActivities, type WebhookRetrySettings } from './contract';
import {
  findEventForAttempt,
  findPendingPredecessor,
  findPendingSuccessor,
  markEventFailed,
  recordAttempt,
  type EventForAttempt,
  type WebhookEventRow,
} from './store';
import { OutboundRefusedError } from '../web/outbound';

const MAX_ERROR_LENGTH = 500;

/** The header carrying the `seq` of the event a webhook was produced from (docs/webhooks.md). */
export const EVENT_SEQ_HEADER = 'webhook-event-seq';

/** How an operator reads a failed attempt of each kind of event in the log. */
function describe(event: string): string {
  if (event === 'bank_account.activated') return 'bank account activation call_back';
  if (event.startsWith('preorder.')) return 'preorder call_back';
  return 'webhook';
}

/** The retry settings of every WebhookDeliveryWorkflow, seconds. */
export function webhookRetrySettings(deps: Pick<PlatformDeps, 'config'>): WebhookRetrySettings {
  return {
    initial_seconds: deps.config.WEBHOOK_RETRY_INITIAL_SECONDS,
    max_interval_seconds: deps.config.WEBHOOK_RETRY_MAX_INTERVAL_SECONDS,
    window_seconds: deps.config.WEBHOOK_RETRY_WINDOW_SECONDS,
  };
}

/**
 * Tells the next pending webhook of `event`'s subject (or `successor`, when the caller found it) that its turn may
 * have come (its run waits for this signal, and rechecks on a timer without it). A run not started yet checks when
 * it starts; a failed signal is logged only.
 */
export async function nudgeSuccessor(
  deps: PlatformDeps,
  event: Pick<WebhookEventRow, 'merchant_id' | 'invoice_reference' | 'event_seq'>,
  found?: string | null,
): Promise<void> {
  const successor = found === undefined ? await findPendingSuccessor(deps.database, event) : found;
  if (!successor) return;
  try {
    await deps.temporal.client.workflow.getHandle(successor).signal(predecessorSettledSignal);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) deps.logger.warn({ webhook_id: successor, err: (error as Error).message }, 'webhook turn not signalled; its run rechecks');
  }
}

/** The signed POST of one attempt: its status code and error (null when a 2xx came within the timeout). */
async function post(deps: PlatformDeps, event: EventForAttempt, attempt: number, timeout_seconds: number): Promise<{ status_code: number | null; error: string | null }> {
  const secret = await merchantHmacSecret(deps, event.merchant_id);
  const timeoutMs = Math.round(timeout_seconds * 1000);
  const timestamp_seconds = Math.floor(Date.now() / 1000);
  let status_code: number | null = null;
  let error: string | null = null;
  const refusal = deps.outbound.checkUrl(event.callback_url);
  try {
    if (refusal) throw new OutboundRefusedError(refusal);
    const response = await request(event.callback_url, {
      dispatcher: deps.outbound.dispatcher,
      method: 'POST',
      body: event.body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        'content-type': 'application/json',
        [event.signature_header]: hmacSha256Hex(secret, event.body),
        'x-webhook-id': event.id,
        'x-webhook-event': event.event,
        'x-webhook-attempt': String(attempt),
        // Standard Webhooks: the same secret, over id, timestamp and body, so replays and altered ids fail.
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp_seconds),
        'webhook-signature': standardWebhookSignature(secret, event.id, timestamp_seconds, event.body),
        // The event's place in its owner's stream (GET /api/v1/events), when the webhook was produced from one.
        ...(event.event_seq === null ? {} : { [EVENT_SEQ_HEADER]: String(event.event_seq) }),
      },
    });
    status_code = response.statusCode;
    await response.body.dump();
    if (status_code < 200 || status_code > 299) error = `HTTP ${status_code}`;
  } catch (failure) {
    error = ((failure as Error).message || String(failure)).slice(0, MAX_ERROR_LENGTH);
  }
  return { status_code, error };
}

/**
 * One signed delivery attempt of a recorded event, recorded (time, status code, latency, error, and when the next
 * is due: `next_retry_seconds` after it, unless null); any 2xx within `timeout_seconds` (default
 * WEBHOOK_TIMEOUT_SECONDS) is delivered, and then the next pending webhook of its subject is told.
 * `read`: the row as just read, when the caller has it.
 * @throws Error when the event does not exist (a programming error)
 */
export async function attemptDelivery(
  deps: PlatformDeps,
  webhook_id: string,
  options: { timeout_seconds?: number; next_retry_seconds: number | null; read?: EventForAttempt },
): Promise<WebhookAttemptResult> {
  const event = options.read ?? (await findEventForAttempt(deps.database, webhook_id));
  if (!event) throw new Error(`webhook ${webhook_id} not found`);
  const attempt = event.last_attempt + 1;
  const attempted_at = new Date();
  const started = performance.now();
  const { status_code, error } = await post(deps, event, attempt, options.timeout_seconds ?? deps.config.WEBHOOK_TIMEOUT_SECONDS);
  const latency_ms = Math.round(performance.now() - started);
  const delivered = error === null;
  deps.metrics?.webhookAttempts.observe({ event: event.event, outcome: delivered ? 'delivered' : 'failed' }, latency_ms / 1000);
  if (!delivered) {
    deps.logger.warn({ webhook_id: event.id, event: event.event, merchant_id: event.merchant_id, attempt, status_code, error }, `${describe(event.event)} failed`);
  }
  const next_retry_at =
    delivered || options.next_retry_seconds === null ? null : new Date(attempted_at.getTime() + latency_ms + Math.round(options.next_retry_seconds * 1000));
  const successor = await recordAttempt(deps.database, { webhook_id: event.id, attempt, attempted_at, status_code, latency_ms, error, next_retry_at }, delivered);
  if (delivered) await nudgeSuccessor(deps, event, successor);
  return { delivered, attempt };
}

/**
 * Gives a pending event up: marked failed with its `webhook.failed` event (owner: the merchant; subject: the
 * webhook's), in one transaction; then the next pending webhook of its subject is told. A repeat changes nothing.
 */
export async function giveUp(deps: PlatformDeps, webhook_id: string): Promise<void> {
  const failed = await deps.database.transaction(async (trx) => {
    const row = await markEventFailed(trx, webhook_id);
    if (!row) return undefined;
    await recordEvent(trx, {
      owner: { type: 'merchant', id: row.merchant_id },
      subject: row.invoice_reference,
      type: 'webhook.failed',
      data: { webhook_id: row.id, event: row.event, event_seq: row.event_seq === null ? null : row.event_seq.toString(), attempts: row.attempt_count },
    });
    return row;
  });
  if (failed) await nudgeSuccessor(deps, failed);
}

export function createWebhookActivities(deps: PlatformDeps): WebhookDeliveryActivities {
  return {
    pendingPredecessor: async (input) => ({ webhook_id: await findPendingPredecessor(deps.database, input.webhook_id) }),
    attemptWebhookDelivery: (input) => attemptDelivery(deps, input.webhook_id, { next_retry_seconds: input.next_retry_seconds }),
    markWebhookFailed: (input) => giveUp(deps, input.webhook_id),
  };
}
