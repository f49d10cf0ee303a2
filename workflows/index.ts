// Every workflow the worker registers. Deterministic code only: import @temporalio/workflow and activity types.
export { diagnosticsWorkflow } from './diagnostics';
export { preTransferWorkflow } from './pre-transfer';
export { payinWorkflow } from './payin';
export { webhookDeliveryWorkflow } from './webhook-delivery';
export { depositWorkflow } from './deposit';
export { reconciliationWorkflow } from './reconciliation';
export { refundWorkflow } from './refund';
export { depositRefundWorkflow } from './deposit-refund';
export { payoutWorkflow } from './payout';
export { scheduledPayoutWorkflow } from './payout-schedule';
