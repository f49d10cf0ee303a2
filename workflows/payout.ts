import { ActivityFailure, ApplicationFailure, condition, log, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import { isMoneyOutEnd, runMoneyOutSaga } from '../src/flows/money-out/contract';
import { upsertPaymentStatus } from './search-attributes';
import { approvalSignal, isPayoutDecisionHint, type PayoutActivities, type PayoutStatus, type PayoutWorkflowInput, type PayoutWorkflowResult } from '../src/flows/payout/contract';

// Local activities, as the refund's: short transactions and one provider call bounded by UPSTREAM_TIMEOUT_SECONDS.
// The provider call backs off on failures without an outcome: its key makes a retry safe.
const { requestPayout, applyPayoutDecision, applyPayoutApproval, expirePayoutApproval } = proxyLocalActivities<PayoutActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** True when the activity refused for good (a hint with no record behind it). */
function refused(error: unknown): boolean {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure && cause.nonRetryable === true;
}

/**
 * Waits for the approval of a payout awaiting it: each `approval` hint re-reads the `payout_approvals` record
 * (`applyPayoutApproval`; a hint without one changes nothing), until it is approved (`held`), rejected (`failed`, holds
 * voided) or PAYOUT_APPROVAL_TIMEOUT_SECONDS ran out (`expirePayoutApproval`: failed `approval_timed_out`, unless an
 * approval raced the timer). @returns the payout's status after the wait
 */
async function awaitApproval(payout_reference: string, timeout_seconds: number): Promise<{ status: PayoutStatus; webhook_ids: string[] }> {
  let hints = 0;
  setHandler(approvalSignal, () => {
    hints += 1;
  });
  const deadline = Date.now() + Math.max(1, Math.round(timeout_seconds * 1000));
  // An approval recorded before this run (its hint lost, or the run restarted) is applied at once.
  hints = 1;
  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining > 0 && (hints > 0 || (await condition(() => hints > 0, remaining)))) {
      hints = 0;
      try {
        const step = await applyPayoutApproval({ payout_reference });
        if (step.status !== 'awaiting_approval') return { status: step.status, webhook_ids: step.webhook_id ? [step.webhook_id] : [] };
      } catch (error) {
        if (!refused(error)) throw error;
        log.warn('payout approval hint without a recorded approval ignored', { payout_reference });
      }
      continue;
    }
    const step = await expirePayoutApproval({ payout_reference });
    return { status: step.status, webhook_ids: step.webhook_id ? [step.webhook_id] : [] };
  }
}

/**
 * PayoutWorkflow (docs/payouts.md), id = the payout reference. A payout above its merchant's approval threshold first
 * waits for its approval record (or is voided after PAYOUT_APPROVAL_TIMEOUT_SECONDS); then the money-out saga
 * (src/flows/money-out/contract.ts `runMoneyOutSaga`) over the payout's activities: the provider is asked under the
 * payout's key, a pending payout waits for its signed notification (`decided` hint) or asks again after
 * PAYOUT_DECISION_TIMEOUT_SECONDS; the deciding activity posts both holds on success and voids them on failure, with
 * its event and webhook, exactly once. No message is authority: decisions and approvals are read from their records.
 */
export async function payoutWorkflow(input: PayoutWorkflowInput): Promise<PayoutWorkflowResult> {
  const { payout_reference } = input;
  if (input.awaiting_approval) {
    upsertPaymentStatus('payout', 'awaiting_approval');
    const approval = await awaitApproval(payout_reference, input.approval_timeout_seconds);
    if (isMoneyOutEnd(approval.status)) {
      upsertPaymentStatus('payout', approval.status);
      return { status: approval.status, webhook_ids: approval.webhook_ids };
    }
  }
  const result = await runMoneyOutSaga({
    reference: payout_reference,
    request: () => requestPayout({ payout_reference }),
    applyDecision: () => applyPayoutDecision({ payout_reference }),
    isHint: isPayoutDecisionHint,
    decision_timeout_seconds: input.decision_timeout_seconds,
  });
  upsertPaymentStatus('payout', result.status);
  return result;
}
