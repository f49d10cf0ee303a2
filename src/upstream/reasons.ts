/**
 * Every reason the upstream's door fails with, and its kind: the same name and kind as the PayinService's (the
 * ApplyUpstreamNotification RPC is the PayinService's), so Area B's error table answers it as before.
 */
export const UPSTREAM_REASONS = {
  /** The notification's X-Upstream-Signature is missing or wrong (or UPSTREAM_WEBHOOK_SECRET is unset). */
  UPSTREAM_SIGNATURE_INVALID: 'unauthenticated',
} as const;
export type UpstreamReason = keyof typeof UPSTREAM_REASONS;
