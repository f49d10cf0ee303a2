/**
 * Every reason the WalletService can answer (docs/architecture.md "One error model"): the wallet flow's own
 * (contract.ts), merchant authentication's, the merchant users', preorders', onboarding's (the users it creates and
 * updates), request idempotency's, the ledger's (the movements) and the platform-wide ones. Area C's answer table
 * (rest-facade/merchant/contract.ts) is a `Record` over this union and the other services Area C calls.
 */
import { COMMON_REASONS } from '../../errors';
import { IDEMPOTENCY_REASONS } from '../../idempotency/reasons';
import { LEDGER_REASONS } from '../../ledger/reasons';
import { MERCHANT_AUTH_REASONS } from '../../merchant-auth/reasons';
import { MERCHANT_USER_REASONS, ONBOARDING_REASONS } from '../../onboarding/reasons';
import { PREORDER_REASONS } from '../../preorders/reasons';
import { WALLET_REASONS } from './contract';

export const WALLET_SERVICE_REASONS = {
  ...WALLET_REASONS,
  ...MERCHANT_AUTH_REASONS,
  ...MERCHANT_USER_REASONS,
  ...PREORDER_REASONS,
  ...ONBOARDING_REASONS,
  ...IDEMPOTENCY_REASONS,
  ...LEDGER_REASONS,
  ...COMMON_REASONS,
} as const;
export type WalletServiceReason = keyof typeof WALLET_SERVICE_REASONS;
