/**
 * Automatic payouts (docs/payouts.md "Schedules"): a merchant's schedule (daily or weekly, a minimum, a reserve, a
 * saved TRON address) stored in `merchant_payout_schedules` and run by one Temporal Schedule per merchant
 * (`payout-schedule-<merchant_id>`, on the Web UI's Schedules page). Each run (workflows/payout-schedule.ts) calls
 * `runScheduledPayout`, which makes an ordinary payout through the service's own path (`createPayout`: checked, held
 * and approved like any other) under the key `schedule:<period>`: a schedule that fires twice in one period pays once.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import type { PayoutService } from '../../gen/payments/payout/v1/payout_pb';
import { DomainError, invalidFields } from '../../errors';
import { problem } from '../../field-problems';
import type { PlatformDeps } from '../../platform-deps';
import { scheduledPayoutWorkflow } from '../../../workflows/payout-schedule';
import type { PayoutScheduleActivities, ScheduledPayoutResult } from './contract';
import { feePayoutOf, findPayoutByKey } from './store';
import { createPayout, CRYPTO_PAYOUT_CHANNEL, isTronAddress } from './service';
import { parseAmount } from '../../money';

/** A merchant's payout schedule. Minor units of USDT. */
export interface PayoutSchedule {
  merchant_id: string;
  every: 'daily' | 'weekly';
  /** The smallest payout the schedule makes (below it, the period is skipped). */
  minimum_units: bigint;
  /** What stays on the wallet. */
  reserve_units: bigint;
  /** The saved destination (TRON). */
  address: string;
}

/** The Temporal Schedule's id of a merchant. */
export function payoutScheduleId(merchant_id: string): string {
  return `payout-schedule-${merchant_id}`;
}

/** The period `at` falls in: its UTC day (`2026-11-28`) or its ISO week's Monday (`W2026-11-23`). */
export function payoutPeriodOf(every: PayoutSchedule['every'], at: Date): string {
  const day = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
  if (every === 'daily') return day.toISOString().slice(0, 10);
  day.setUTCDate(day.getUTCDate() - ((day.getUTCDay() + 6) % 7));
  return `W${day.toISOString().slice(0, 10)}`;
}

/** The idempotency key of a scheduled payout: the schedule and its period. */
export function scheduledPayoutKey(merchant_id: string, every: PayoutSchedule['every'], at: Date): string {
  return `${payoutScheduleId(merchant_id)}:${payoutPeriodOf(every, at)}`;
}

export async function payoutScheduleOf(deps: PlatformDeps, merchant_id: string): Promise<PayoutSchedule | undefined> {
  return (await deps.database('merchant_payout_schedules').where({ merchant_id }).first()) as PayoutSchedule | undefined;
}

/**
 * Sets a merchant's payout schedule and creates (or updates) its Temporal Schedule: daily at 00:05 UTC, or weekly on
 * Mondays at 00:05 UTC; one run at a time, a missed run skipped.
 * @throws DomainError VALIDATION_FAILED (address, minimum)
 */
