import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../src/activities';

const { readWorkerDiagnostics } = proxyActivities<Activities>({ startToCloseTimeout: '10 seconds' });

/**
 * DiagnosticsWorkflow: one activity round trip (client → server → worker → database and back). Used by the
 * foundation tests to prove a worker serves the task queue.
 */
export async function diagnosticsWorkflow(): Promise<{ database_time: string; worker_pid: number }> {
  return readWorkerDiagnostics();
}
