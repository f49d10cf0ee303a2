/**
 * Every reason the DepositService can answer (docs/architecture.md "One error model"): the deposit flow's own
 * (contract.ts, also its workflow's and activities' failure types), merchant authentication's, the merchant users',
 * preorders', the instruments' (the card or account deposited from, the hosted page's guest card), field
 * decryption's, request idempotency's and the platform-wide ones. Area C's answer table
 * (rest-facade/merchant/contract.ts) is a `Record` over this union and the other services Area C calls.
 */
import { FIELD_DECRYPTION_REASONS } from '../../crypto/reasons';
import { COMMON_REASONS } from '../../errors';
import { IDEMPOTENCY_REASONS } from '../../idempotency/reasons';
import { INSTRUMENT_REASONS } from '../../instruments/reasons';
import { MERCHANT_AUTH_REASONS } from '../../merchant-auth/reasons';
import { MERCHANT_USER_REASONS } from '../../onboarding/reasons';
import { PREORDER_REASONS } from '../../preorders/reasons';
import { DEPOSIT_REASONS } from './contract';

export const DEPOSIT_SERVICE_REASONS = {
  ...DEPOSIT_REASONS,
  ...MERCHANT_AUTH_REASONS,
  ...MERCHANT_USER_REASONS,
  ...PREORDER_REASONS,
  ...INSTRUMENT_REASONS,
  ...FIELD_DECRYPTION_REASONS,
  ...IDEMPOTENCY_REASONS,
  ...COMMON_REASONS,
} as const;
export type DepositServiceReason = keyof typeof DEPOSIT_SERVICE_REASONS;
