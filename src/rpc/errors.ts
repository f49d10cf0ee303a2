/**
 * Maps between domain errors and `ConnectError` (architecture guide, "One error model").
 * Services throw `DomainError`; the error interceptor converts; façade routers read `reason` and `fields` back.
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { DomainError, type DomainErrorKind, type FieldViolations } from '../errors';
import { ErrorDetailSchema } from '../gen/payments/common/v1/errors_pb';
import { REASONS_BY_SERVICE, type FacadeService, type ServiceReason } from './service-reasons';

export type { FacadeService, ServiceReason } from './service-reasons';

const codeByKind: Record<DomainErrorKind, Code> = {
  invalid_argument: Code.InvalidArgument,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  failed_precondition: Code.FailedPrecondition,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  resource_exhausted: Code.ResourceExhausted,
  aborted: Code.Aborted,
  unavailable: Code.Unavailable,
  deadline_exceeded: Code.DeadlineExceeded,
  internal: Code.Internal,
};

/** The Connect code of a domain error kind. */
export function codeOfKind(kind: DomainErrorKind): Code {
  return codeByKind[kind];
}

/** Field violations as the RPC's `FieldViolation` list (ErrorDetail, and the views that carry field problems). */
export function fieldViolationList(fields: FieldViolations): Array<{ field: string; messages: string[] }> {
  return Object.entries(fields).map(([field, messages]) => ({ field, messages }));
}

/** A `FieldViolation` list back as field violations. */
export function fieldViolationsOf(list: ReadonlyArray<{ field: string; messages: readonly string[] }>): FieldViolations {
  const fields: FieldViolations = {};
  for (const violation of list) fields[violation.field] = [...violation.messages];
  return fields;
}

/** Converts a DomainError into a ConnectError carrying an ErrorDetail. */
export function toConnectError(error: DomainError): ConnectError {
  const detail = create(ErrorDetailSchema, {
    reason: error.reason,
    fields: fieldViolationList(error.fields),
    retryAfterSeconds: error.retryAfterSeconds ?? 0,
  });
  return new ConnectError(error.message, codeByKind[error.kind], undefined, [{ desc: ErrorDetailSchema, value: detail }]);
}

/**
 * What a façade needs of an RPC failure. `reason` is "INTERNAL" for anything that is not a domain error, and, when
 * read for the services called, for a reason none of their tables names.
 */
export interface RpcFailure<R extends string = string> {
  code: Code;
  reason: R;
  message: string;
  fields: FieldViolations;
  /** RATE_LIMITED: seconds until the caller may try again (the façade's Retry-After), else undefined. */
  retryAfterSeconds?: number;
}

/**
 * Reads the reason and field violations out of any error thrown by a Connect client call; with the names of the
 * clients called (`readRpcFailure(error, 'wallet', 'deposit')`), its reason is typed by their services' reason
 * tables (./service-reasons.ts), and a reason outside them reads as INTERNAL.
 */
export function readRpcFailure<S extends FacadeService>(error: unknown, ...services: [S, ...S[]]): RpcFailure<ServiceReason<S>>;
export function readRpcFailure(error: unknown): RpcFailure;
export function readRpcFailure(error: unknown, ...services: FacadeService[]): RpcFailure {
  const connectError = ConnectError.from(error);
  const [detail] = connectError.findDetails(ErrorDetailSchema);
  const fields = fieldViolationsOf(detail?.fields ?? []);
  let reason = detail?.reason ?? (connectError.code === Code.InvalidArgument ? 'VALIDATION_FAILED' : 'INTERNAL');
  if (services.length > 0 && !services.some((service) => Object.hasOwn(REASONS_BY_SERVICE[service], reason))) reason = 'INTERNAL';
  return {
    code: connectError.code,
    reason,
    message: connectError.rawMessage,
    fields,
    ...(detail?.retryAfterSeconds ? { retryAfterSeconds: detail.retryAfterSeconds } : {}),
  };
}
