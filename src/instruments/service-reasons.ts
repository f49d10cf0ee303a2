/**
 * Every reason the InstrumentService can answer (docs/architecture.md "One error model"): the instruments' own
 * (./reasons.ts), merchant authentication's, the merchant users', field decryption's and the platform-wide ones.
 * Area C's answer table (rest-facade/merchant/contract.ts) is a `Record` over this union and the other services
 * Area C calls.
 */
import { FIELD_DECRYPTION_REASONS } from '../crypto/reasons';
import { COMMON_REASONS } from '../errors';
import { MERCHANT_AUTH_REASONS } from '../merchant-auth/reasons';
import { MERCHANT_USER_REASONS } from '../onboarding/reasons';
import { INSTRUMENT_REASONS } from './reasons';

export const INSTRUMENT_SERVICE_REASONS = {
  ...INSTRUMENT_REASONS,
  ...MERCHANT_AUTH_REASONS,
  ...MERCHANT_USER_REASONS,
  ...FIELD_DECRYPTION_REASONS,
  ...COMMON_REASONS,
} as const;
export type InstrumentServiceReason = keyof typeof INSTRUMENT_SERVICE_REASONS;
