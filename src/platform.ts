/**
 * Composition root: the dependencies every capability receives, and the construction of every Connect service.
 * Add a capability by listing its service in `rpc/services.ts` and building it here. Wiring only: each service's
 * rules are its module's.
 */
import { createTransferService } from './flows/pre-transfer/service';
import { applyPayinNotification, createPayinService } from './flows/payin/service';
import { createEventsService, type OwnerProofs } from './events/service';
import { createHealthService } from './health/service';
import { createLedgerService } from './ledger/service';
import { createWalletService } from './flows/wallet/service';
import { createAdminService } from './admin/service';
import { createInstrumentService } from './instruments/service';
import { createDepositService } from './flows/deposit/service';
import { createDashboardService } from './dashboard/service';
import { createTimelineService } from './timeline/service';
import { applyRefundNotification } from './flows/refund/notifications';
import { createRefundService } from './flows/refund/service';
import { applyPayoutNotification } from './flows/payout/notifications';
import { createPayoutService } from './flows/payout/service';
import { createSetPayoutSchedule } from './flows/payout/schedules';
import { createUpstreamNotifications } from './upstream/notifications';
import type { PlatformServices } from './rpc/services';

import type { PlatformDeps } from './platform-deps';

export type { PlatformDeps } from './platform-deps';

export type { PlatformServices } from './rpc/services';

export function createServices(deps: PlatformDeps): PlatformServices {
  // The owner proofs of the EventsService and the TimelineService: Area B's API key, Area C's signed /do-action
  // (verified and bound to the typed request as every Area C action: src/merchant-auth).
  const ownerProofs: OwnerProofs = {
    apiKey: async (api_key, context) => ({ type: 'merchant', id: (await deps.merchantAuth.requireApiKey(api_key, context)).id }),
    areaC: async (auth, request, context) => ({ type: 'merchant', id: (await deps.merchantAuth.requireMerchant({ ...request, merchantId: '', auth }, context)).merchantId }),
  };
  // The upstream's one notification door (the PayinService's ApplyUpstreamNotification RPC), dispatching by kind.
  const upstreamNotifications = createUpstreamNotifications(deps, {
    payin: (body) => applyPayinNotification(deps, body),
    refund: (notification, raw_body) => applyRefundNotification(deps, notification, raw_body),
    payout: (notification, raw_body) => applyPayoutNotification(deps, notification, raw_body),
  });
  return {
    health: createHealthService(deps),
    ledger: createLedgerService(deps),
    transfer: createTransferService(deps),
    payin: { ...createPayinService(deps), applyUpstreamNotification: upstreamNotifications },
    wallet: createWalletService(deps),
    admin: createAdminService(deps),
    instrument: createInstrumentService(deps),
    deposit: createDepositService(deps),
    dashboard: createDashboardService(deps),
    refund: createRefundService(deps),
    payout: { ...createPayoutService(deps), setPayoutSchedule: createSetPayoutSchedule(deps) },
    events: createEventsService(deps, ownerProofs),
    timeline: createTimelineService(deps, ownerProofs),
  };
}
