/**
 * Every capability's activities, merged for the one worker. Workflows see them only as types
 * (`proxyActivities<Activities>`).
 */
import type { PlatformDeps } from './platform-deps';
import { createDiagnosticsActivities } from './health/activities';
import { createPreTransferActivities } from './flows/pre-transfer/activities';
import { createPayinActivities } from './flows/payin/activities';
import { createWebhookActivities } from './webhooks/activities';
import { createDepositActivities } from './flows/deposit/activities';
import { createReconciliationActivities } from './flows/reconciliation/activities';

export function createActivities(deps: PlatformDeps) {
  return {
    ...createDiagnosticsActivities(deps),
    ...createPreTransferActivities(deps),
    ...createPayinActivities(deps),
    ...createWebhookActivities(deps),
    ...createDepositActivities(deps),
    ...createReconciliationActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
