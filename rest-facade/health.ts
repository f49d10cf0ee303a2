/**
 * `GET /healthz`: 200 `{"status":"ok","checks":{"database":"ok","temporal":"ok"}}`, or 503 with
 * `status` "degraded" and the failing check's error. Travels façade → HealthService RPC → database and Temporal.
 */
import Router from '@koa/router';
import type { FacadeState } from './context';

export function healthRouter(): Router<FacadeState> {
  const router = new Router<FacadeState>();
  router.get('/healthz', async (ctx) => {
    try {
      const answer = await ctx.state.clients.health.check({}, { timeoutMs: 10_000 });
      ctx.status = answer.status === 'ok' ? 200 : 503;
      ctx.body = { status: answer.status, checks: answer.checks };
    } catch (error) {
      ctx.state.logger.warn({ err: error }, 'health rpc failed');
      ctx.status = 503;
      ctx.body = { status: 'degraded', checks: { rpc: 'unreachable' } };
    }
  });
  return router;
}
