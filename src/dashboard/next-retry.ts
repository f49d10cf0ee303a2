/**
 * When a pending webhook delivery tries again, read from its WebhookDeliveryWorkflow (id = webhook id): the newest
 * events of its history, newest first. A timer started and not yet fired is the backoff the run waits out (next
 * attempt at its start plus its duration); a fired timer, or a run with no timer yet, is an attempt being made; a
 * closed run, or none, leaves the event pending with nothing scheduled (a redelivery or reconciliation sends it).
 *
 * The delivery records (`webhook_delivery_attempts`) hold what happened; only the workflow knows what comes next,
 * so this asks Temporal, with a short deadline of its own: a page of deliveries still answers, with the schedule
 * unknown, while Temporal is slow or down.
 */
import { tsToMs } from '@temporalio/common/lib/time';
import type { PlatformDeps } from '../platform-deps';
import { NextRetry } from '../gen/payments/dashboard/v1/dashboard_pb';

/** How long one schedule read may take, ms. */
const READ_DEADLINE_MS = 2000;
/** History events read, newest first: a backoff's timer is among the last few of its run. */
const EVENTS_READ = 16;
/** gRPC status NOT_FOUND: no run of this id (or its history is past retention). */
const GRPC_NOT_FOUND = 5;

export interface RetrySchedule {
  next: NextRetry;
  /** With SCHEDULED: when the next attempt is due. */
  at?: Date;
}

/** A protobuf Duration ({ seconds, nanos }) in ms. */
function durationMs(duration: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return Number(duration?.seconds ?? 0) * 1000 + Math.round((duration?.nanos ?? 0) / 1e6);
}

/** What comes next for the pending delivery `webhookId`. Never throws: a failed read is UNKNOWN. */
export async function retryScheduleOf(deps: Pick<PlatformDeps, 'temporal' | 'config'>, webhookId: string): Promise<RetrySchedule> {
  try {
    const { history } = await deps.temporal.connection.withDeadline(Date.now() + READ_DEADLINE_MS, () =>
      deps.temporal.client.workflowService.getWorkflowExecutionHistoryReverse({
        namespace: deps.config.TEMPORAL_NAMESPACE,
        execution: { workflowId: webhookId },
        maximumPageSize: EVENTS_READ,
      }),
    );
    for (const event of history?.events ?? []) {
      if (
        event.workflowExecutionCompletedEventAttributes ||
        event.workflowExecutionFailedEventAttributes ||
        event.workflowExecutionTimedOutEventAttributes ||
        event.workflowExecutionTerminatedEventAttributes ||
        event.workflowExecutionCanceledEventAttributes ||
        event.workflowExecutionContinuedAsNewEventAttributes
      ) {
        return { next: NextRetry.NOT_SCHEDULED };
      }
      if (event.timerFiredEventAttributes) return { next: NextRetry.IN_PROGRESS };
      if (event.timerStartedEventAttributes) {
        return { next: NextRetry.SCHEDULED, at: new Date(tsToMs(event.eventTime) + durationMs(event.timerStartedEventAttributes.startToFireTimeout)) };
      }
    }
    // A run that has not backed off yet is making its attempt.
    return { next: NextRetry.IN_PROGRESS };
  } catch (error) {
    if ((error as { code?: number }).code === GRPC_NOT_FOUND) return { next: NextRetry.NOT_SCHEDULED };
    return { next: NextRetry.UNKNOWN };
  }
}
