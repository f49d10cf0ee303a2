/** Every reason request idempotency fails with, and its kind (`DomainErrorKind` of src/errors.ts). */
export const IDEMPOTENCY_REASONS = {
  /** The key is empty, longer than 255 characters or not visible ASCII. */
  IDEMPOTENCY_KEY_INVALID: 'invalid_argument',
  /** The key was used before with other parameters or for another operation. */
  IDEMPOTENCY_KEY_REUSED: 'invalid_argument',
  /** A request with the key is still running: retry later. */
  IDEMPOTENCY_KEY_IN_PROGRESS: 'aborted',
} as const;
export type IdempotencyReason = keyof typeof IDEMPOTENCY_REASONS;
