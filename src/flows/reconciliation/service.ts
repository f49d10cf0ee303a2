/**
 * Starting the scheduled reconciliation and running one on demand (`payments admin reconcile`, through the
 * AdminService). The schedule is one ReconciliationWorkflow per task queue, started by every api process at boot;
 * the first start wins and the others find it running.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { PlatformDeps } from '../../platform-deps';
import { reconciliationWorkflow } from '../../../workflows/reconciliation';
import { reconcile } from './activities';
import { reconciliationWorkflowId, type ReconciliationRepairs, type ReconciliationReport } from './contract';

/** Starts the scheduled reconciliation unless RECONCILE_INTERVAL_SECONDS is 0 or one already runs. */
export async function startReconciliationSchedule(deps: PlatformDeps): Promise<void> {
  const interval_seconds = deps.config.RECONCILE_INTERVAL_SECONDS;
  if (interval_seconds === 0) return;
  try {
    await deps.temporal.client.workflow.start(reconciliationWorkflow, {
      taskQueue: deps.temporal.taskQueue,
      workflowId: reconciliationWorkflowId(deps.temporal.taskQueue),
      args: [{ interval_seconds, grace_seconds: deps.config.RECONCILE_GRACE_SECONDS }],
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** One reconciliation now, in this process, repairing through `repairs`. `repair` false: report only. */
export function reconcileNow(
  deps: PlatformDeps,
  repairs: ReconciliationRepairs,
  options: { repair: boolean; grace_seconds?: number },
): Promise<ReconciliationReport> {
  return reconcile(deps, repairs, { repair: options.repair, grace_seconds: options.grace_seconds ?? deps.config.RECONCILE_GRACE_SECONDS });
}
