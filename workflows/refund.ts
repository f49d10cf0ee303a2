import { proxyLocalActivities } from '@temporalio/workflow';
import { runMoneyOutSaga } from '../src/flows/money-out/contract';
import { upsertPaymentStatus } from './search-attributes';
import { isRefundDecisionHint, type RefundActivities, type RefundWorkflowInput, type RefundWorkflowResult } from '../src/flows/refund/contract';

// Local activities, as the payin's: short transactions, one provider call bounded by UPSTREAM_TIMEOUT_SECONDS and a
// webhook's first attempt (WEBHOOK_INLINE_TIMEOUT_SECONDS), recorded with the workflow task (a refund's steps cost no
// extra Temporal round trips). The provider call backs off on failures without an outcome (no answer, 5xx,
// malformed): its key makes a retry safe.
const { requestRefund, applyRefundDecision } = proxyLocalActivities<RefundActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * RefundWorkflow (docs/refunds.md), id = the refund reference: the money-out saga (src/flows/money-out/contract.ts
 * `runMoneyOutSaga`, docs/money-out.md) over the refund's activities. Asks the provider under the refund's idempotency
 * key (the hold placed by the service with the refund; the activity places a missing one before asking), waits for a
 * pending refund's decision (signed notification → `decided` hint, or asking again after
 * REFUND_DECISION_TIMEOUT_SECONDS). The deciding activity posts the hold on success and voids it on failure, each
 * with its event, exactly once (ledger keys `<ref>:post` / `<ref>:void`), and delivers the webhook after its commit:
 * a refund the provider answers at once is one local activity in the run's first workflow task. No message is
 * authority: the decision is read from the notification the upstream's door recorded.
 */
export async function refundWorkflow(input: RefundWorkflowInput): Promise<RefundWorkflowResult> {
  const { refund_reference } = input;
  const result = await runMoneyOutSaga({
    reference: refund_reference,
    request: () => requestRefund({ refund_reference }),
    applyDecision: () => applyRefundDecision({ refund_reference }),
    isHint: isRefundDecisionHint,
    decision_timeout_seconds: input.decision_timeout_seconds,
  });
  // PaymentStatus in the Web UI: the decision (started as the row's status, `held`).
  upsertPaymentStatus('refund', result.status);
  return result;
}
