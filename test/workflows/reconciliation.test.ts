/**
 * ReconciliationWorkflow with a mocked `reconcile` activity on a real Temporal dev server (test/workflows/bed.ts):
 * one repairing run every `interval_seconds` (short here), continue-as-new after `runs_per_execution` runs with the
 * same input, a run retried after an infrastructure fault, and a refusal that ends the schedule visibly.
 */
import { ApplicationFailure } from '@temporalio/common';
import { type ReconciliationActivities, type ReconciliationReport, type ReconciliationWorkflowInput } from '../../src/flows/reconciliation/contract';
import { reconciliationWorkflow } from '../../workflows/reconciliation';
import { eventually, failureOf, historyHas, startWorkflowBed, timersOf, type WorkflowBed } from './bed';

const REPORT: ReconciliationReport = { started_at: '2026-01-01T00:00:00.000Z', findings: [], repaired: 0, reported: 0, idempotency_keys_purged: 0, events_purged: 0 };

describe('ReconciliationWorkflow', () => {
  let bed: WorkflowBed<ReconciliationActivities>;

  beforeAll(async () => {
    bed = await startWorkflowBed<ReconciliationActivities>({ reconcile: async () => REPORT });
  });
  afterAll(() => bed.stop());

  async function start(answers: Partial<ReconciliationActivities> = {}, input: Partial<ReconciliationWorkflowInput> = {}) {
    const { workflowId, calls } = bed.workflow('reconciliation', answers);
    const args: [ReconciliationWorkflowInput] = [{ interval_seconds: 0.05, grace_seconds: 7, ...input }];
    const handle = await bed.client.workflow.start(reconciliationWorkflow, { taskQueue: bed.taskQueue, workflowId, args });
    return { handle, calls };
  }

  it('runs a repairing reconciliation after every interval, with the grace it was given', async () => {
    const { handle, calls } = await start();
    await eventually(() => calls.length >= 3);
    await handle.terminate('enough runs');
    expect(calls.slice(0, 3).map(({ name, input }) => [name, input])).toEqual(Array(3).fill(['reconcile', { repair: true, grace_seconds: 7 }]));
    const timers = await timersOf(handle);
    expect(timers.length).toBeGreaterThanOrEqual(3);
    expect(new Set(timers)).toEqual(new Set([50]));
  });

  it('continues as new with the same input after runs_per_execution runs, so its history stays short', async () => {
    const { handle, calls } = await start({}, { runs_per_execution: 3 });
    const firstRun = (await handle.describe()).runId;
    await eventually(() => calls.length >= 4);
    const first = bed.client.workflow.getHandle(handle.workflowId, firstRun);
    expect(await historyHas(first, 'WORKFLOW_EXECUTION_CONTINUED_AS_NEW')).toBe(true);
    expect(await timersOf(first)).toEqual([50, 50, 50]);
    const next = await handle.describe();
    expect(next.runId).not.toBe(firstRun);
    expect(next.status.name).toBe('RUNNING');
    expect(calls[3]!.input).toEqual({ repair: true, grace_seconds: 7 });
    await handle.terminate('enough runs');
  });

  it('retries a run that failed on an infrastructure fault, then goes on', async () => {
    const { handle, calls } = await start({
      reconcile: async () => {
        if (calls.length === 1) throw new Error('database unavailable');
        return REPORT;
      },
    });
    // The retry policy waits 10 s before the second attempt.
    await eventually(() => calls.length >= 3, 30_000);
    await handle.terminate('enough runs');
    expect(calls.slice(0, 3).map(({ attempt }) => attempt)).toEqual([1, 2, 1]);
  }, 40_000);

  it('fails visibly, with the activity failure itself, when a run is refused for good', async () => {
    const { handle, calls } = await start({
      reconcile: async () => {
        throw ApplicationFailure.nonRetryable('ledger unreadable', 'RECONCILE_REFUSED');
      },
    });
    expect(await failureOf(handle.result())).toBe('RECONCILE_REFUSED');
    expect(calls).toHaveLength(1);
  });
});
