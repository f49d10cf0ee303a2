/**
 * When a pending webhook delivery tries again, read from its recorded attempts (`webhook_delivery_attempts`): every
 * failed attempt is recorded with when the next one is due (`next_retry_at`, written by src/webhooks
 * `attemptDelivery` from the backoff its run is about to sleep; null when none follows). The record is the one
 * source: no workflow history is read, so the page answers the same whether Temporal is fast, slow or down, and the
 * time shown is exactly the one recorded.
 *
 *   delivered or failed                         NONE
 *   pending, no attempt yet                     IN_PROGRESS (waiting for its turn or making its first attempt)
 *   pending, last attempt names no next one     IN_PROGRESS (a redelivery's run, or its give-up, comes next)
 *   pending, next_retry_at ahead                SCHEDULED at next_retry_at
 *   pending, next_retry_at just passed          IN_PROGRESS (the attempt is being made: within its timeout)
 *   pending, next_retry_at long passed          NOT_SCHEDULED, at next_retry_at (nothing sent it: redeliver it)
 */
import { NextRetry } from '../gen/payments/dashboard/v1/dashboard_pb';
import type { WebhookAttemptRow, WebhookEventRow } from '../webhooks';

/** Past a due time by more than the attempt's timeout and this, a retry is taken as not coming, seconds. */
export const OVERDUE_SLACK_SECONDS = 30;

export interface RetrySchedule {
  next: NextRetry;
  /** With SCHEDULED: when the next attempt is due; with NOT_SCHEDULED: when it was due. */
  at?: Date;
}

/**
 * What comes next for `event`, from its attempts (any order). `timeoutSeconds`: WEBHOOK_TIMEOUT_SECONDS, how long an
 * attempt may take once due.
 */
export function retryScheduleOf(
  event: Pick<WebhookEventRow, 'status'>,
  attempts: ReadonlyArray<Pick<WebhookAttemptRow, 'attempt' | 'next_retry_at'>>,
  timeoutSeconds: number,
  now: Date = new Date(),
): RetrySchedule {
  if (event.status !== 'pending') return { next: NextRetry.NONE };
  const last = attempts.reduce<(typeof attempts)[number] | undefined>((latest, attempt) => (!latest || attempt.attempt > latest.attempt ? attempt : latest), undefined);
  const due = last?.next_retry_at ?? null;
  if (!due) return { next: NextRetry.IN_PROGRESS };
  if (due.getTime() > now.getTime()) return { next: NextRetry.SCHEDULED, at: due };
  if (now.getTime() - due.getTime() <= (timeoutSeconds + OVERDUE_SLACK_SECONDS) * 1000) return { next: NextRetry.IN_PROGRESS };
  return { next: NextRetry.NOT_SCHEDULED, at: due };
}
