/** Every reason the merchant users capability fails with, and its kind (`DomainErrorKind` of src/errors.ts). */
export const MERCHANT_USER_REASONS = {
  /** The id, token or phone names none of the merchant's active users (another tenant's is answered the same). */
  USER_NOT_FOUND: 'not_found',
} as const;
export type MerchantUserReason = keyof typeof MERCHANT_USER_REASONS;
