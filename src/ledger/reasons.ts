/** Every reason the ledger fails with, and its kind (`DomainErrorKind` of src/errors.ts); see src/ledger/types.ts. */
export const LEDGER_REASONS = {
  ACCOUNT_NOT_FOUND: 'not_found',
  CURRENCY_MISMATCH: 'invalid_argument',
  INSUFFICIENT_FUNDS: 'failed_precondition',
  UNBALANCED_POSTINGS: 'invalid_argument',
  INVALID_AMOUNT: 'invalid_argument',
  IDEMPOTENCY_CONFLICT: 'already_exists',
  PENDING_TRANSFER_NOT_FOUND: 'not_found',
  PENDING_TRANSFER_ALREADY_POSTED: 'failed_precondition',
  PENDING_TRANSFER_ALREADY_VOIDED: 'failed_precondition',
  PENDING_TRANSFER_EXPIRED: 'failed_precondition',
} as const;
export type LedgerReason = keyof typeof LEDGER_REASONS;
