/**
 * The diagnostics workflow's contract: one activity round trip (client → server → worker → database and back),
 * used by the foundation tests and health checks to prove a worker serves the task queue.
 */

/** What a worker reports: the database server's clock (ISO 8601) and the worker's process id. */
export interface WorkerDiagnostics {
  database_time: string;
  worker_pid: number;
}

export interface DiagnosticsActivities {
  readWorkerDiagnostics(): Promise<WorkerDiagnostics>;
}
