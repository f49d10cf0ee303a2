/**
 * Every capability's activities, merged for the one worker. Workflows see them only as types
 * (`proxyActivities<Activities>`).
 */
import type { PlatformDeps } from './platform';
import { createDiagnosticsActivities } from './health/activities';
import { createTransferActivities } from './transfers/activities';
import { createPayinActivities } from './payins/activities';
import { createDepositActivities } from './deposits/activities';

export function createActivities(deps: PlatformDeps) {
  return {
    ...createDiagnosticsActivities(deps),
    ...createTransferActivities(deps),
    ...createPayinActivities(deps),
    ...createDepositActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
