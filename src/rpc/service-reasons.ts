/**
 * What each platform service a façade calls can fail with, by client name (docs/architecture.md "One error model"):
 * each service's reason table, exported beside it. `readRpcFailure(error, 'wallet', …)` (./errors.ts) reads an RPC
 * failure with its reason typed by the services called, and each façade area's answer table is a `Record` over the
 * union of the services it calls, so a reason added to any table a service uses does not compile until every area
 * that can receive it answers it.
 */
import { DEPOSIT_SERVICE_REASONS } from '../flows/deposit/reasons';
import { PAYIN_SERVICE_REASONS } from '../flows/payin/reasons';
import { REFUND_SERVICE_REASONS } from '../flows/refund/reasons';
import { PAYOUT_SERVICE_REASONS } from '../flows/payout/reasons';
import { TRANSFER_SERVICE_REASONS } from '../flows/pre-transfer/reasons';
import { WALLET_SERVICE_REASONS } from '../flows/wallet/reasons';
import { INSTRUMENT_SERVICE_REASONS } from '../instruments/service-reasons';
import { MERCHANT_AUTH_REASONS } from '../merchant-auth/reasons';
import { TIMELINE_SERVICE_REASONS } from '../timeline/reasons';
import type { PlatformServiceName } from './services';

export const REASONS_BY_SERVICE = {
  transfer: TRANSFER_SERVICE_REASONS,
  payin: PAYIN_SERVICE_REASONS,
  wallet: WALLET_SERVICE_REASONS,
  deposit: DEPOSIT_SERVICE_REASONS,
  instrument: INSTRUMENT_SERVICE_REASONS,
  // The EventsService answers its own VALIDATION_FAILED and the refusals of the owner proofs it checks: Area B's API
  // key, checked by the PayinService's authentication (a subset of the PayinService's reasons), and Area C's signed
  // /do-action, checked by merchant authentication.
  events: { ...PAYIN_SERVICE_REASONS, ...MERCHANT_AUTH_REASONS },
  // The TimelineService: PAYMENT_NOT_FOUND and the same owner proofs as the EventsService.
  timeline: TIMELINE_SERVICE_REASONS,
  refund: REFUND_SERVICE_REASONS,
  payout: PAYOUT_SERVICE_REASONS,
} as const satisfies Partial<Record<PlatformServiceName, object>>;

/** The platform services a façade calls. */
export type FacadeService = keyof typeof REASONS_BY_SERVICE;

/** Every reason the services `S` can answer. */
export type ServiceReason<S extends FacadeService> = { [Name in S]: keyof (typeof REASONS_BY_SERVICE)[Name] & string }[S];
