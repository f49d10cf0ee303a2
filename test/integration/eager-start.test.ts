/**
 * Eager workflow start: with the api and worker roles in one process, the platform's workflow starts hand their
 * first workflow task straight to the local worker (src/temporal/client.ts startWorkflow); TEMPORAL_EAGER_START=false
 * and a process without a worker start through the task queue.
 */
import { randomBytes } from 'node:crypto';
import { startWorkflow } from '../../src/temporal/client';
import { diagnosticsWorkflow } from '../../workflows/diagnostics';
import { startTestPlatform, type TestPlatform } from '../support/platform';

async function startDiagnostics(platform: TestPlatform) {
  const handle = await startWorkflow(platform.deps.temporal, diagnosticsWorkflow, {
    taskQueue: platform.deps.temporal.taskQueue,
    workflowId: `eager-${randomBytes(6).toString('hex')}`,
  });
  // Either way the workflow runs to completion on the worker.
  expect((await handle.result()).worker_pid).toBe(process.pid);
  return handle.eagerlyStarted;
}

describe('eager workflow start', () => {
  it('starts eagerly on the worker of the same process', async () => {
    const platform = await startTestPlatform({ inProcess: true });
    try {
      expect(platform.deps.temporal.colocated).toBeDefined();
      expect(await startDiagnostics(platform)).toBe(true);
    } finally {
      await platform.stop();
    }
  });

  it('starts through the task queue with TEMPORAL_EAGER_START=false', async () => {
    const platform = await startTestPlatform({ inProcess: true, env: { TEMPORAL_EAGER_START: 'false' } });
    try {
      expect(platform.deps.temporal.colocated).toBeUndefined();
      expect(await startDiagnostics(platform)).toBe(false);
    } finally {
      await platform.stop();
    }
  });
});
