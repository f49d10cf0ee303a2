/**
 * One error model for every capability (docs/architecture.md, "One error model").
 *
 * Every reason a service can fail with is listed once, with its kind, in a reason table: the flows' tables live in
 * their `contract.ts` (so workflows use the same names as `ApplicationFailure.type`), the platform-wide ones below,
 * and `src/reasons.ts` merges them into the registry. Services throw `DomainError` built with `reasonError(table,
 * reason, detail)`; the RPC error interceptor maps `kind` to a Connect `Code` and sends `reason` and `fields` in an
 * `ErrorDetail`; each façade area maps `reason` to its documented code and message in one exhaustive table.
 *
 * `message` is a short internal detail for logs and RPC callers, never the interface's documented wording: that
 * belongs to the façade area contracts.
 */

/** How a domain error maps onto RPC codes. */
export type DomainErrorKind =
  | 'invalid_argument' // bad input: a field or the request as a whole
  | 'not_found'
  | 'already_exists'
  | 'failed_precondition' // state forbids the operation (used, expired, insufficient funds)
  | 'unauthenticated'
  | 'permission_denied'
  | 'resource_exhausted' // a rate limit or lockout
  | 'aborted' // a concurrent request holds the resource; retry later
  | 'unavailable' // an outside dependency failed (upstream provider, Temporal)
  | 'deadline_exceeded'
  | 'internal';

/** A reason table: every reason of one capability with its kind. */
export type ReasonKinds = Readonly<Record<string, DomainErrorKind>>;

/** Reasons any service may answer (request-level validation, authentication, infrastructure). */
export const COMMON_REASONS = {
  VALIDATION_FAILED: 'invalid_argument',
  /** An amount the money module refused (not a number, too many decimals, not positive). */
  INVALID_AMOUNT: 'invalid_argument',
  UNAUTHENTICATED: 'unauthenticated',
  PERMISSION_DENIED: 'permission_denied',
  RATE_LIMITED: 'resource_exhausted',
  UNAVAILABLE: 'unavailable',
  DEADLINE_EXCEEDED: 'deadline_exceeded',
  INTERNAL: 'internal',
} as const satisfies ReasonKinds;
export type CommonReason = keyof typeof COMMON_REASONS;

/** Field name to human-readable messages, as the Area B and C envelopes list them. */
export type FieldViolations = Record<string, string[]>;

export class DomainError<R extends string = string> extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    readonly reason: R,
    message: string,
    readonly fields: FieldViolations = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }

  /** RATE_LIMITED: seconds until the caller may try again. */
  retryAfterSeconds?: number;

  /** True when this error's reason is one of `table`'s (narrows `reason`). */
  isIn<T extends ReasonKinds>(table: T): this is DomainError<keyof T & string> {
    return Object.hasOwn(table, this.reason);
  }
}

/**
 * The error of one reason of `table`, its kind read from the table.
 * @param detail short internal detail (defaults to the reason); not the interface's wording.
 */
export function reasonError<T extends ReasonKinds, R extends keyof T & string>(
  table: T,
  reason: R,
  detail?: string,
  fields: FieldViolations = {},
): DomainError<R> {
  return new DomainError(table[reason] as DomainErrorKind, reason, detail ?? reason.toLowerCase().replace(/_/g, ' '), fields);
}

/** True when `reason` is a key of `table` (narrows it). */
export function isReasonOf<T extends ReasonKinds>(table: T, reason: string): reason is keyof T & string {
  return Object.hasOwn(table, reason);
}

/** A bad-input error listing every failing field. */
export function invalidFields(fields: FieldViolations, reason = 'VALIDATION_FAILED'): DomainError {
  const first = Object.entries(fields)[0];
  const summary = first ? `${first[0]}: ${first[1][0]}` : 'invalid request';
  return new DomainError('invalid_argument', reason, summary, fields);
}

/** Asserts an invariant; a failure is a programming error, never bad input. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`assertion failed: ${message}`);
}
