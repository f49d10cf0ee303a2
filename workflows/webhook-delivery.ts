import { condition, continueAsNew, proxyLocalActivities, setHandler, sleep } from '@temporalio/workflow';
import {
  predecessorSettledSignal,
  retryDelaySeconds,
  withJitter,
  TURN_CHECKS_PER_RUN,
  type WebhookDeliveryActivities,
  type WebhookDeliveryInput,
  type WebhookDeliveryResult,
} from '../src/webhooks/contract';
import { upsertPaymentStatus } from './search-attributes';

// Local activities (recorded with the workflow task: fewer Temporal round trips per attempt). One attempt is bounded
// by WEBHOOK_TIMEOUT_SECONDS (≤ 300 s); activity retries cover only infrastructure faults.
const { attemptWebhookDelivery, markWebhookFailed, pendingPredecessor } = proxyLocalActivities<WebhookDeliveryActivities>({
  startToCloseTimeout: '6 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** A run's wait for its turn: set by the signal, cleared before every check. */
interface Turn {
  nudged: boolean;
}

/**
 * Waits until no earlier webhook of the subject is pending: checks, then waits for the predecessor's
 * `predecessorSettled` signal (sent when it is delivered or given up), rechecking on a backoff from
 * `initial_seconds` doubling to `max_interval_seconds` in case a signal was lost (its sender died).
 * @returns false when the run should continue as new (`turn_checks_per_run` checks made), true on its turn
 */
async function awaitTurn(input: WebhookDeliveryInput, turn: Turn): Promise<boolean> {
  let wait_seconds = input.retry.initial_seconds;
  const bound = input.turn_checks_per_run ?? TURN_CHECKS_PER_RUN;
  for (let checks = 0; ; checks += 1) {
    // Cleared before the check: a signal sent while the check runs is kept for the wait below.
    turn.nudged = false;
    const { webhook_id: predecessor } = await pendingPredecessor({ webhook_id: input.webhook_id });
    if (predecessor === null) return true;
    if (checks + 1 >= bound) return false;
    await condition(() => turn.nudged, Math.round(wait_seconds * 1000));
    wait_seconds = Math.min(wait_seconds * 2, input.retry.max_interval_seconds);
  }
}

/**
 * WebhookDeliveryWorkflow (platform decisions §5, docs/webhooks.md), one per event, id = webhook id. First waits
 * for its turn: no earlier webhook of the same merchant and subject (lower event seq) is still pending, so a
 * subject's webhooks are delivered in order while other subjects never wait on it. Then attempts delivery; on
 * anything but a 2xx sleeps with exponential backoff (WEBHOOK_RETRY_INITIAL_SECONDS, factor 2, capped at
 * WEBHOOK_RETRY_MAX_INTERVAL_SECONDS) and tries again until WEBHOOK_RETRY_WINDOW_SECONDS of waiting have passed,
 * then marks the event failed (given up). Every attempt is recorded by the activity with when the next is due. When
 * the first attempt was already made inline after the event committed (`first_attempt_failed`: made only on its
 * turn), the run starts with the first backoff delay.
 *
 * Search attributes: PaymentKind `webhook` and PaymentStatus `delivered` or `failed`, upserted once, with the end (a
 * running one is pending: `WorkflowType="webhookDeliveryWorkflow" AND ExecutionStatus="Running"`). An upsert at the
 * start as well cost a measurable share of the throughput of webhooks delivered through this workflow (bench
 * `payins`, workflow per webhook), and tells nothing the run's status does not.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const turn: Turn = { nudged: false };
  setHandler(predecessorSettledSignal, () => {
    turn.nudged = true;
  });
  let waited_seconds = 0;
  let delay_seconds: number | undefined;
  let attempts = 0;
  if (input.first_attempt_failed) {
    // The first attempt was made inline (src/webhooks) on its turn and failed: back off before the second.
    attempts = 1;
    delay_seconds = input.retry.initial_seconds;
    await sleep(Math.round(delay_seconds * 1000));
    waited_seconds += delay_seconds;
  } else if (!(await awaitTurn(input, turn))) {
    return continueAsNew<typeof webhookDeliveryWorkflow>(input);
  }
  for (;;) {
    const backoff = retryDelaySeconds(input.retry, delay_seconds, waited_seconds);
    // The wait recorded with the attempt and slept is the backoff with its jitter; the next backoff doubles the
    // backoff, not the jittered wait.
    const next_retry_seconds = backoff === null ? null : withJitter(backoff, input.retry.jitter ?? 0, Math.random());
    const result = await attemptWebhookDelivery({ webhook_id: input.webhook_id, next_retry_seconds });
    attempts += 1;
    if (result.delivered) {
      upsertPaymentStatus('webhook', 'delivered');
      return { delivered: true, attempts };
    }
    if (next_retry_seconds === null) {
      await markWebhookFailed({ webhook_id: input.webhook_id });
      upsertPaymentStatus('webhook', 'failed');
      return { delivered: false, attempts };
    }
    await sleep(Math.round(next_retry_seconds * 1000));
    waited_seconds += next_retry_seconds;
    delay_seconds = backoff!;
  }
}
