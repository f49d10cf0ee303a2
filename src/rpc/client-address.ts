/**
 * The address of the end client a façade call acts for: the façade sends it as `X-Client-Address` (its Koa
 * `ctx.ip`); a caller that sends none is counted under its own peer address. Only verified RPC callers reach a
 * service (src/rpc/auth.ts), so the header is the façade's word, not the end client's.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { isIP } from 'node:net';
import { peerKey } from './auth';

export const CLIENT_ADDRESS_HEADER = 'x-client-address';

/** The end client's address for abuse limits (an IP address, or the RPC peer's, or "unknown"). */
export function clientAddressOf(context: HandlerContext | undefined): string {
  const sent = context?.requestHeader.get(CLIENT_ADDRESS_HEADER)?.trim();
  if (sent && sent.length <= 64 && isIP(sent)) return sent;
  return context?.values.get(peerKey).address ?? 'unknown';
}
