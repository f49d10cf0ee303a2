/**
 * HealthService: pings PostgreSQL and Temporal. Answers `{status: "ok" | "degraded", checks}`;
 * never throws, so the façade can turn a degraded answer into a 503 naming the failing check.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { Knex } from 'knex';
import type { HealthService } from '../gen/payments/health/v1/health_pb';
import type { TemporalHandle } from '../temporal/client';

/** Seconds each dependency gets to answer before it is reported as failing. */
export const HEALTH_CHECK_TIMEOUT_SECONDS = 3;

async function withTimeout<T>(work: Promise<T>, seconds: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${seconds}s`)), seconds * 1000);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function check(work: () => Promise<unknown>): Promise<string> {
  try {
    await withTimeout(work(), HEALTH_CHECK_TIMEOUT_SECONDS);
    return 'ok';
  } catch (error) {
    return error instanceof Error ? error.message.split('\n')[0]!.slice(0, 200) : 'failed';
  }
}

export function createHealthService(deps: { database: Knex; temporal: TemporalHandle }): ServiceImpl<typeof HealthService> {
  return {
    async check() {
      const [database, temporal] = await Promise.all([
        check(() => deps.database.raw('select 1')),
        check(() => deps.temporal.connection.healthService.check({})),
      ]);
      const checks = { database, temporal };
      const status = Object.values(checks).every((value) => value === 'ok') ? 'ok' : 'degraded';
      return { status, checks };
    },
  };
}
