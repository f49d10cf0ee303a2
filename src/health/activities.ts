/** Diagnostics activity: proves a worker polls the task queue and reaches the database. */
import type { Knex } from 'knex';

export function createDiagnosticsActivities(deps: { database: Knex }) {
  return {
    /** Returns the database server's clock (ISO 8601) and the worker's process id. */
    async readWorkerDiagnostics(): Promise<{ database_time: string; worker_pid: number }> {
      const result = await deps.database.raw('select now() as now');
      return { database_time: new Date(result.rows[0].now).toISOString(), worker_pid: process.pid };
    },
  };
}
