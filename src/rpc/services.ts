/**
 * The one list of the platform's Connect services: name → generated service descriptor. The composition root
 * (src/platform.ts) implements each, `rpc/routes.ts` registers each and `rpc/clients.ts` builds a client of each
 * from this list, so adding a service is one line here plus its implementation.
 */
import type { Client, ServiceImpl } from '@connectrpc/connect';
import { AdminService } from '../gen/payments/admin/v1/admin_pb';
import { DashboardService } from '../gen/payments/dashboard/v1/dashboard_pb';
import { DepositService } from '../gen/payments/deposit/v1/deposit_pb';
import { EventsService } from '../gen/payments/events/v1/events_pb';
import { RefundService } from '../gen/payments/refund/v1/refund_pb';
import { PayoutService } from '../gen/payments/payout/v1/payout_pb';
import { HealthService } from '../gen/payments/health/v1/health_pb';
import { InstrumentService } from '../gen/payments/instrument/v1/instrument_pb';
import { LedgerService } from '../gen/payments/ledger/v1/ledger_pb';
import { PayinService } from '../gen/payments/payin/v1/payin_pb';
import { TransferService } from '../gen/payments/transfer/v1/transfer_pb';
import { TimelineService } from '../gen/payments/timeline/v1/timeline_pb';
import { WalletService } from '../gen/payments/wallet/v1/wallet_pb';

export const PLATFORM_SERVICES = {
  health: HealthService,
  ledger: LedgerService,
  transfer: TransferService,
  payin: PayinService,
  wallet: WalletService,
  admin: AdminService,
  instrument: InstrumentService,
  deposit: DepositService,
  dashboard: DashboardService,
  events: EventsService,
  timeline: TimelineService,
  refund: RefundService,
  payout: PayoutService,
} as const;

export type PlatformServiceName = keyof typeof PLATFORM_SERVICES;

/** An implementation of every platform service (built by `createServices` in src/platform.ts). */
export type PlatformServices = { [Name in PlatformServiceName]: ServiceImpl<(typeof PLATFORM_SERVICES)[Name]> };

/** A Connect client of every platform service. */
export type PlatformClients = { [Name in PlatformServiceName]: Client<(typeof PLATFORM_SERVICES)[Name]> };

export const PLATFORM_SERVICE_NAMES = Object.keys(PLATFORM_SERVICES) as PlatformServiceName[];
