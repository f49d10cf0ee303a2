/**
 * Every capability's activities, merged for the one worker. Workflows see them only as types
 * (`proxyActivities<Activities>`).
 */
import type { PlatformDeps } from './platform-deps';
import { createDiagnosticsActivities } from './health/activities';
import { createPreTransferActivities } from './flows/pre-transfer/activities';
import { createPayinActivities } from './flows/payin/activities';
import { createWebhookActivities } from './webhooks';
import { createDepositActivities } from './flows/deposit/activities';
import { createDepositRefundActivities } from './flows/deposit/refund-activities';
import { restartDepositRefund } from './flows/deposit/refund';
import { createReconciliationActivities } from './flows/reconciliation/activities';
import type { ReconciliationRepairs } from './flows/reconciliation/contract';
import { applyRecordedNotification, notifyPayin } from './flows/payin/service';
import { findPayin } from './flows/payin/store';
import { preTransferIdempotencyKey } from './flows/pre-transfer/contract';
import { createRefundActivities, startRefundWorkflow } from './flows/refund/service';
import { createPayoutActivities, findPayout, startPayoutWorkflow } from './flows/payout/service';
import { createPayoutScheduleActivities } from './flows/payout/schedules';
import type { ResolutionRefunds } from './flows/payin/resolution';
import { holdPolicyRefund, policyRefundsConfigured, policyRefundStatus } from './flows/refund/policy-refunds';

/** The refund flow as the payin settlement's outcome policies reach it (src/flows/payin/resolution.ts). */
export function createResolutionRefunds(deps: PlatformDeps): ResolutionRefunds {
  return {
    configured: () => policyRefundsConfigured(deps),
    hold: (trx, refund) => holdPolicyRefund(deps, trx, refund),
    status: policyRefundStatus,
    start: (refund_reference) => startRefundWorkflow(deps, refund_reference),
  };
}

/** Reconciliation's repairs, each through its flow's own idempotent path (src/flows/reconciliation/contract.ts). */
export function createReconciliationRepairs(deps: PlatformDeps): ReconciliationRepairs {
  const preTransfers = createPreTransferActivities(deps);
  const deposits = createDepositActivities(deps);
  const payin = async (invoice_reference: string) => {
    const row = await findPayin(deps.database, invoice_reference);
    if (!row) throw new Error('payin vanished');
    return row;
  };
  return {
    voidPreTransferHold: (id) => preTransfers.voidPreTransfer({ pre_transfer_id: id, idempotency_key: preTransferIdempotencyKey(id, 'void') }),
    expireDeposit: (reference) => deposits.closeDeposit({ reference, state: 'expired' }),
    applyRecordedNotification: async (invoice_reference, idempotency_key, payment) => {
      await applyRecordedNotification(deps, await payin(invoice_reference), idempotency_key, payment);
    },
    renotifyPayin: async (invoice_reference, payment) => {
      await notifyPayin(deps, await payin(invoice_reference), payment);
    },
    startRefund: (refund_reference) => startRefundWorkflow(deps, refund_reference),
    startDepositRefund: (refund_reference) => restartDepositRefund(deps, refund_reference),
    startPayout: async (payout_reference) => {
      const payout = await findPayout(deps.database, payout_reference);
      if (payout) await startPayoutWorkflow(deps, payout);
    },
  };
}

export function createActivities(deps: PlatformDeps) {
  return {
    ...createDiagnosticsActivities(deps),
    ...createPreTransferActivities(deps),
    ...createPayinActivities(deps, createResolutionRefunds(deps)),
    ...createWebhookActivities(deps),
    ...createDepositActivities(deps),
    ...createReconciliationActivities(deps, createReconciliationRepairs(deps)),
    ...createRefundActivities(deps),
    ...createDepositRefundActivities(deps),
    ...createPayoutActivities(deps),
    ...createPayoutScheduleActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