export async function setPayoutSchedule(deps: PlatformDeps, schedule: PayoutSchedule): Promise<PayoutSchedule> {
  const fields: Record<string, string[]> = {};
  if (!isTronAddress(schedule.address)) fields.address = [problem('invalid')];
  if (schedule.minimum_units <= 0n) fields.minimum = [problem('positive')];
  if (schedule.reserve_units < 0n) fields.reserve = [problem('not_negative')];
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
  await deps.database('merchant_payout_schedules')
    .insert({ ...schedule, updated_at: deps.database.fn.now() })
    .onConflict('merchant_id')
    .merge();
  const spec = { calendars: [{ hour: 0, minute: 5, ...(schedule.every === 'weekly' ? { dayOfWeek: 'MONDAY' as const } : {}) }] };
  const action = { type: 'startWorkflow' as const, workflowType: scheduledPayoutWorkflow, args: [{ merchant_id: schedule.merchant_id }] as [{ merchant_id: string }], taskQueue: deps.temporal.taskQueue };
  const scheduleId = payoutScheduleId(schedule.merchant_id);
  try {
    await deps.temporal.client.schedule.getHandle(scheduleId).update((previous) => ({ ...previous, spec, action }));
  } catch (error) {
    if (!(error instanceof ScheduleNotFoundError)) throw error;
    await deps.temporal.client.schedule.create({ scheduleId, spec, action, policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' } });
  }
  return schedule;
}

/** Removes a merchant's payout schedule and its Temporal Schedule. @returns whether there was one */
export async function removePayoutSchedule(deps: PlatformDeps, merchant_id: string): Promise<boolean> {
  const removed = await deps.database('merchant_payout_schedules').where({ merchant_id }).delete();
  try {
    await deps.temporal.client.schedule.getHandle(payoutScheduleId(merchant_id)).delete();
  } catch (error) {
    if (!(error instanceof ScheduleNotFoundError)) throw error;
  }
  return removed > 0;
}

/** The scheduled run's activity. */
export function createPayoutScheduleActivities(deps: PlatformDeps): PayoutScheduleActivities {
  return {
    async runScheduledPayout({ merchant_id, fired_at_ms }): Promise<ScheduledPayoutResult> {
      const schedule = await payoutScheduleOf(deps, merchant_id);
      if (!schedule) return { outcome: 'skipped', reason: 'no schedule' };
      const key = scheduledPayoutKey(merchant_id, schedule.every, new Date(fired_at_ms));
      // This period's payout, made by an earlier run: the schedule fired twice, it pays once.
      const made = await findPayoutByKey(deps.database, merchant_id, key);
      if (made) return { outcome: 'paid', payout_reference: made.payout_reference };
      const wallet = await deps.ledger.findAccount({ owner_type: 'merchant', owner_id: merchant_id, currency: 'USDT', kind: 'wallet' });
      const fee = await feePayoutOf(deps.database, CRYPTO_PAYOUT_CHANNEL);
      const fee_units = fee ? parseAmount(fee.amount, 'USDT', { allowZero: true }) : 0n;
      const amount_units = (wallet?.available_units ?? 0n) - schedule.reserve_units - fee_units;
      if (amount_units < schedule.minimum_units) return { outcome: 'skipped', reason: `${amount_units > 0n ? amount_units : 0n} minor units are below the minimum` };
      try {
        const payout = await createPayout(
          deps,
          merchant_id,
          { amount_units, currency: 'USDT', address: schedule.address, memo: `scheduled payout ${payoutPeriodOf(schedule.every, new Date(fired_at_ms))}`, source: 'schedule' },
          key,
        );
        return { outcome: 'paid', payout_reference: payout.payout_reference };
      } catch (error) {
        // Another run of the period made it meanwhile (with the balance before its hold): that one is the period's.
        const first = error instanceof DomainError && error.reason === 'IDEMPOTENCY_KEY_REUSED' ? await findPayoutByKey(deps.database, merchant_id, key) : undefined;
        if (!first) throw error;
        return { outcome: 'paid', payout_reference: first.payout_reference };
      }
    },
  };
}

/** The PayoutService's SetPayoutSchedule (operators): sets, or removes, a merchant's schedule. */
export function createSetPayoutSchedule(deps: PlatformDeps): ServiceImpl<typeof PayoutService>['setPayoutSchedule'] {
  return async (request) => {
    const { merchantId: merchant_id } = request;
    if (request.remove) {
      await removePayoutSchedule(deps, merchant_id);
      return { merchantId: merchant_id, every: '', minimumUnits: 0n, reserveUnits: 0n, address: '', scheduleId: payoutScheduleId(merchant_id) };
    }
    if (request.every !== 'daily' && request.every !== 'weekly') throw invalidFields({ every: [problem('invalid')] });
    const set = await setPayoutSchedule(deps, { merchant_id, every: request.every, minimum_units: request.minimumUnits, reserve_units: request.reserveUnits, address: request.address });
    return { merchantId: merchant_id, every: set.every, minimumUnits: set.minimum_units, reserveUnits: set.reserve_units, address: set.address, scheduleId: payoutScheduleId(merchant_id) };
  };
}
