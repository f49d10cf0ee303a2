/**
 * A flow's reasons across Temporal (docs/architecture.md "One error model"). An activity refuses with
 * `reasonFailure(TABLE, 'REASON', detail)`: a non-retryable `ApplicationFailure` whose type is a reason of its flow's
 * table; the workflow lets it through, and the client wraps it (`WorkflowUpdateFailedError` → `ActivityFailure` →
 * `ApplicationFailure`); the service reads the reason back with `domainErrorFromFailure`.
 */
import { ApplicationFailure } from '@temporalio/common';
import { isReasonOf, reasonError, type DomainError, type ReasonKinds } from '../errors';

const MAX_CAUSE_DEPTH = 8;

/**
 * An activity's refusal of one reason of `table`: non-retryable (a retry would meet the same record), its type the
 * reason. @param detail internal detail (the failure's message, in the workflow history), never the interface's words
 */
export function reasonFailure<T extends ReasonKinds, R extends keyof T & string>(_table: T, reason: R, detail: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(detail, reason);
}

/** The `ApplicationFailure` nearest the top of `error`'s cause chain that has a type, or undefined. */
function typedFailure(error: unknown): ApplicationFailure | undefined {
  let cause: unknown = error;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && cause; depth++) {
    if (cause instanceof ApplicationFailure && cause.type) return cause;
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The `ApplicationFailure.type` nearest the top of `error`'s cause chain, or undefined. */
export function failureType(error: unknown): string | undefined {
  return typedFailure(error)?.type ?? undefined;
}

/**
 * The DomainError of a Temporal failure whose type is a reason of `table` (its message kept as the detail), or
 * undefined when the failure is not one of the flow's business reasons (an infrastructure fault the caller
 * re-throws).
 */
export function domainErrorFromFailure<T extends ReasonKinds>(error: unknown, table: T): DomainError<keyof T & string> | undefined {
  const failure = typedFailure(error);
  const type = failure?.type;
  if (!type || !isReasonOf(table, type)) return undefined;
  return reasonError(table, type, failure.message || undefined);
}
