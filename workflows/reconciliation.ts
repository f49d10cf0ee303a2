import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import { RUNS_PER_EXECUTION, type ReconciliationActivities, type ReconciliationWorkflowInput } from '../src/flows/reconciliation/contract';

const { reconcile } = proxyActivities<ReconciliationActivities>({
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '10 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

/**
 * ReconciliationWorkflow (docs/operations.md "Reconciliation"), id `reconciliation:<task queue>`: every
 * `interval_seconds` runs the `reconcile` activity with repairs on, and continues as new after `runs_per_execution`
 * (RUNS_PER_EXECUTION) runs so its history stays short. Each run's report is the activity's result, visible in the
 * Web UI. A run that fails is retried with backoff; one refused for good fails the workflow (visible there), and the
 * next api start starts it again.
 */
export async function reconciliationWorkflow(input: ReconciliationWorkflowInput): Promise<void> {
  const runs = input.runs_per_execution ?? RUNS_PER_EXECUTION;
  for (let run = 0; run < runs; run++) {
    await sleep(input.interval_seconds * 1000);
    await reconcile({ repair: true, grace_seconds: input.grace_seconds });
  }
  await continueAsNew<typeof reconciliationWorkflow>(input);
}
