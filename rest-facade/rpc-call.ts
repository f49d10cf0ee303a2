/** What every façade route adds to the RPCs it makes for a request, and to a rate-limited answer. */
import type { FacadeContext } from './context';

/**
 * Call options of every RPC made for a request: its request id (logs) and the client's address, which the services
 * count failed authentications and request rates by (src/abuse). The address is the socket's, or behind
 * FACADE_TRUSTED_PROXY_HOPS proxies the one they forwarded (rest-facade/app.ts).
 */
export function rpcCallOptions(ctx: FacadeContext): { headers: Record<string, string> } {
  return { headers: { 'X-Request-Id': ctx.state.requestId, 'X-Client-Address': ctx.ip } };
}

/** Sets `Retry-After` (seconds) on a RATE_LIMITED answer. */
export function setRetryAfter(ctx: FacadeContext, seconds: number | undefined): void {
  if (seconds) ctx.set('Retry-After', String(seconds));
}
