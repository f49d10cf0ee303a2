/**
 * Every capability's activities, merged for the one worker. Workflows see them only as types
 * (`proxyActivities<Activities>`).
 */
import type { PlatformDeps } from './platform';
import { createDiagnosticsActivities } from './health/activities';

export function createActivities(deps: PlatformDeps) {
  return {
    ...createDiagnosticsActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
