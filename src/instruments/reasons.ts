/** Every reason the InstrumentService fails with, and its kind (`DomainErrorKind` of src/errors.ts). */
export const INSTRUMENT_REASONS = {
  /** No instrument of the merchant (and user) with this token, or not of the kind the service takes. */
  INSTRUMENT_NOT_FOUND: 'not_found',
  /** A bank account used before its activation. */
  INSTRUMENT_NOT_ACTIVATED: 'failed_precondition',
  /** No bank account waits for this activation code. */
  ACTIVATION_NOT_FOUND: 'not_found',
  /** An encrypted field did not decrypt or its plaintext was refused (one answer for both: no padding oracle). */
  FIELD_NOT_DECRYPTABLE: 'invalid_argument',
  /** The card's expiry has passed. */
  CARD_EXPIRED: 'invalid_argument',
} as const;
export type InstrumentReason = keyof typeof INSTRUMENT_REASONS;
