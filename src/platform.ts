/**
 * Composition root: the dependencies every capability receives, and the construction of every Connect service.
 * Add a capability by listing its service in `rpc/services.ts` and building it here.
 */
import { createTransferService } from './flows/pre-transfer/service';
import { apiKeyAuthentication, createPayinService } from './flows/payin/service';
import { createEventsService, type OwnerProofs } from './events/service';
import { createHealthService } from './health/service';
import { createLedgerService } from './ledger/service';
import { createWalletService } from './flows/wallet/service';
import { createAdminService } from './admin/service';
import { createInstrumentService } from './instruments/service';
import { createDepositService } from './flows/deposit/service';
import { createDashboardService } from './dashboard/service';
import { createTimelineService } from './timeline/service';
import { receiveRefundNotification } from './flows/refund/service';
import { createRefundService } from './flows/refund/rpc';
import type { RefundNotificationReceiver } from './flows/payin/upstream-refunds';
import type { PlatformServices } from './rpc/services';

import type { PlatformDeps } from './platform-deps';

export type { PlatformDeps } from './platform-deps';

export type { PlatformServices } from './rpc/services';

/** The refund flow's side of the upstream notification route: a verified refund notification recorded and handed on. */
function refundNotificationReceiver(deps: PlatformDeps): RefundNotificationReceiver {
  return async (notification, raw_body) => {
    const received = await receiveRefundNotification(deps, notification, raw_body);
    return { applied: received.applied, invoice_reference: received.refund?.invoice_reference ?? '', status: notification.status };
  };
}

export function createServices(deps: PlatformDeps): PlatformServices {
  // One API-key check (and cache) for Area B's services: the PayinService, and the EventsService's Area B proof.
  const merchantOfApiKey = apiKeyAuthentication(deps);
  // The owner proofs of the EventsService and the TimelineService: Area B's API key, Area C's signed /do-action
  // (verified and bound to the typed request as every Area C action: src/merchant-auth).
  const ownerProofs: OwnerProofs = {
    apiKey: async (api_key, context) => ({ type: 'merchant', id: (await merchantOfApiKey(api_key, context)).id }),
    areaC: async (auth, request, context) => ({ type: 'merchant', id: (await deps.merchantAuth.requireMerchant({ ...request, merchantId: '', auth }, context)).merchantId }),
  };
  return {
    health: createHealthService(deps),
    ledger: createLedgerService(deps),
    transfer: createTransferService(deps),
    payin: createPayinService(deps, merchantOfApiKey, refundNotificationReceiver(deps)),
    wallet: createWalletService(deps),
    admin: createAdminService(deps),
    instrument: createInstrumentService(deps),
    deposit: createDepositService(deps),
    dashboard: createDashboardService(deps),
    refund: createRefundService(deps, merchantOfApiKey),
    events: createEventsService(deps, ownerProofs),
    timeline: createTimelineService(deps, ownerProofs),
  };
}
