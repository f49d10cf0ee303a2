/**
 * Composition root: the dependencies every capability receives, and the construction of every Connect service.
 * Add a capability by adding its service here and its route in `rpc/routes.ts`.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { Config } from './config';
import type { PlatformKeys } from './crypto/platform-keys';
import type { Knex } from './db/knex';
import type { HealthService } from './gen/payments/health/v1/health_pb';
import { createHealthService } from './health/service';
import type { Ledger } from './ledger/types';
import type { Logger } from './logger';
import type { TemporalHandle } from './temporal/client';

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
}

export function createServices(deps: PlatformDeps): PlatformServices {
  return {
    health: createHealthService(deps),
  };
}
