/**
 * The audit trail: one interceptor records every privileged call (money minted or moved on an operator's word,
 * credentials, keys, onboarding and suspensions, reconciliation repairs, webhook redelivery) and every call of a
 * credential bound to a partner or merchant (it acts for an owner without the owner's own proof), in
 * `audit_records` (migration 025), which the database keeps append-only.
 *
 * A record holds the credential id, the caller's address (the RPC peer; "in-process" for the façade of the api's
 * own process), the end client's address the call was counted under (src/rpc/client-address.ts: the façade's
 * `X-Client-Address`; for any other caller its own connection's address, whatever it sent), the procedure, the
 * request with secrets replaced by "[redacted]" (and long texts shortened), and the outcome: `ok`, or the error's
 * reason. The database stamps the role that wrote it: records are appended through `append_audit_record` (migration
 * 043), the serving roles holding no INSERT on the table. It sits after authentication and before authorization, so
 * a verified caller's refused attempt at a privileged procedure is recorded as PERMISSION_DENIED; an
 * unauthenticated one is only logged (it names no credential, and recording it would let anyone fill the table).
 * Refused calls get a record only up to AUDIT_REFUSALS_PER_CREDENTIAL per window and credential (`admitRefusal`);
 * past it a refused call is still refused, without a record, and counted in payments_audit_refusals_dropped_total.
 *
 * The record is written once the call has its outcome. When it cannot be written the call answers INTERNAL
 * whatever it did, and the record goes to the log at error level: no privileged call succeeds silently.
 */
import { toJson, type DescMessage, type Message } from '@bufbuild/protobuf';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { Knex } from '../db/knex';
import { DomainError } from '../errors';
import { ErrorDetailSchema } from '../gen/payments/common/v1/errors_pb';
import type { Logger } from '../logger';
import { isOwnerBound, type CallerIdentity } from '../service-credentials';
import { peerKey } from './auth';
import { callerKey, IN_PROCESS_FACADE } from './caller';
import type { Counter } from 'prom-client';
import { clientAddressFrom } from './client-address';

/** Procedures recorded whoever calls them. */
export const PRIVILEGED_PROCEDURES: ReadonlySet<string> = new Set([
  'payments.admin.v1.AdminService/CreatePartner',
  'payments.admin.v1.AdminService/CreateMerchant',
  'payments.admin.v1.AdminService/CreateUser',
  'payments.admin.v1.AdminService/SetPartnerStatus',
  'payments.admin.v1.AdminService/SetMerchantStatus',
  'payments.admin.v1.AdminService/CreditWallet',
  'payments.admin.v1.AdminService/CreateServiceCredential',
  'payments.admin.v1.AdminService/RevokeServiceCredential',
  'payments.admin.v1.AdminService/RotateDataKey',
  'payments.admin.v1.AdminService/Reconcile',
  'payments.admin.v1.AdminService/SetMerchantOutcomePolicy',
  'payments.ledger.v1.LedgerService/Transfer',
  'payments.ledger.v1.LedgerService/CreatePendingTransfer',
  'payments.ledger.v1.LedgerService/PostPendingTransfer',
  'payments.ledger.v1.LedgerService/VoidPendingTransfer',
  'payments.payin.v1.PayinService/RedeliverWebhook',
  'payments.dashboard.v1.DashboardService/RedeliverWebhook',
  'payments.dashboard.v1.DashboardService/SetOutcomePolicy',
  'payments.dashboard.v1.DashboardService/RefundPayment',
  'payments.dashboard.v1.DashboardService/RotateWebhookSecret',
  'payments.dashboard.v1.DashboardService/UpdateWebhookEndpoint',
  'payments.dashboard.v1.DashboardService/SendTestWebhook',
  'payments.dashboard.v1.DashboardService/EnableWebhookEndpoint',
  'payments.dashboard.v1.DashboardService/SetPayoutSchedule',
  'payments.events.v1.EventsService/RedeliverEvents',
  'payments.payout.v1.PayoutService/DecidePayoutApproval',
  'payments.payout.v1.PayoutService/SetPayoutSettings',
  'payments.payout.v1.PayoutService/SetPayoutSchedule',
]);

/** Field names whose values are secrets or payment data (request fields, at any depth; snake_case as in proto). */
const SECRET_FIELD = /secret|password|token|authorization|signature|^sign$|session|otp|security_code|cvv|card_number|^number$|bank_number|bank_code|holder_name|source_of_funds|private_key|api_key|hmac/i;
/** Longest text kept whole in a record; longer ones (public keys, bodies) keep their start and their length. */
const MAX_TEXT = 256;

