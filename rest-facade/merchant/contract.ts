/**
 * Area C contract (interface "Area C" and "Errors / Area C", platform decisions §7 and §8): the envelopes, the
 * documented messages with the exhaustive table rendering every field problem code the services answer
 * (./messages.ts), and the one exhaustive error table of the area. The /do-action field readers live beside each
 * service's table (./wallet-fields.ts, ./deposit-fields.ts, ./instrument-fields.ts; shared reading ./fields.ts).
 *
 *   success  200 {"success":true,"code":200,"message":"OK","data":…}
 *   failure  400 {"success":false,"code":400,"message":"Bad Request","error":{field:[messages]}}
 *   auth     401 {"success":false,"code":401,"message":"Unauthorized","error":{"token"|"merchant":[…]}}
 *   fault    500 {"success":false,"code":500,"message":"Internal Server Error","error":{"server":[…]}}
 */
import { DomainError, type FieldViolations } from '../../src/errors';
import { codeOfKind, readRpcFailure, type RpcFailure, type ServiceReason } from '../../src/rpc/errors';

import { AUTH_MESSAGES, renderFieldProblems } from './messages';

export interface AreaCAnswer {
  status: number;
  body: Record<string, unknown>;
  /** 429: seconds for the `Retry-After` header. */
  retryAfterSeconds?: number;
}

export function ok(data: unknown): AreaCAnswer {
  return { status: 200, body: { success: true, code: 200, message: 'OK', data } };
}

function failure(status: number, message: string, error: FieldViolations): AreaCAnswer {
  return { status, body: { success: false, code: status, message, error } };
}

export const INTERNAL_ERROR_MESSAGE = 'An unexpected error occurred. Please try again later.';
export const BUSY_MESSAGE = 'The service is busy. Please try again later.';
export const RATE_LIMITED_MESSAGE = 'Too many requests. Retry after the time in Retry-After.';

/** The services Area C calls: /login and /do-action's tables, the hosted pages. */
const AREA_C_SERVICES = ['wallet', 'deposit', 'instrument'] as const;

/** Every reason the Area C RPCs can answer: the union of the services' (src/rpc/service-reasons.ts). */
export type AreaCReason = ServiceReason<(typeof AREA_C_SERVICES)[number]>;

interface AreaCError {
  status: number;
  message: string;
  /** The field a failure without field violations is reported under. */
  field: string;
}

const BAD_REQUEST = (field: string): AreaCError => ({ status: 400, message: 'Bad Request', field });
const UNAUTHORIZED = (field: string): AreaCError => ({ status: 401, message: 'Unauthorized', field });
/** A fault that is never the caller's doing: the 500 envelope, nothing internal shown. */
const FAULT: AreaCError = { status: 500, message: 'Internal Server Error', field: 'server' };

/**
 * Reason → Area C answer, over every reason the WalletService, DepositService and InstrumentService can answer.
 * Exhaustive: a reason added to any table those services use without a line here does not compile.
 */
