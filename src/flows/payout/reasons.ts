/**
 * Every reason the PayoutService can answer: the payout flow's own (contract.ts), the Area B API key's
 * (src/merchant-auth), request idempotency's, the ledger's and the platform-wide ones.
 */
import { COMMON_REASONS } from '../../errors';
import { IDEMPOTENCY_REASONS } from '../../idempotency/reasons';
import { LEDGER_REASONS } from '../../ledger/reasons';
import { MERCHANT_AUTH_REASONS } from '../../merchant-auth/reasons';
import { PAYOUT_REASONS } from './contract';

export const PAYOUT_SERVICE_REASONS = { ...PAYOUT_REASONS, MERCHANT_SUSPENDED: MERCHANT_AUTH_REASONS.MERCHANT_SUSPENDED, ...IDEMPOTENCY_REASONS, ...LEDGER_REASONS, ...COMMON_REASONS } as const;
export type PayoutServiceReason = keyof typeof PAYOUT_SERVICE_REASONS;
