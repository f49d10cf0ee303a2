/**
 * The provider's signed decision of a refund (docs/refunds.md "Providers"), as the upstream's door hands it over
 * (src/upstream/notifications.ts, its signature verified and its fields read there): recorded as the decision's
 * authority, then the refund's run is told (the money-out saga's `decided` hint, src/flows/money-out/contract.ts),
 * which re-reads the record.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { reasonError } from '../../errors';
import type { PlatformDeps } from '../../platform-deps';
import type { UpstreamNotificationAnswer, UpstreamRefundNotification } from '../../upstream/notifications';
import { decidedSignal, REFUND_REASONS } from './contract';
import { findRefund, insertRefundNotification } from './store';

/**
 * Records a verified refund notification (the authority the RefundWorkflow's decision rests on) and signals the
 * refund's workflow. A notification of an unknown refund is recorded too (reconciliation reports it); one whose amount
 * is not the refund's is refused and recorded nowhere. A repeat is recorded once (per refund and decision).
 * @returns whether this call recorded it, the refunded payin's invoice_reference ('' for an unknown refund) and the
 *   decision notified
 * @throws DomainError REFUND_NOTIFICATION_MISMATCH
 */
export async function applyRefundNotification(deps: PlatformDeps, notification: UpstreamRefundNotification, raw_body: string): Promise<UpstreamNotificationAnswer> {
  const refund = await findRefund(deps.database, notification.refund_reference);
  if (refund && refund.amount_units !== notification.amount_units) {
    throw reasonError(REFUND_REASONS, 'REFUND_NOTIFICATION_MISMATCH', 'the notification names another amount than the refund');
  }
  const recorded = await insertRefundNotification(deps.database, {
    refund_reference: notification.refund_reference,
    status: notification.status,
    amount_units: notification.amount_units,
    refund_trx_ref: notification.refund_trx_ref ?? null,
    failure_reason: notification.failure_reason ?? null,
    raw_body,
  });
  const answer = { applied: recorded, invoiceReference: refund?.invoice_reference ?? '', status: notification.status };
  if (!refund) {
    deps.logger.warn({ refund_reference: notification.refund_reference }, 'refund notification of an unknown refund recorded');
    return { ...answer, applied: false };
  }
  if (refund.status === 'held' || refund.status === 'pending') {
    try {
      await deps.temporal.client.workflow.getHandle(refund.refund_reference).signal(decidedSignal, { status: notification.status });
    } catch (error) {
      // No run (not started yet, or gone): the run that starts reads the record; reconciliation reports it meanwhile.
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      deps.logger.warn({ refund_reference: refund.refund_reference }, 'refund notification recorded; no running workflow to tell');
    }
  }
  return answer;
}
