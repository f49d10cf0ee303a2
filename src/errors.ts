/**
 * One error model for every capability (architecture guide, "One error model").
 *
 * Services throw `DomainError` with a stable `reason` (e.g. `PRE_TRANSFER_USED`) and optional field violations.
 * The RPC error interceptor maps it to a `ConnectError` whose code comes from `kind`, and whose `ErrorDetail`
 * carries `reason` and `fields`; each façade router maps `reason` to its area's documented code and message.
 */

/** How a domain error maps onto RPC codes. */
export type DomainErrorKind =
  | 'invalid_argument' // bad input: a field or the request as a whole
  | 'not_found'
  | 'already_exists'
  | 'failed_precondition' // state forbids the operation (used, expired, insufficient funds)
  | 'unauthenticated'
  | 'permission_denied'
  | 'unavailable' // an outside dependency failed (upstream provider)
  | 'internal';

/** Field name to human-readable messages, as the Area B and C envelopes list them. */
export type FieldViolations = Record<string, string[]>;

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    readonly reason: string,
    message: string,
    readonly fields: FieldViolations = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
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
