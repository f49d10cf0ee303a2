/**
 * Who may call the internal Connect RPC: every call over the network carries a credential, checked here before
 * anything else reads the request.
 *
 *   - `Authorization: Bearer pps_…`: a service credential (src/service-credentials) with its scopes;
 *   - or, when the server runs with mTLS (RPC_TLS_CLIENT_CA) and the call presents no bearer token, the client
 *     certificate the connection was verified with: its subject CN names the caller and its OU values are its
 *     scopes (`OU=facade`, `OU=admin`, `OU=partner:P…`). Under mTLS every connection needs a certificate of the CA;
 *     a call over it may still present a credential of its own (the operator's admin CLI), which is then its caller.
 *
 * No credential, or one that does not verify → `Code.Unauthenticated`; a verified caller without the scope the
 * procedure needs → `Code.PermissionDenied`. Both answers are the same whatever failed, and both are logged with the
 * caller's identity (credential id or certificate CN, peer address), never with the token.
 *
 * Two interceptors, so the audit trail (src/rpc/audit.ts) sits between them and records a verified caller's refused
 * attempt at a privileged procedure too: `authenticationInterceptor` (who), then `authorizationInterceptor` (may
 * it). The in-process transport (façade and api in one process) does not authenticate: nothing outside the process
 * can reach it, and its caller is the façade (src/rpc/caller.ts); it is authorized like any other caller.
 */
import { Code, ConnectError, createContextKey, type Interceptor } from '@connectrpc/connect';
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '../logger';
import { callerKey } from './caller';
import { isServiceScope, ownerOfScope, type CallerIdentity, type CredentialVerifier, type FixedScope } from '../service-credentials';

/** Per-call facts from the connection, filled by the server adapter (`peerOf`). */
export interface Peer {
  address: string;
  /** The verified client certificate's caller, when the server runs with mTLS. */
  certificate?: CallerIdentity;
}

export const peerKey = createContextKey<Peer>({ address: 'unknown' }, { description: 'rpc peer' });

/**
 * What a procedure needs, any one of: a fixed scope; `partner` or `merchant`, a credential bound to some owner of
 * that kind (the service then checks that it is the owner the call acts for, `mayActFor`); or `any` verified caller.
 * A service lists only the owner kinds it serves, so a credential bound to another kind of owner is refused here,
 * before the handler reads its request.
 */
type Requirement = FixedScope | 'partner' | 'merchant' | 'any';

/** By service: what its procedures need unless METHOD_REQUIREMENTS names the procedure. */
const SERVICE_REQUIREMENTS: Record<string, readonly Requirement[]> = {
  'payments.health.v1.HealthService': ['any'],
  'payments.admin.v1.AdminService': ['admin'],
  // Reads and the invariant check; the writes are below.
  'payments.ledger.v1.LedgerService': ['admin'],
  // Gateway and IssueAccessToken verify the partner's own proof; the typed operations are below.
  'payments.transfer.v1.TransferService': ['facade'],
  // The façade's calls carry the merchant's own proof; a merchant-bound credential acts for its merchant only.
  // Areas B and C are merchants' (owner kinds served: merchant).
  'payments.payin.v1.PayinService': ['facade', 'merchant'],
  'payments.wallet.v1.WalletService': ['facade', 'merchant'],
  'payments.instrument.v1.InstrumentService': ['facade', 'merchant'],
  'payments.deposit.v1.DepositService': ['facade', 'merchant'],
  // Every call carries a dashboard session (or the merchant's API user name and password) the service checks itself.
  'payments.dashboard.v1.DashboardService': ['facade'],
  // ListEvents carries the owner's own proof (the merchant's API key), checked by the service; the rest is operators'.
  'payments.events.v1.EventsService': ['facade'],
  // GetPaymentTimeline: the owner's own proof (through the façade), a credential bound to the owner, or an operator's.
  'payments.timeline.v1.TimelineService': ['facade', 'partner', 'merchant', 'admin'],
  // The merchant's calls carry its API key, checked by the service; ListRefunds and ShowRefund are operators'.
  'payments.refund.v1.RefundService': ['facade', 'merchant'],
  // The merchant's calls carry its API key, checked by the service; the listing, approvals and limits are operators'.
  'payments.payout.v1.PayoutService': ['facade', 'merchant'],
};

