/**
 * Every reason the PayoutService can answer: the payout flow's own (contract.ts), the Area B API key's
 * and Area C's signed action (src/merchant-auth), the bank account's (src/instruments), request idempotency's, the ledger's and the platform-wide ones.
 */
import { COMMON_REASONS } from '../../errors';
import { IDEMPOTENCY_REASONS } from '../../idempotency/reasons';
import { LEDGER_REASONS } from '../../ledger/reasons';
import { INSTRUMENT_REASONS } from '../../instruments/reasons';
import { MERCHANT_AUTH_REASONS } from '../../merchant-auth/reasons';
import { PAYOUT_REASONS } from './contract';

export const PAYOUT_SERVICE_REASONS = { ...PAYOUT_REASONS, ...MERCHANT_AUTH_REASONS, ...INSTRUMENT_REASONS, ...IDEMPOTENCY_REASONS, ...LEDGER_REASONS, ...COMMON_REASONS } as const;
export type PayoutServiceReason = keyof typeof PAYOUT_SERVICE_REASONS;
