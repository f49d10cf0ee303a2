/**
 * Area C envelopes and the one error table of the area (interface "Area C" and "Errors / Area C", platform
 * decisions §7 and §8).
 *
 *   success  200 {"success":true,"code":200,"message":"OK","data":…}
 *   failure  400 {"success":false,"code":400,"message":"Bad Request","error":{field:[messages]}}
 *   auth     401 {"success":false,"code":401,"message":"Unauthorized","error":{"token"|"merchant":[…]}}
 *   fault    500 {"success":false,"code":500,"message":"Internal Server Error","error":{"server":[…]}}
 */
import { Code } from '@connectrpc/connect';
import { DomainError, type FieldViolations } from '../../src/errors';
import { readRpcFailure } from '../../src/rpc/errors';

export interface AreaCAnswer {
  status: number;
  body: Record<string, unknown>;
}

export function ok(data: unknown): AreaCAnswer {
  return { status: 200, body: { success: true, code: 200, message: 'OK', data } };
}

function failure(status: number, message: string, error: FieldViolations): AreaCAnswer {
  return { status, body: { success: false, code: status, message, error } };
}

export const INTERNAL_ERROR_MESSAGE = 'An unexpected error occurred. Please try again later.';

/** RPC code → HTTP status and message. Anything absent (Internal, Unknown, Unavailable, …) is a 500. */
export const AREA_C_ERRORS: Partial<Record<Code, { status: number; message: string }>> = {
  [Code.Unauthenticated]: { status: 401, message: 'Unauthorized' },
  [Code.InvalidArgument]: { status: 400, message: 'Bad Request' },
  [Code.NotFound]: { status: 400, message: 'Bad Request' },
  [Code.AlreadyExists]: { status: 400, message: 'Bad Request' },
  [Code.FailedPrecondition]: { status: 400, message: 'Bad Request' },
  [Code.PermissionDenied]: { status: 400, message: 'Bad Request' },
  [Code.OutOfRange]: { status: 400, message: 'Bad Request' },
};

/** Fallback field per reason when a failure carries no field violations. */
const FIELD_BY_REASON: Record<string, string> = {
  SESSION_MISSING: 'token',
  SESSION_INVALID: 'token',
  SESSION_EXPIRED: 'token',
  MERCHANT_UNAUTHENTICATED: 'merchant',
  INVALID_SIGNATURE: 'sign',
  INSUFFICIENT_FUNDS: 'amount',
  LOGIN_FAILED: 'user_name_password',
};

export const UNAUTHORIZED_TOKEN_MISSING = failure(401, 'Unauthorized', { token: ['The token is required.'] });

export function badRequest(fields: FieldViolations): AreaCAnswer {
  return failure(400, 'Bad Request', fields);
}

export function internalError(): AreaCAnswer {
  return failure(500, 'Internal Server Error', { server: [INTERNAL_ERROR_MESSAGE] });
}

/**
 * Any error thrown while handling a request → its Area C answer. `isFault` is true for the 500 case (log it).
 */
export function answerForError(error: unknown): AreaCAnswer & { isFault: boolean } {
  const failureInfo =
    error instanceof DomainError
      ? { code: codeOfKind(error.kind), reason: error.reason, message: error.message, fields: error.fields }
      : readRpcFailure(error);
  const entry = AREA_C_ERRORS[failureInfo.code];
  if (!entry || failureInfo.reason === 'INTERNAL') return { ...internalError(), isFault: true };
  let fields = failureInfo.fields;
  if (Object.keys(fields).length === 0) fields = { [FIELD_BY_REASON[failureInfo.reason] ?? 'request']: [failureInfo.message] };
  return { ...failure(entry.status, entry.message, fields), isFault: false };
}

function codeOfKind(kind: DomainError['kind']): Code {
  switch (kind) {
    case 'invalid_argument':
      return Code.InvalidArgument;
    case 'not_found':
      return Code.NotFound;
    case 'already_exists':
      return Code.AlreadyExists;
    case 'failed_precondition':
      return Code.FailedPrecondition;
    case 'unauthenticated':
      return Code.Unauthenticated;
    case 'permission_denied':
      return Code.PermissionDenied;
    case 'unavailable':
      return Code.Unavailable;
    default:
      return Code.Internal;
  }
}
