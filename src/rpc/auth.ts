/**
 * Who may call the internal Connect RPC: every call over the network carries a credential, checked here before
 * anything else reads the request.
 *
 *   - `Authorization: Bearer pps_…`: a service credential (src/service-credentials) with its scopes;
 *   - or, when the server runs with mTLS (RPC_TLS_CLIENT_CA), a client certificate verified against that CA: its
 *     subject CN names the caller and its OU values are its scopes (`OU=facade`, `OU=admin`).
 *
 * No credential, or one that does not verify → `Code.Unauthenticated`; a verified caller without the scope of the
 * service → `Code.PermissionDenied`. Both answers are the same whatever failed, and both are logged with the
 * caller's identity (credential id or certificate CN, peer address), never with the token.
 *
 * The in-process transport (façade and api in one process) does not pass through here: nothing outside the process
 * can reach it.
 */
import { Code, ConnectError, createContextKey, type Interceptor } from '@connectrpc/connect';
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../logger';
import { callerKey } from './caller';
import { isServiceScope, type CallerIdentity, type CredentialVerifier, type ServiceScope } from '../service-credentials';

/** Per-call facts from the connection, filled by the server adapter (`peerOf`). */
export interface Peer {
  address: string;
  /** The verified client certificate's caller, when the server runs with mTLS. */
  certificate?: CallerIdentity;
}

export const peerKey = createContextKey<Peer>({ address: 'unknown' }, { description: 'rpc peer' });

/** The scope a service needs; `admin` may call every service. HealthService needs any verified caller. */
const SERVICE_SCOPE: Record<string, ServiceScope | 'any'> = {
  'payments.health.v1.HealthService': 'any',
  'payments.admin.v1.AdminService': 'admin',
  'payments.ledger.v1.LedgerService': 'admin',
  'payments.transfer.v1.TransferService': 'facade',
  'payments.payin.v1.PayinService': 'facade',
  'payments.wallet.v1.WalletService': 'facade',
  'payments.instrument.v1.InstrumentService': 'facade',
  'payments.deposit.v1.DepositService': 'facade',
};

/** Operator methods inside a façade service: they need `admin` although their service does not. */
const ADMIN_METHODS = new Set(['payments.payin.v1.PayinService/ListWebhookDeliveries', 'payments.payin.v1.PayinService/RedeliverWebhook']);

/** True when `caller` may call `method` of `service` (a service missing from the table needs `admin`). */
export function mayCall(caller: CallerIdentity, service: string, method: string): boolean {
  if (caller.scopes.includes('admin')) return true;
  if (ADMIN_METHODS.has(`${service}/${method}`)) return false;
  const needed = SERVICE_SCOPE[service] ?? 'admin';
  return needed === 'any' || caller.scopes.includes(needed);
}

/** The caller named by a verified client certificate: CN is the name, each OU a scope (unknown OUs ignored). */
export function certificateCaller(socket: TLSSocket): CallerIdentity | undefined {
  if (!socket.authorized) return undefined;
  const certificate = socket.getPeerCertificate();
  const subject = certificate?.subject as Record<string, string | string[] | undefined> | undefined;
  const name = typeof subject?.CN === 'string' ? subject.CN : undefined;
  if (!name) return undefined;
  const units = subject?.OU === undefined ? [] : Array.isArray(subject.OU) ? subject.OU : [subject.OU];
  return { id: `cert:${name}`, name, scopes: units.filter(isServiceScope) };
}

/** Context values of one request: its peer address and, over mTLS, its certificate's caller. */
export function peerOf(request: IncomingMessage | Http2ServerRequest): Peer {
  const socket = request.socket as TLSSocket;
  const address = socket.remoteAddress ?? 'unknown';
  return socket.encrypted ? { address, certificate: certificateCaller(socket) } : { address };
}

const BEARER = /^Bearer ([^\s]{1,256})$/;

/** The interceptor that authenticates and authorizes every network call (outermost after error mapping). */
export function authInterceptor(verifier: CredentialVerifier, logger: Logger): Interceptor {
  return (next) => async (request) => {
    const peer = request.contextValues.get(peerKey);
    const service = request.service.typeName;
    const procedure = `${service}/${request.method.name}`;
    let caller = peer.certificate;
    if (!caller) {
      const match = BEARER.exec(request.header.get('authorization') ?? '');
      caller = match ? await verifier.verify(match[1]!) : undefined;
    }
    if (!caller) {
      logger.warn({ procedure, peer: peer.address }, 'rpc refused: no valid credential');
      throw new ConnectError('a valid service credential is required', Code.Unauthenticated);
    }
    if (!mayCall(caller, service, request.method.name)) {
      logger.warn({ procedure, peer: peer.address, caller: caller.id }, 'rpc refused: credential lacks the scope');
      throw new ConnectError('the credential does not allow this service', Code.PermissionDenied);
    }
    request.contextValues.set(callerKey, caller);
    return next(request);
  };
}

/** A client interceptor presenting `token` as `Authorization: Bearer …` on every call. */
export function bearerInterceptor(token: string): Interceptor {
  return (next) => async (request) => {
    request.header.set('authorization', `Bearer ${token}`);
    return next(request);
  };
}
