import { proxyLocalActivities, sleep } from '@temporalio/workflow';
import { upsertPaymentStatus } from '../src/temporal/search-attribute-keys';
import type { WebhookDeliveryActivities, WebhookDeliveryInput, WebhookDeliveryResult } from '../src/webhooks/contract';

// Local activities (recorded with the workflow task: fewer Temporal round trips per attempt). One attempt is bounded
// by WEBHOOK_TIMEOUT_SECONDS (≤ 300 s); activity retries cover only infrastructure faults.
const { attemptWebhookDelivery, markWebhookFailed } = proxyLocalActivities<WebhookDeliveryActivities>({
  startToCloseTimeout: '6 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * WebhookDeliveryWorkflow (platform decisions §5), one per event, id = webhook id. Attempts delivery; on anything
 * but a 2xx sleeps with exponential backoff (WEBHOOK_RETRY_INITIAL_SECONDS, factor 2, capped at
 * WEBHOOK_RETRY_MAX_INTERVAL_SECONDS) and tries again until WEBHOOK_RETRY_WINDOW_SECONDS of waiting have passed,
 * then marks the event failed. Every attempt is recorded by the activity. When the first attempt was already made
 * inline after the event committed (`first_attempt_failed`), the run starts with the first backoff delay.
 *
 * Search attributes: PaymentKind `webhook` and PaymentStatus `delivered` or `failed`, upserted once, with the end (a
 * running one is pending: `WorkflowType="webhookDeliveryWorkflow" AND ExecutionStatus="Running"`). An upsert at the
 * start as well cost a measurable share of the throughput of webhooks delivered through this workflow (bench
 * `payins`, workflow per webhook), and tells nothing the run's status does not.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  let waited_seconds = 0;
  let delay_seconds: number | undefined;
  let attempts = 0;
  if (input.first_attempt_failed && input.retry) {
    // The first attempt was made inline (src/webhooks) and failed: back off before the second.
    attempts = 1;
    delay_seconds = input.retry.initial_seconds;
    await sleep(Math.round(delay_seconds * 1000));
    waited_seconds += delay_seconds;
  }
  for (;;) {
    const result = await attemptWebhookDelivery({ webhook_id: input.webhook_id });
    attempts += 1;
    if (result.delivered) {
      upsertPaymentStatus('webhook', 'delivered');
      return { delivered: true, attempts };
    }
    delay_seconds =
      delay_seconds === undefined ? result.retry.initial_seconds : Math.min(delay_seconds * 2, result.retry.max_interval_seconds);
    if (waited_seconds + delay_seconds > result.retry.window_seconds) {
      await markWebhookFailed({ webhook_id: input.webhook_id });
      upsertPaymentStatus('webhook', 'failed');
      return { delivered: false, attempts };
    }
    await sleep(Math.round(delay_seconds * 1000));
    waited_seconds += delay_seconds;
  }
}
