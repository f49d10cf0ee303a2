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
/** Every kind a DomainError may have (how the RPC layer maps it onto a Connect code). */
export const DOMAIN_ERROR_KINDS = [
  'invalid_argument',
  'not_found',
  'already_exists',
  'failed_precondition',
  'unauthenticated',
  'permission_denied',
  'resource_exhausted',
  'aborted',
  'unavailable',
  'deadline_exceeded',
  'internal',
] as const satisfies readonly DomainErrorKind[];

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

/**
 * Field name to what is wrong with it: field problem codes (src/field-problems.ts) from the services, rendered by
 * each façade area in its documented words (operator RPCs answer short English fragments).
 */
export type FieldViolations = Record<string, string[]>;

/** The detail of an error whose thrower gave none: its reason in words ("PAYIN_NOT_FOUND" → "payin not found"). */
function detailOf(reason: string): string {
  return reason.toLowerCase().replace(/_/g, ' ');
}

/**
 * A refusal of one reason of a reason table. Built only from a table, so its kind is the table's and never restated:
 * `reasonError(TABLE, 'REASON', detail, fields)`; the constructor is protected, and a subclass names its table too
 * (src/money's AmountError). `message` is the internal detail (logs, RPC callers), never the interface's wording.
 */
export class DomainError<R extends string = string> extends Error {
  /** How the error maps onto RPC codes: the reason's kind in its table. */
  readonly kind: DomainErrorKind;
  readonly reason: R;
  /** The failing fields and their problems; empty when the refusal is of the request as a whole. */
  readonly fields: FieldViolations;
  /** RATE_LIMITED: seconds until the caller may try again. */
  retryAfterSeconds?: number;

  /** @throws Error when `reason` is not one of `table`'s (a programming error) */
  protected constructor(table: ReasonKinds, reason: R, detail?: string, fields: FieldViolations = {}) {
    super(detail ?? detailOf(reason));
    if (!Object.hasOwn(table, reason)) throw new Error(`assertion failed: ${reason} is not a reason of its table`);
    this.name = 'DomainError';
    this.kind = table[reason]!;
    this.reason = reason;
    this.fields = fields;
  }

  /** The error of one reason of `table` (exported as `reasonError`). */
  static of<T extends ReasonKinds, R extends keyof T & string>(table: T, reason: R, detail?: string, fields: FieldViolations = {}): DomainError<R> {
    return new DomainError<R>(table, reason, detail, fields);
  }

  /** True when this error's reason is one of `table`'s (narrows `reason`). */
  isIn<T extends ReasonKinds>(table: T): this is DomainError<keyof T & string> {
    return Object.hasOwn(table, this.reason);
  }
}

/**
 * The error of one reason of `table`, its kind read from the table: the one way to build a DomainError.
 * @param detail short internal detail (defaults to the reason in words); not the interface's wording.
 * @param fields the failing fields and their problems (field problem codes, src/field-problems.ts).
 */
export const reasonError: <T extends ReasonKinds, R extends keyof T & string>(table: T, reason: R, detail?: string, fields?: FieldViolations) => DomainError<R> =
  DomainError.of;

/** True when `reason` is a key of `table` (narrows it). */
export function isReasonOf<T extends ReasonKinds>(table: T, reason: string): reason is keyof T & string {
  return Object.hasOwn(table, reason);
}

/** The detail of a field refusal: its first field and problem. */
function summaryOf(fields: FieldViolations): string {
  const first = Object.entries(fields)[0];
  return first ? `${first[0]}: ${first[1][0]}` : 'invalid request';
}

/**
 * A bad-input error listing every failing field: VALIDATION_FAILED, or the given reason of `table` (whose kind the
 * table says, e.g. onboarding's INVALID_PUBLIC_KEY).
 */
export function invalidFields(fields: FieldViolations): DomainError<'VALIDATION_FAILED'>;
export function invalidFields<T extends ReasonKinds, R extends keyof T & string>(fields: FieldViolations, table: T, reason: R): DomainError<R>;
export function invalidFields(fields: FieldViolations, table: ReasonKinds = COMMON_REASONS, reason = 'VALIDATION_FAILED'): DomainError {
  return reasonError(table, reason, summaryOf(fields), fields);
}

/** Asserts an invariant; a failure is a programming error, never bad input. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`assertion failed: ${message}`);
}
