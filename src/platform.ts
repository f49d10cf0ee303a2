/**
 * Composition root: the dependencies every capability receives, and the construction of every Connect service.
 * Add a capability by listing its service in `rpc/services.ts` and building it here.
 */
import type { Config } from './config';
import type { PlatformKeys } from './crypto/platform-keys';
import type { Knex } from './db/knex';
import { createTransferService } from './transfers/service';
import { createPayinService } from './payins/service';
import { createHealthService } from './health/service';
import type { Ledger } from './ledger/types';
import { createLedgerService } from './ledger/service';
import type { Logger } from './logger';
import type { TemporalHandle } from './temporal/client';
import { createWalletService } from './wallet/service';
import { createAdminService } from './onboarding/admin-service';
import { createInstrumentService } from './instruments/service';
import { createDepositService } from './deposits/service';
import type { PlatformServices } from './rpc/services';

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

export type { PlatformServices } from './rpc/services';

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
