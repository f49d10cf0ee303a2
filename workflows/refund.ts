import { ActivityFailure, ApplicationFailure, condition, log, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import { upsertPaymentStatus } from '../src/temporal/search-attribute-keys';
import { decidedSignal, type RefundActivities, type RefundStatus, type RefundStep, type RefundWorkflowInput, type RefundWorkflowResult } from '../src/flows/refund/contract';

// Local activities, as the payin's: short transactions, one provider call bounded by UPSTREAM_TIMEOUT_SECONDS and a
// webhook's first attempt (WEBHOOK_INLINE_TIMEOUT_SECONDS), recorded with the workflow task (a refund's steps cost no
// extra Temporal round trips). The provider call backs off on failures without an outcome (no answer, 5xx,
// malformed): its key makes a retry safe.
const { requestRefund, applyRefundDecision } = proxyLocalActivities<RefundActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Longest wait between two questions to the provider about an undecided refund, milliseconds. */
const MAX_ASK_INTERVAL_MS = 6 * 3600 * 1000;

interface RefundRun {
  readonly input: RefundWorkflowInput;
  status: RefundStatus;
  /** Decision messages received and not yet looked at. */
  decisions: number;
  readonly webhook_ids: string[];
}

function decided(status: RefundStatus): boolean {
  return status === 'succeeded' || status === 'failed';
}

function take(run: RefundRun, step: RefundStep): void {
  run.status = step.status;
  if (step.webhook_id && !run.webhook_ids.includes(step.webhook_id)) run.webhook_ids.push(step.webhook_id);
}

/** True when the activity refused for good (a decision message with no recorded notification behind it). */
function refused(error: unknown): boolean {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure && cause.nonRetryable === true;
}

/** Applies the recorded notification a decision message points at; one without a record changes nothing. */
async function applyDecision(run: RefundRun): Promise<void> {
  run.decisions = 0;
  try {
    take(run, await applyRefundDecision({ refund_reference: run.input.refund_reference }));
  } catch (error) {
    if (!refused(error)) throw error;
    log.warn('refund decision message without a recorded notification ignored', { refund_reference: run.input.refund_reference });
  }
}

/**
 * Waits for the provider's decision: a `decided` message (applied from its record), else after each timeout the
 * provider is asked again under the same key (it answers the decision once there is one), the wait doubling up to
 * MAX_ASK_INTERVAL_MS. An undecided refund stays held meanwhile (reconciliation reports it once past its due time).
 */
async function awaitDecision(run: RefundRun): Promise<void> {
  let wait_ms = Math.max(1, Math.round(run.input.decision_timeout_seconds * 1000));
  while (!decided(run.status)) {
    if (await condition(() => run.decisions > 0, wait_ms)) {
      await applyDecision(run);
      continue;
    }
    take(run, await requestRefund({ refund_reference: run.input.refund_reference }));
    wait_ms = Math.min(wait_ms * 2, MAX_ASK_INTERVAL_MS);
  }
}

/**
 * RefundWorkflow (docs/refunds.md), id = the refund reference. Asks the provider under the refund's idempotency key
 * (the hold placed by the service with the refund; the activity places a missing one before asking), waits for a
 * pending refund's decision (signed notification → `decided` signal, or asking again after
 * REFUND_DECISION_TIMEOUT_SECONDS). The deciding activity posts the hold on success and voids it on failure, each
 * with its event, exactly once (ledger keys `<ref>:post` / `<ref>:void`), and delivers the webhook after its commit:
 * a refund the provider answers at once is one local activity in the run's first workflow task. No message is
 * authority: the decision is read from the notification the authenticated route recorded.
 */
export async function refundWorkflow(input: RefundWorkflowInput): Promise<RefundWorkflowResult> {
  const run: RefundRun = { input, status: 'held', decisions: 0, webhook_ids: [] };
  setHandler(decidedSignal, (message) => {
    if (message?.status === 'refund_succeeded' || message?.status === 'refund_failed') run.decisions += 1;
    else log.warn('refund decided signal ignored: malformed', { refund_reference: input.refund_reference });
  });
  // A notification may have arrived before the run's first task (or the run restarted): its record is looked at first.
  if (run.decisions > 0) await applyDecision(run);
  if (!decided(run.status)) take(run, await requestRefund({ refund_reference: input.refund_reference }));
  await awaitDecision(run);
  // PaymentStatus in the Web UI: the decision (started as the row's status, `held`).
  upsertPaymentStatus('refund', run.status);
  return { status: run.status, webhook_ids: run.webhook_ids };
}
