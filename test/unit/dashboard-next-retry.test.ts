/**
 * The dashboard's next retry (src/dashboard/next-retry.ts), read from the delivery records alone: each row of the
 * module's table.
 */
import { retryScheduleOf } from '../../src/dashboard/next-retry';
import { NextRetry } from '../../src/gen/payments/dashboard/v1/dashboard_pb';

const NOW = new Date('2026-05-04T10:00:00.000Z');
const at = (offsetSeconds: number) => new Date(NOW.getTime() + offsetSeconds * 1000);
const pending = { status: 'pending' as const };

describe('retryScheduleOf', () => {
  it('answers NONE for a delivered or failed delivery, whatever its attempts say', () => {
    expect(retryScheduleOf({ status: 'delivered' }, [{ attempt: 1, next_retry_at: at(60) }], 10, NOW)).toEqual({ next: NextRetry.NONE });
    expect(retryScheduleOf({ status: 'failed' }, [], 10, NOW)).toEqual({ next: NextRetry.NONE });
  });

  it('answers SCHEDULED at the last attempt\'s next_retry_at while it is ahead (attempts in any order)', () => {
    const attempts = [
      { attempt: 2, next_retry_at: at(120) },
      { attempt: 1, next_retry_at: at(-60) },
    ];
    expect(retryScheduleOf(pending, attempts, 10, NOW)).toEqual({ next: NextRetry.SCHEDULED, at: at(120) });
  });

  it('answers IN_PROGRESS before the first attempt, after one naming no next, and within the timeout and slack of a due one', () => {
    expect(retryScheduleOf(pending, [], 10, NOW)).toEqual({ next: NextRetry.IN_PROGRESS });
    expect(retryScheduleOf(pending, [{ attempt: 3, next_retry_at: null }], 10, NOW)).toEqual({ next: NextRetry.IN_PROGRESS });
    expect(retryScheduleOf(pending, [{ attempt: 1, next_retry_at: at(-40) }], 10, NOW)).toEqual({ next: NextRetry.IN_PROGRESS });
  });

  it('answers NOT_SCHEDULED, with when it was due, once a retry is overdue past the timeout and 30 s', () => {
    expect(retryScheduleOf(pending, [{ attempt: 1, next_retry_at: at(-41) }], 10, NOW)).toEqual({ next: NextRetry.NOT_SCHEDULED, at: at(-41) });
  });
});
