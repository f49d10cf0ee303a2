/** Every reason the platform's field decryption fails with, and its kind (`DomainErrorKind` of src/errors.ts). */
export const FIELD_DECRYPTION_REASONS = {
  /** An encrypted field did not decrypt or its plaintext was refused (one answer for both: no padding oracle). */
  FIELD_NOT_DECRYPTABLE: 'invalid_argument',
} as const;
export type FieldDecryptionReason = keyof typeof FIELD_DECRYPTION_REASONS;
