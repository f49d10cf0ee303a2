/**
 * The WebhookDeliveryWorkflow's activities (platform decisions §5): one signed delivery attempt, recorded; and the
 * final "failed" mark. Attempt numbers continue across every run of one event (X-Webhook-Attempt 1, 2, …).
 */
import { request } from 'undici';
import { hmacSha256Hex, standardWebhookSignature } from '../crypto/hmac';
import { merchantHmacSecret } from '../onboarding/merchants';
import type { PlatformDeps } from '../platform-deps';
import type { WebhookAttemptResult, WebhookDeliveryActivities, WebhookRetrySettings } from './contract';
import { findEventForAttempt, markEventFailed, recordAttempt, type EventForAttempt } from './store';
import { OutboundRefusedError } from '../web/outbound';

const MAX_ERROR_LENGTH = 500;

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
 * One signed delivery attempt of a recorded event, recorded (time, status code, latency, error); any 2xx within
 * `timeout_seconds` (default WEBHOOK_TIMEOUT_SECONDS) is delivered. `event`: the row as just read, when the caller has it.
 * @throws Error when the event does not exist (a programming error)
 */
export async function attemptDelivery(
  deps: PlatformDeps,
  webhook_id: string,
  timeout_seconds = deps.config.WEBHOOK_TIMEOUT_SECONDS,
  read?: EventForAttempt,
): Promise<WebhookAttemptResult> {
  const retry = webhookRetrySettings(deps);
  const event = read ?? (await findEventForAttempt(deps.database, webhook_id));
  if (!event) throw new Error(`webhook ${webhook_id} not found`);
  const attempt = event.last_attempt + 1;
  const secret = await merchantHmacSecret(deps, event.merchant_id);
  const timeoutMs = Math.round(timeout_seconds * 1000);
  const attempted_at = new Date();
  const timestamp_seconds = Math.floor(attempted_at.getTime() / 1000);
  const started = performance.now();
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
      },
    });
    status_code = response.statusCode;
    await response.body.dump();
    if (status_code < 200 || status_code > 299) error = `HTTP ${status_code}`;
  } catch (failure) {
    error = ((failure as Error).message || String(failure)).slice(0, MAX_ERROR_LENGTH);
  }
  const latency_ms = Math.round(performance.now() - started);
  const delivered = error === null;
  deps.metrics?.webhookAttempts.observe({ event: event.event, outcome: delivered ? 'delivered' : 'failed' }, latency_ms / 1000);
  if (!delivered) {
    deps.logger.warn({ webhook_id: event.id, event: event.event, merchant_id: event.merchant_id, attempt, status_code, error }, `${describe(event.event)} failed`);
  }
  await recordAttempt(deps.database, { webhook_id: event.id, attempt, attempted_at, status_code, latency_ms, error }, delivered);
  return { delivered, attempt, retry };
}

export function createWebhookActivities(deps: PlatformDeps): WebhookDeliveryActivities {
  return {
    attemptWebhookDelivery: (input) => attemptDelivery(deps, input.webhook_id),

    async markWebhookFailed(input) {
      await markEventFailed(deps.database, input.webhook_id);
    },
  };
}
