import { proxyActivities } from '@temporalio/workflow';
import type { PayoutScheduleActivities, ScheduledPayoutInput, ScheduledPayoutResult } from '../src/flows/payout/contract';

const { runScheduledPayout } = proxyActivities<PayoutScheduleActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * ScheduledPayoutWorkflow (docs/payouts.md "Schedules"): what a merchant's Temporal Schedule starts each period. One
 * activity, the payout service's own path (validated and held like any payout), under the key of the period the
 * schedule fired in (the run's start time, deterministic on replay): a schedule that fires twice pays once.
 */
export async function scheduledPayoutWorkflow(input: ScheduledPayoutInput): Promise<ScheduledPayoutResult> {
  return runScheduledPayout({ merchant_id: input.merchant_id, fired_at_ms: Date.now() });
}