/** `value` with every secret field replaced and long texts shortened. */
export function redacted(value: unknown, field = ''): unknown {
  if (field && SECRET_FIELD.test(field)) return value === '' || value === null || value === undefined ? value : '[redacted]';
  if (typeof value === 'string') return value.length > MAX_TEXT ? `${value.slice(0, 64)}…[${value.length} characters]` : value;
  if (Array.isArray(value)) return value.map((item) => redacted(item, field));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, redacted(item, key)]));
  }
  return value;
}

/** The outcome of a failed call: its domain reason, else the Connect code's name (PERMISSION_DENIED, …). */
export function outcomeOf(error: unknown): string {
  if (error instanceof DomainError) return error.reason;
  if (error instanceof ConnectError) {
    const [detail] = error.findDetails(ErrorDetailSchema);
    if (detail?.reason) return detail.reason;
    return Code[error.code]!.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
  }
  return 'INTERNAL';
}

export interface AuditRecord {
  credential_id: string;
  /** The RPC peer's address. */
  caller_address: string;
  /** The end client's address the call was counted under (src/rpc/client-address.ts), else null when unknown. */
  client_address: string | null;
  procedure: string;
  arguments: unknown;
  outcome: string;
}

/** Where records go: `audit_records`. */
export interface AuditLog {
  /** @throws when the record cannot be written */
  append(record: AuditRecord): Promise<void>;
  /**
   * Whether a refused call of `credentialId` still gets its record (the per-credential limit of src/abuse); absent:
   * always. A failure to decide records the call.
   */
  admitRefusal?(credentialId: string): Promise<boolean>;
  /** Counts refused calls left without a record. */
  dropped?: Counter<'procedure'>;
}

/**
 * The audit log of `database`: each record appended through `append_audit_record` (migration 043), which stamps
 * the database role; `options.admitRefusal` and `options.dropped` bound and count the records of refused calls.
 */
export function createAuditLog(database: Knex, options: Pick<AuditLog, 'admitRefusal' | 'dropped'> = {}): AuditLog {
  return {
    async append(record) {
      await database.raw('SELECT append_audit_record(?, ?, ?, ?, ?::jsonb, ?)', [
        record.credential_id,
        record.caller_address,
        record.client_address,
        record.procedure,
        JSON.stringify(record.arguments),
        record.outcome,
      ]);
    },
    ...options,
  };
}

/** Outcomes of a call refused for who its caller is, before or by the service (their records are bounded). */
const REFUSED_OUTCOMES: ReadonlySet<string> = new Set(['PERMISSION_DENIED', 'UNAUTHENTICATED']);

/** True when a call by `caller` to `procedure` is recorded. */
export function isAudited(procedure: string, caller: CallerIdentity | undefined): boolean {
  return PRIVILEGED_PROCEDURES.has(procedure) || (caller !== undefined && isOwnerBound(caller));
}

/** The interceptor (after authentication, before authorization: src/rpc/server.ts). */
export function auditInterceptor(log: AuditLog, logger: Logger): Interceptor {
  return (next) => async (request) => {
    const procedure = `${request.service.typeName}/${request.method.name}`;
    const caller = request.contextValues.get(callerKey);
    if (!isAudited(procedure, caller)) return next(request);
    const write = async (outcome: string) => {
      const peer = request.contextValues.get(peerKey).address;
      const client = clientAddressFrom(request.header, request.contextValues);
      const credential_id = caller?.id ?? 'unknown';
      if (REFUSED_OUTCOMES.has(outcome) && log.admitRefusal) {
        const admitted = await log.admitRefusal(credential_id).catch((error: unknown) => {
          logger.warn({ err: error }, 'audit: the refusal limit could not be read; recording the refused call');
          return true;
        });
        if (!admitted) {
          log.dropped?.inc({ procedure });
          return;
        }
      }
      const record: AuditRecord = {
        credential_id,
        caller_address: caller === IN_PROCESS_FACADE ? 'in-process' : peer,
        client_address: client === 'unknown' ? null : client,
        procedure,
        arguments: request.stream ? {} : redacted(toJson(request.method.input as DescMessage, request.message as Message, { useProtoFieldName: true })),
        outcome,
      };
      try {
        await log.append(record);
      } catch (error) {
        logger.error({ err: error, audit: record }, 'audit record not written: the call answers INTERNAL');
        throw new ConnectError('internal error', Code.Internal);
      }
    };
    let response;
    try {
      response = await next(request);
    } catch (error) {
      await write(outcomeOf(error));
      throw error;
    }
    await write('ok');
    return response;
  };
}
