/**
 * Who is calling a platform service, as the service sees it: the caller the RPC credential check verified
 * (src/rpc/auth.ts) for a network call, or the in-process façade for a call from the façade in the same process.
 *
 * A service reads it with `callerOf(context)`. A transport credential never moves money by itself: a service that
 * acts for a partner or a merchant either verifies that owner's own proof (token and signature, session and
 * signature) or requires a caller whose credential is bound to that owner (`mayActFor`).
 */
import { createContextKey, type HandlerContext } from '@connectrpc/connect';
import type { CallerIdentity } from '../service-credentials';

/** The verified caller of the current call; undefined when nothing verified one (a direct service call in a test). */
export const callerKey = createContextKey<CallerIdentity | undefined>(undefined, { description: 'rpc caller' });

/** The façade running in the same process as the api role: nothing outside the process reaches this transport. */
export const IN_PROCESS_FACADE: CallerIdentity = Object.freeze({ id: 'in-process', name: 'facade', scopes: Object.freeze(['facade'] as const) });

/** The verified caller of `context`'s call, or undefined. */
export function callerOf(context: HandlerContext | undefined): CallerIdentity | undefined {
  return context?.values.get(callerKey);
}

/** A partner or a merchant: whose money a call moves. */
export interface Owner {
  kind: 'partner' | 'merchant';
  id: string;
}

/** The scope that binds a service credential to one owner: `partner:<id>` or `merchant:<id>`. */
export function ownerScope(owner: Owner): string {
  return `${owner.kind}:${owner.id}`;
}

/**
 * True when `caller` may act for `owner` without the owner's own proof: its credential is bound to that owner (its
 * scopes name it). The façade's credential, an operator's and the in-process façade are bound to no owner.
 */
export function mayActFor(caller: CallerIdentity | undefined, owner: Owner): boolean {
  return owner.id !== '' && caller !== undefined && (caller.scopes as readonly string[]).includes(ownerScope(owner));
}
