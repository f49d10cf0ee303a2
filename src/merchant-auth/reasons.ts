/** Every reason merchant authentication fails with (`DomainErrorKind` of src/errors.ts). */
export const MERCHANT_AUTH_REASONS = {
  MERCHANT_UNAUTHENTICATED: 'unauthenticated',
  SESSION_MISSING: 'unauthenticated',
  SESSION_INVALID: 'unauthenticated',
  SESSION_EXPIRED: 'unauthenticated',
  INVALID_SIGNATURE: 'invalid_argument',
  LOGIN_FAILED: 'invalid_argument',
  /** The signed login's timestamp (optional) was sent but is not Unix seconds, or lies outside MERCHANT_LOGIN_WINDOW_SECONDS. */
  LOGIN_TIMESTAMP_INVALID: 'invalid_argument',
  /** The signed login body, carrying a timestamp, was accepted before (a replay). */
  LOGIN_REPLAYED: 'invalid_argument',
  /** Area B: the API key's merchant is suspended (the same reason and kind as the PayinService's). */
  MERCHANT_SUSPENDED: 'permission_denied',
} as const;
export type MerchantAuthReason = keyof typeof MERCHANT_AUTH_REASONS;
