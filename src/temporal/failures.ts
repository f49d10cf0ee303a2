/**
 * Reads a flow's reason back out of a failed Temporal call (workflow Update, start, result). A workflow or activity
 * rejects with `ApplicationFailure.type` = a reason of its flow's contract; the client wraps it one or more times
 * (`WorkflowUpdateFailedError` → `ApplicationFailure`, or `ActivityFailure` → `ApplicationFailure`).
 */
import { ApplicationFailure } from '@temporalio/common';
import { isReasonOf, reasonError, type DomainError, type ReasonKinds } from '../errors';

const MAX_CAUSE_DEPTH = 8;

/** The `ApplicationFailure.type` nearest the top of `error`'s cause chain, or undefined. */
export function failureType(error: unknown): string | undefined {
  let cause: unknown = error;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && cause; depth++) {
    if (cause instanceof ApplicationFailure && cause.type) return cause.type;
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * The DomainError of a Temporal failure whose type is a reason of `table`, or undefined when the failure is not
 * one of the flow's business reasons (an infrastructure fault the caller re-throws).
 */
export function domainErrorFromFailure<T extends ReasonKinds>(error: unknown, table: T): DomainError<keyof T & string> | undefined {
  const type = failureType(error);
  if (!type || !isReasonOf(table, type)) return undefined;
  return reasonError(table, type);
}
