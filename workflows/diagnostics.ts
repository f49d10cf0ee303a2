import { proxyActivities } from '@temporalio/workflow';
import type { DiagnosticsActivities, WorkerDiagnostics } from '../src/health/contract';

const { readWorkerDiagnostics } = proxyActivities<DiagnosticsActivities>({ startToCloseTimeout: '10 seconds' });

/**
 * DiagnosticsWorkflow: one activity round trip (client → server → worker → database and back). Used by the
 * foundation tests to prove a worker serves the task queue.
 */
export async function diagnosticsWorkflow(): Promise<WorkerDiagnostics> {
  return readWorkerDiagnostics();
}
