/**
 * An upstream notification's two Temporal steps (the wait for its run to apply it, then the signal that queues it)
 * fit the request's own Temporal deadline at every REQUEST_TIMEOUT_SECONDS: with a short one (the fault suite runs 5 s)
 * the wait and the signal once took 3.75 + 2 s, and the caller's deadline answered 500 before the signal could
 * queue the notification.
 */
import { notificationBudget } from '../../src/flows/payin/notifications';
import { requestDeadlineSeconds } from '../../src/temporal/deadline';

describe('notificationBudget', () => {
  it.each([1, 2, 3, 5, 8, 10, 30, 300])('REQUEST_TIMEOUT_SECONDS %i: wait + signal within the request deadline and 6 s', (REQUEST_TIMEOUT_SECONDS) => {
    for (const NOTIFICATION_APPLY_WAIT_SECONDS of [0, 1, 4, 60]) {
      const { wait_seconds, signal_seconds } = notificationBudget({ REQUEST_TIMEOUT_SECONDS, NOTIFICATION_APPLY_WAIT_SECONDS });
      expect(wait_seconds).toBeGreaterThanOrEqual(0);
      expect(signal_seconds).toBeGreaterThan(0);
      expect(wait_seconds).toBeLessThanOrEqual(NOTIFICATION_APPLY_WAIT_SECONDS);
      expect(wait_seconds + signal_seconds).toBeLessThanOrEqual(Math.min(6, requestDeadlineSeconds({ REQUEST_TIMEOUT_SECONDS })) + 1e-9);
    }
  });

  it('keeps the documented defaults where the request deadline allows them: 4 s of wait, 2 s of signal', () => {
    expect(notificationBudget({ REQUEST_TIMEOUT_SECONDS: 30, NOTIFICATION_APPLY_WAIT_SECONDS: 4 })).toEqual({ wait_seconds: 4, signal_seconds: 2 });
  });
});
