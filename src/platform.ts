/**
 * Composition root: the dependencies every capability receives, and the construction of every Connect service.
 * Add a capability by adding its service here and its route in `rpc/routes.ts`.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { Config } from './config';
import type { PlatformKeys } from './crypto/platform-keys';
import type { Knex } from './db/knex';
import type { HealthService } from './gen/payments/health/v1/health_pb';
import type { TransferService } from './gen/payments/transfer/v1/transfer_pb';
import { createTransferService } from './transfers/service';
import type { PayinService } from './gen/payments/payin/v1/payin_pb';
import { createPayinService } from './payins/service';
import { createHealthService } from './health/service';
import type { Ledger } from './ledger/types';
import type { LedgerService } from './gen/payments/ledger/v1/ledger_pb';
import { createLedgerService } from './ledger/service';
import type { Logger } from './logger';
import type { TemporalHandle } from './temporal/client';
import type { WalletService } from './gen/payments/wallet/v1/wallet_pb';
import { createWalletService } from './wallet/service';
import type { AdminService } from './gen/payments/admin/v1/admin_pb';
import { createAdminService } from './onboarding/admin-service';
import type { InstrumentService } from './gen/payments/instrument/v1/instrument_pb';
import { createInstrumentService } from './instruments/service';
import type { DepositService } from './gen/payments/deposit/v1/deposit_pb';
import { createDepositService } from './deposits/service';

/** What services and activities are built from. One instance per process. */
export interface PlatformDeps {
  config: Config;
  database: Knex;
  temporal: TemporalHandle;
  logger: Logger;
  /** The only writer of balances (architecture guide, "Money moves only through src/ledger"). */
  ledger: Ledger;
  keys: PlatformKeys;
}

export interface PlatformServices {
  health: ServiceImpl<typeof HealthService>;
  ledger: ServiceImpl<typeof LedgerService>;
  transfer: ServiceImpl<typeof TransferService>;
  payin: ServiceImpl<typeof PayinService>;
  wallet: ServiceImpl<typeof WalletService>;
  admin: ServiceImpl<typeof AdminService>;
  instrument: ServiceImpl<typeof InstrumentService>;
  deposit: ServiceImpl<typeof DepositService>;
}

export function createServices(deps: PlatformDeps): PlatformServices {
  return {
    health: createHealthService(deps),
    ledger: createLedgerService(deps),
    transfer: createTransferService(deps),
    payin: createPayinService(deps),
    wallet: createWalletService(deps),
    admin: createAdminService(deps),
    instrument: createInstrumentService(deps),
    deposit: createDepositService(deps),
  };
}
