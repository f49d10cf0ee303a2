/**
 * Every reason the RefundService can answer: the refund flow's own (contract.ts), the Area B API key's
 * (src/merchant-auth `requireApiKey`, shared: UNAUTHENTICATED, MERCHANT_SUSPENDED, RATE_LIMITED), request idempotency's,
 * the ledger's and the platform-wide ones. Area B's answer table is a `Record` over this union too.
 */
import { COMMON_REASONS } from '../../errors';
import { IDEMPOTENCY_REASONS } from '../../idempotency/reasons';
import { LEDGER_REASONS } from '../../ledger/reasons';
import { MERCHANT_AUTH_REASONS } from '../../merchant-auth/reasons';
import { REFUND_REASONS } from './contract';

export const REFUND_SERVICE_REASONS = { ...REFUND_REASONS, MERCHANT_SUSPENDED: MERCHANT_AUTH_REASONS.MERCHANT_SUSPENDED, ...IDEMPOTENCY_REASONS, ...LEDGER_REASONS, ...COMMON_REASONS } as const;
export type RefundServiceReason = keyof typeof REFUND_SERVICE_REASONS;
