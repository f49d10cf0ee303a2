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
