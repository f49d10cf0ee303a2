import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { DepositRefundActivities, DepositRefundWorkflowInput, DepositRefundWorkflowResult } from '../src/flows/deposit/contract';
import { runMoneyOutSaga } from '../src/flows/money-out/contract';
import { upsertPaymentStatus } from './search-attributes';

// The acquirer step: retried with backoff until it has an outcome. It fails retryably while the deposit's capture is
// running (a refund after capture waits for `captured`) and when the acquirer gave no answer; the acquirer's key (the
// refund reference) and the authorization id make a retry safe: the payer is refunded once.
const { settleDepositRefund } = proxyActivities<DepositRefundActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
const { startDepositRefundWebhooks } = proxyLocalActivities<DepositRefundActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * DepositRefundWorkflow (docs/refunds.md "Area C"), id = the refund reference (`DRF…`): the money-out saga
 * (src/flows/money-out/contract.ts `runMoneyOutSaga`, docs/money-out.md) over the acquirer, which answers at once (no
 * decision to wait for). The DepositService recorded the refund with its hold on the credited account (the user's
 * wallet, or a preorder's seller and fee_revenue) before starting it. One step asks the acquirer: a reversal of the
 * authorization before capture (the deposit row, locked, says which), else a refund under the refund's key; the
 * activity posts the holds on success and voids them on failure, with the `refund.succeeded` / `refund.failed` event
 * on the deposit's subject, exactly once. Then the decision's webhook (a preorder's call_back_url only) is delivered.
 */
export async function depositRefundWorkflow(input: DepositRefundWorkflowInput): Promise<DepositRefundWorkflowResult> {
  const { refund_reference } = input;
  const result = await runMoneyOutSaga({ reference: refund_reference, request: () => settleDepositRefund({ refund_reference }) });
  // PaymentStatus in the Web UI: the decision (started as the row's status, `held`).
  upsertPaymentStatus('refund', result.status);
  if (result.webhook_ids.length > 0) await startDepositRefundWebhooks({ webhook_ids: result.webhook_ids });
  return result;
}
