/** Every reason onboarding and the AdminService fail with, and its kind (`DomainErrorKind` of src/errors.ts). */
export const ONBOARDING_REASONS = {
  PARTNER_NOT_FOUND: 'not_found',
  MERCHANT_NOT_FOUND: 'not_found',
  USER_NOT_FOUND: 'not_found',
  WALLET_NOT_FOUND: 'not_found',
  CREDENTIAL_NOT_FOUND: 'not_found',
  DUPLICATE_PHONE_NUMBER: 'already_exists',
  DUPLICATE_EMAIL: 'already_exists',
  INVALID_PUBLIC_KEY: 'invalid_argument',
  INVALID_CURRENCY: 'invalid_argument',
} as const;
export type OnboardingReason = keyof typeof ONBOARDING_REASONS;

/**
 * Every reason the queries of a merchant's own users (users.ts: `merchantUser`, `userNotFound`) fail with, and its
 * kind: a table of its own because the services that only read a merchant's users (deposit, instruments) answer
 * these and none of the rest of onboarding's.
 */
export const MERCHANT_USER_REASONS = {
  /** The id, token or phone names none of the merchant's active users (another tenant's is answered the same). */
  USER_NOT_FOUND: 'not_found',
} as const;
export type MerchantUserReason = keyof typeof MERCHANT_USER_REASONS;