/** Procedures that need other powers than their service's. */
const METHOD_REQUIREMENTS: Record<string, readonly Requirement[]> = {
  // Minting money: a credit from the platform's settlement account.
  'payments.admin.v1.AdminService/CreditWallet': ['mint'],
  // Who may call at all, and the keys secrets are sealed under.
  'payments.admin.v1.AdminService/CreateServiceCredential': ['credentials'],
  'payments.admin.v1.AdminService/RevokeServiceCredential': ['credentials'],
  'payments.admin.v1.AdminService/ListServiceCredentials': ['credentials'],
  'payments.admin.v1.AdminService/RotateDataKey': ['credentials'],
  // Money between any two accounts, on nobody's proof: a scope no other power includes.
  'payments.ledger.v1.LedgerService/Transfer': ['ledger-write'],
  'payments.ledger.v1.LedgerService/CreatePendingTransfer': ['ledger-write'],
  'payments.ledger.v1.LedgerService/PostPendingTransfer': ['ledger-write'],
  'payments.ledger.v1.LedgerService/VoidPendingTransfer': ['ledger-write'],
  // Operator methods inside a façade service.
  'payments.payin.v1.PayinService/ListWebhookDeliveries': ['admin'],
  'payments.payin.v1.PayinService/RedeliverWebhook': ['admin'],
  'payments.events.v1.EventsService/ListOwnerEvents': ['admin'],
  'payments.events.v1.EventsService/RedeliverEvents': ['admin'],
  'payments.refund.v1.RefundService/ListRefunds': ['admin'],
  'payments.refund.v1.RefundService/ShowRefund': ['admin'],
  'payments.payout.v1.PayoutService/ListPayouts': ['admin'],
  'payments.payout.v1.PayoutService/ShowPayout': ['admin'],
  'payments.payout.v1.PayoutService/DecidePayoutApproval': ['admin'],
  'payments.payout.v1.PayoutService/SetPayoutSettings': ['admin'],
  'payments.payout.v1.PayoutService/SetPayoutSchedule': ['admin'],
  'payments.deposit.v1.DepositService/OperatorListDepositRefunds': ['admin'],
  'payments.deposit.v1.DepositService/OperatorShowDepositRefund': ['admin'],
  // A partner's money without the partner's proof: only a credential bound to it (checked by the service).
  'payments.transfer.v1.TransferService/CreatePreTransfer': ['partner'],
  'payments.transfer.v1.TransferService/ConfirmPreTransfer': ['partner'],
  'payments.transfer.v1.TransferService/QueryTransfer': ['partner'],
};

/** What `service`/`method` needs (a service missing from the tables needs `admin`). */
export function requirementsOf(service: string, method: string): readonly Requirement[] {
  return METHOD_REQUIREMENTS[`${service}/${method}`] ?? SERVICE_REQUIREMENTS[service] ?? ['admin'];
}

/**
 * True when `caller` may call `method` of `service`. No scope implies another: `admin` is not `mint`, `credentials`
 * or `ledger-write`, neither `admin` nor `facade` may act for an owner, and a credential bound to a merchant is not
 * one bound to a partner.
 */
export function mayCall(caller: CallerIdentity, service: string, method: string): boolean {
  return requirementsOf(service, method).some((needed) =>
    needed === 'any'
      ? true
      : needed === 'partner' || needed === 'merchant'
        ? caller.scopes.some((scope) => ownerOfScope(scope)?.kind === needed)
        : caller.scopes.includes(needed),
  );
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

/**
 * The interceptor that authenticates every network call: the caller of its bearer token, else of its connection's
 * client certificate, goes into the call's context (`callerOf`), or the call is refused Unauthenticated. A bearer
 * token that does not verify is refused even over a verified certificate.
 */
export function authenticationInterceptor(verifier: CredentialVerifier, logger: Logger): Interceptor {
  return (next) => async (request) => {
    const peer = request.contextValues.get(peerKey);
    const authorization = request.header.get('authorization');
    let caller: CallerIdentity | undefined;
    if (authorization) {
      const match = BEARER.exec(authorization);
      caller = match ? await verifier.verify(match[1]!) : undefined;
    } else {
      caller = peer.certificate;
    }
    if (!caller) {
      logger.warn({ procedure: `${request.service.typeName}/${request.method.name}`, peer: peer.address }, 'rpc refused: no valid credential');
      throw new ConnectError('a valid service credential is required', Code.Unauthenticated);
    }
    request.contextValues.set(callerKey, caller);
    return next(request);
  };
}

/** The interceptor that refuses a verified caller without the scope the procedure needs (PermissionDenied). */
export function authorizationInterceptor(logger: Logger): Interceptor {
  return (next) => async (request) => {
    const caller = request.contextValues.get(callerKey);
    if (!caller || !mayCall(caller, request.service.typeName, request.method.name)) {
      const peer = request.contextValues.get(peerKey);
      logger.warn({ procedure: `${request.service.typeName}/${request.method.name}`, peer: peer.address, caller: caller?.id }, 'rpc refused: credential lacks the scope');
      throw new ConnectError('the credential does not allow this service', Code.PermissionDenied);
    }
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