export const AREA_C_REASON_ERRORS: Record<AreaCReason, AreaCError> = {
  MERCHANT_UNAUTHENTICATED: UNAUTHORIZED('merchant'),
  SESSION_MISSING: UNAUTHORIZED('token'),
  SESSION_INVALID: UNAUTHORIZED('token'),
  SESSION_EXPIRED: UNAUTHORIZED('token'),
  UNAUTHENTICATED: UNAUTHORIZED('merchant'),
  INVALID_SIGNATURE: BAD_REQUEST('sign'),
  LOGIN_FAILED: BAD_REQUEST('user_name_password'),
  LOGIN_TIMESTAMP_INVALID: BAD_REQUEST('timestamp'),
  LOGIN_REPLAYED: BAD_REQUEST('timestamp'),
  VALIDATION_FAILED: BAD_REQUEST('request'),
  INVALID_AMOUNT: BAD_REQUEST('amount'),
  USER_NOT_FOUND: BAD_REQUEST('user_id'),
  WALLET_CURRENCY_MISMATCH: BAD_REQUEST('currency'),
  INSUFFICIENT_FUNDS: BAD_REQUEST('amount'),
  BLOCKED_MONEY_NOT_FOUND: BAD_REQUEST('transaction_ref'),
  BLOCKED_MONEY_ALREADY_CANCELLED: BAD_REQUEST('transaction_ref'),
  PAYER_IS_SELLER: BAD_REQUEST('user_id'),
  DUPLICATE_PHONE_NUMBER: BAD_REQUEST('phone_number'),
  DUPLICATE_EMAIL: BAD_REQUEST('email'),
  PREORDER_NOT_FOUND: BAD_REQUEST('pre_order_token'),
  PREORDER_ALREADY_PAID: BAD_REQUEST('pre_order_token'),
  SELLER_NOT_FOUND: BAD_REQUEST('seller_code'),
  DUPLICATE_OUT_TRADE_NO: BAD_REQUEST('out_trade_no'),
  DEPOSIT_COMPLETED: BAD_REQUEST('token'),
  DEPOSIT_DECLINED: BAD_REQUEST('token'),
  DEPOSIT_FAILED: BAD_REQUEST('token'),
  DEPOSIT_CANCELLED: BAD_REQUEST('token'),
  DEPOSIT_EXPIRED: BAD_REQUEST('token'),
  DEPOSIT_CONFIRMED_BY_FORM: BAD_REQUEST('token'),
  DEPOSIT_CONFIRMED_BY_PASSWORD: BAD_REQUEST('token'),
  DEPOSIT_NOT_FOUND: BAD_REQUEST('token'),
  DEPOSIT_USER_NOT_FOUND: BAD_REQUEST('user_id'),
  PASSWORD_INCORRECT: BAD_REQUEST('password'),
  CARD_EXPIRED: BAD_REQUEST('token'),
  INSTRUMENT_NOT_FOUND: BAD_REQUEST('token'),
  INSTRUMENT_NOT_ACTIVATED: BAD_REQUEST('token'),
  ACTIVATION_NOT_FOUND: BAD_REQUEST('token'),
  FIELD_NOT_DECRYPTABLE: BAD_REQUEST('request'),
  // Onboarding's and the ledger's own refusals: a merchant's users are created and moved through checks of their own
  // first, so these are never the merchant's doing (an operator's record, or a fault).
  MERCHANT_NOT_FOUND: FAULT,
  PARTNER_NOT_FOUND: FAULT,
  WALLET_NOT_FOUND: FAULT,
  CREDENTIAL_NOT_FOUND: FAULT,
  INVALID_PUBLIC_KEY: FAULT,
  INVALID_CURRENCY: FAULT,
  ACCOUNT_NOT_FOUND: FAULT,
  CURRENCY_MISMATCH: FAULT,
  UNBALANCED_POSTINGS: FAULT,
  IDEMPOTENCY_CONFLICT: FAULT,
  PENDING_TRANSFER_NOT_FOUND: FAULT,
  PENDING_TRANSFER_ALREADY_POSTED: FAULT,
  PENDING_TRANSFER_ALREADY_VOIDED: FAULT,
  PENDING_TRANSFER_EXPIRED: FAULT,
  ACQUIRER_NOT_CONFIGURED: BAD_REQUEST('token'),
  // Only a confirmation step sent straight to Temporal meets it: never the merchant's doing.
  CONFIRMATION_NOT_RECORDED: FAULT,
  IDEMPOTENCY_KEY_INVALID: BAD_REQUEST('Idempotency-Key'),
  // The key names another request (other parameters): it may only narrow a signed body, never redirect it.
  IDEMPOTENCY_KEY_REUSED: { status: 409, message: 'Conflict', field: 'Idempotency-Key' },
  // A request with this key is still running: retry later (docs/idempotency.md).
  IDEMPOTENCY_KEY_IN_PROGRESS: { status: 409, message: 'Conflict', field: 'Idempotency-Key' },
  PERMISSION_DENIED: FAULT,
  // Too many failed logins, or too many requests of one merchant: 429 with Retry-After (docs/security.md).
  RATE_LIMITED: { status: 429, message: 'Too Many Requests', field: 'request' },
  UNAVAILABLE: FAULT,
  DEADLINE_EXCEEDED: FAULT,
  INTERNAL: FAULT,
};


export const UNAUTHORIZED_TOKEN_MISSING = failure(401, 'Unauthorized', { token: [AUTH_MESSAGES.tokenMissing] });

export function badRequest(fields: FieldViolations): AreaCAnswer {
  return failure(400, 'Bad Request', fields);
}

export function internalError(): AreaCAnswer {
  return failure(500, 'Internal Server Error', { server: [INTERNAL_ERROR_MESSAGE] });
}

/** The failure of an error thrown while handling a request: an RPC's, or the façade's own field refusal. */
function failureOf(error: unknown): RpcFailure<AreaCReason> {
  if (!(error instanceof DomainError)) return readRpcFailure(error, ...AREA_C_SERVICES);
  const reason = Object.hasOwn(AREA_C_REASON_ERRORS, error.reason) ? (error.reason as AreaCReason) : 'INTERNAL';
  return { code: codeOfKind(error.kind), reason, message: error.message, fields: error.fields, retryAfterSeconds: error.retryAfterSeconds };
}

/**
 * Any error thrown while handling a request → its Area C answer. `isFault` is true for the 500 case (log it).
 */
export function answerForError(error: unknown): AreaCAnswer & { isFault: boolean } {
  const failureInfo = failureOf(error);
  if (failureInfo.reason === 'RATE_LIMITED') {
    return { ...failure(429, 'Too Many Requests', { request: [RATE_LIMITED_MESSAGE] }), retryAfterSeconds: failureInfo.retryAfterSeconds, isFault: false };
  }
  const entry = AREA_C_REASON_ERRORS[failureInfo.reason];
  if (entry.status === 500) return { ...internalError(), isFault: true };
  let fields = renderFieldProblems(failureInfo.fields);
  if (Object.keys(fields).length === 0) fields = { [entry.field]: [failureInfo.message] };
  return { ...failure(entry.status, entry.message, fields), isFault: false };
}

/** The façade's own answers on an Area C path: unknown route, wrong method, body too large, last-resort fault. */
export function areaCEdgeError(status: 404 | 405 | 413 | 500 | 503): AreaCAnswer {
  if (status === 404) return failure(404, 'Not Found', { route: ['The route does not exist.'] });
  if (status === 405) return failure(405, 'Method Not Allowed', { method: ['The method is not allowed on this route.'] });
  if (status === 413) return failure(413, 'Payload Too Large', { body: ['The request body may not be greater than 1048576 bytes.'] });
  if (status === 503) return failure(503, 'Service Unavailable', { server: [BUSY_MESSAGE] });
  return internalError();
}
