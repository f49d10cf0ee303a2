/**
 * Every reason the TimelineService answers (docs/timeline.md): its own, and the refusals of the owner proofs it checks
 * (Area B's API key, checked by the PayinService's authentication: a subset of the PayinService's reasons; Area C's
 * signed /do-action, checked by merchant authentication).
 */
import { PAYIN_SERVICE_REASONS } from '../flows/payin/reasons';
import { MERCHANT_AUTH_REASONS } from '../merchant-auth/reasons';

export const TIMELINE_REASONS = {
  /** No payment has this reference, or it is not the caller's (one answer for both). */
  PAYMENT_NOT_FOUND: 'not_found',
} as const;

export const TIMELINE_SERVICE_REASONS = { ...TIMELINE_REASONS, ...PAYIN_SERVICE_REASONS, ...MERCHANT_AUTH_REASONS } as const;
export type TimelineServiceReason = keyof typeof TIMELINE_SERVICE_REASONS;
