/**
 * The address of the end client a call acts for, as lockouts (src/abuse) and the audit trail count it.
 *
 * Only the façade may state it (`X-Client-Address`, its Koa `ctx.ip`), and only over the façade's own channel: the
 * in-process transport, or a network call whose caller holds the `facade` scope and no owner scope, arriving (when
 * the server runs mTLS) over a connection whose client certificate is the façade's too. Every other caller (an
 * operator, a credential bound to a partner or merchant, a façade token presented over another holder's
 * certificate) is counted under its own connection's address, whatever header it sends: a caller cannot lock
 * another client out at that client's address, nor write someone else's address into the audit trail.
 */
import type { ContextValues, HandlerContext } from '@connectrpc/connect';
import { isIP } from 'node:net';
import { isOwnerBound, type CallerIdentity } from '../service-credentials';
import { peerKey, type Peer } from './auth';
import { callerKey, IN_PROCESS_FACADE } from './caller';

export const CLIENT_ADDRESS_HEADER = 'x-client-address';

const isFacade = (identity: CallerIdentity | undefined): boolean =>
  identity !== undefined && (identity.scopes as readonly string[]).includes('facade') && !isOwnerBound(identity);

/**
 * True when `caller`, reached over `peer`, may state the end client's address: the in-process façade, or a façade
 * credential (facade scope, no owner scope) whose connection carries no client certificate (a plaintext or TLS
 * listener without mTLS) or the façade's own certificate.
 */
export function mayStateClientAddress(caller: CallerIdentity | undefined, peer: Peer): boolean {
  if (caller === IN_PROCESS_FACADE) return true;
  if (!isFacade(caller)) return false;
  return peer.certificate === undefined || isFacade(peer.certificate);
}

/** The end client's address of a call with `header` and context `values`: see the module comment. */
export function clientAddressFrom(header: Headers, values: ContextValues): string {
  const peer = values.get(peerKey);
  if (mayStateClientAddress(values.get(callerKey), peer)) {
    const sent = header.get(CLIENT_ADDRESS_HEADER)?.trim();
    if (sent && sent.length <= 64 && isIP(sent)) return sent;
  }
  return peer.address;
}

/** The end client's address for abuse limits (an IP address, or the RPC peer's, or "unknown"). */
export function clientAddressOf(context: HandlerContext | undefined): string {
  return context ? clientAddressFrom(context.requestHeader, context.values) : 'unknown';
}
