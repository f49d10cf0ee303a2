/** Diagnostics activity: proves a worker polls the task queue and reaches the database. */
import type { Knex } from 'knex';
import type { DiagnosticsActivities } from './contract';

export function createDiagnosticsActivities(deps: { database: Knex }): DiagnosticsActivities {
  return {
    /** Returns the database server's clock (ISO 8601) and the worker's process id. */
    async readWorkerDiagnostics() {
      const result = await deps.database.raw('select now() as now');
      return { database_time: new Date(result.rows[0].now).toISOString(), worker_pid: process.pid };
    },
  };
}
