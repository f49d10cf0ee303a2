/**
 * The façade's probes:
 *
 *   GET /healthz  liveness of the request path: 200 `{"status":"ok","checks":{"database":"ok","temporal":"ok"}}`, or
 *                 503 `"degraded"` naming the failing check as `"failing"` (or `{"rpc":"unreachable"}`). Travels
 *                 façade → HealthService RPC → database and Temporal. What failed, and why, goes to the log only: the
 *                 answer is public and carries no internal error text.
 *   GET /readyz   readiness for a load balancer: 503 `{"status":"saturated"}` while every admission slot of this
 *                 process is taken (send new requests elsewhere), else the health check's answer as
 *                 `{"status":"ready"}` or 503 `"degraded"`.
 */
import Router from '@koa/router';
import type { FacadeContext, FacadeState } from './context';

/** The health RPC's checks as the public may see them: each "ok" or "failing", the details logged. */
async function checkHealth(ctx: FacadeContext): Promise<{ ok: boolean; checks: Record<string, string> }> {
  try {
    const answer = await ctx.state.clients.health.check({}, { timeoutMs: 10_000 });
    const checks = Object.fromEntries(Object.entries(answer.checks).map(([name, value]) => [name, value === 'ok' ? 'ok' : 'failing']));
    const ok = answer.status === 'ok';
    if (!ok) ctx.state.logger.warn({ checks: answer.checks }, 'health check failing');
    return { ok, checks };
  } catch (error) {
    ctx.state.logger.warn({ err: error }, 'health rpc failed');
    return { ok: false, checks: { rpc: 'unreachable' } };
  }
}

export function healthRouter(options: { saturated?: () => boolean } = {}): Router<FacadeState> {
  const router = new Router<FacadeState>();
  router.get('/healthz', async (ctx) => {
    const health = await checkHealth(ctx);
    ctx.status = health.ok ? 200 : 503;
    ctx.body = { status: health.ok ? 'ok' : 'degraded', checks: health.checks };
  });
  router.get('/readyz', async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    if (options.saturated?.()) {
      ctx.status = 503;
      ctx.set('Retry-After', '1');
      ctx.body = { status: 'saturated' };
      return;
    }
    const health = await checkHealth(ctx);
    ctx.status = health.ok ? 200 : 503;
    ctx.body = health.ok ? { status: 'ready' } : { status: 'degraded', checks: health.checks };
  });
  return router;
}
