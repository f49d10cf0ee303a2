/**
 * The provider's signed decision of a payout (docs/payouts.md "Providers"), as the upstream's door hands it over
 * (src/upstream/notifications.ts, its signature verified and its fields read there): recorded as the decision's
 * authority, then the payout's run is told (the money-out saga's `decided` hint), which re-reads the record.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { reasonError } from '../../errors';
import type { PlatformDeps } from '../../platform-deps';
import type { UpstreamNotificationAnswer, UpstreamPayoutNotification } from '../../upstream/notifications';
import { decidedSignal, PAYOUT_REASONS } from './contract';
import { findPayout, insertPayoutNotification } from './store';

/**
 * Records a verified payout notification and signals the payout's workflow. A notification of an unknown payout is
 * recorded too (reconciliation reports it); one whose amount is not the payout's is refused and recorded nowhere. A
 * repeat is recorded once (per payout and decision).
 * @returns whether this call recorded it, the payout reference and the decision notified
 * @throws DomainError PAYOUT_NOTIFICATION_MISMATCH
 */
export async function applyPayoutNotification(deps: PlatformDeps, notification: UpstreamPayoutNotification, raw_body: string): Promise<UpstreamNotificationAnswer> {
  const payout = await findPayout(deps.database, notification.payout_reference);
  if (payout && payout.amount_units !== notification.amount_units) {
    throw reasonError(PAYOUT_REASONS, 'PAYOUT_NOTIFICATION_MISMATCH', 'the notification names another amount than the payout');
  }
  const recorded = await insertPayoutNotification(deps.database, {
    payout_reference: notification.payout_reference,
    status: notification.status,
    amount_units: notification.amount_units,
    payout_trx_ref: notification.payout_trx_ref ?? null,
    failure_reason: notification.failure_reason ?? null,
    raw_body,
  });
  const answer = { applied: recorded, invoiceReference: payout?.payout_reference ?? '', status: notification.status };
  if (!payout) {
    deps.logger.warn({ payout_reference: notification.payout_reference }, 'payout notification of an unknown payout recorded');
    return { ...answer, applied: false };
  }
  if (payout.status === 'held' || payout.status === 'requested') {
    try {
      await deps.temporal.client.workflow.getHandle(payout.payout_reference).signal(decidedSignal, { status: notification.status });
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      deps.logger.warn({ payout_reference: payout.payout_reference }, 'payout notification recorded; no running workflow to tell');
    }
  }
  return answer;
}
