/** Every reason the merchant dashboard's service fails with (`DomainErrorKind` of src/errors.ts). */
export const DASHBOARD_REASONS = {
  /** No live session has this token: unknown, expired, signed out, or its merchant is suspended. */
  SESSION_INVALID: 'unauthenticated',
  /** A changing call without its session's CSRF token (absent, another session's, or altered). */
  CSRF_TOKEN_INVALID: 'permission_denied',
  /** Wrong API user name or password (one answer for both, and for a suspended merchant). */
  LOGIN_FAILED: 'invalid_argument',
  /** No webhook delivery of the session's merchant has this id (another merchant's included). */
  WEBHOOK_NOT_FOUND: 'not_found',
} as const;
export type DashboardReason = keyof typeof DASHBOARD_REASONS;
