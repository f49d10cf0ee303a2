/**
 * Area A's answer rules as data (payment-services-interface.md "Area A", platform decisions §6): the envelopes, the
 * field rules of the interface's tables, the service names, the documented messages, and the one exhaustive table
 * mapping every reason the pre-transfer flow can fail with to the documented error_code / error_desc / HTTP status.
 * Pure: the api's gateway (gateway.ts) answers with them, the partner façade its own edge answers, the tests read
 * them.
 */
import { isReasonOf, type DomainError } from '../../errors';
import { hasControlCharacters } from '../../text';
import { TRANSFER_SERVICE_REASONS, type TransferServiceReason } from './reasons';

/** Field sizes of the interface's Limits table. */
export const AREA_A_LIMITS = {
  'partner-id': 64,
  'partner-secret-key': 128,
  user_name: 64,
  password: 64,
  service: 64,
  sign_type: 10,
  out_trade_no: 64,
  receiver_id: 25,
  sender_name: 96,
  receiver_name: 96,
  pre_transfer_id: 64,
  partner_transaction_id: 64,
  fund_transfer_id: 64,
  Authorization: 1200,
  access_token: 1200,
} as const;

export const AREA_A_SERVICES = ['create.unified.fundTransfer', 'confirm.fundTransfer', 'query.fundTransfer'] as const;
export type AreaAService = (typeof AREA_A_SERVICES)[number];

export type AreaAErrorCode = 'UNAUTHENTICATED' | 'NOTELIGIBLE' | 'VALIDATIONERROR' | 'USED' | 'NOTEXIST' | 'EXPIRED' | 'SYSTEMERROR';

export interface AreaAError {
  status: number;
  error_code: AreaAErrorCode;
  error_desc: string;
}

/** Every reason the Area A gateway can meet: the TransferService's (./reasons.ts). */
export type AreaAReason = TransferServiceReason;

export const SYSTEM_ERROR: AreaAError = { status: 500, error_code: 'SYSTEMERROR', error_desc: 'Server error or busy.' };
/** Too many attempts or requests: HTTP 429 (with `Retry-After`), in the SYSTEMERROR envelope ("busy"), unsigned. */
export const RATE_LIMITED_ERROR: AreaAError = { status: 429, error_code: 'SYSTEMERROR', error_desc: 'Too many requests. Retry after the time in Retry-After.' };
/** A missing, bad or expired token (or a suspended partner): 401, unsigned. */
export const UNAUTHENTICATED_ERROR: AreaAError = { status: 401, error_code: 'UNAUTHENTICATED', error_desc: 'Unauthorized' };
/** A bad or missing `sign` (platform decisions §6). */
export const INVALID_SIGN_ERROR: AreaAError = { status: 400, error_code: 'VALIDATIONERROR', error_desc: 'invalid sign' };

/** A VALIDATIONERROR with a field-specific description. */
export function validationError(error_desc: string): AreaAError {
  return { status: 400, error_code: 'VALIDATIONERROR', error_desc };
}

/**
 * Reason → Area A error, over every reason the TransferService can answer (the flow's, the ledger's, the common
 * ones). Exhaustive: a reason added to any of those tables without a line here does not compile. VALIDATION_FAILED
 * names its first bad field instead when the error says which (see `areaAErrorOf`).
 */
export const AREA_A_ERRORS: Record<AreaAReason, AreaAError> = {
  UNAUTHENTICATED: UNAUTHENTICATED_ERROR,
  RECEIVER_NOT_ELIGIBLE: { status: 400, error_code: 'NOTELIGIBLE', error_desc: 'The receiver is not eligible for the funds.' },
  PRE_TRANSFER_USED: { status: 400, error_code: 'USED', error_desc: 'The pre-transfer id was already used.' },
  PRE_TRANSFER_NOT_FOUND: { status: 400, error_code: 'NOTEXIST', error_desc: 'Wrong or malformed pre-transfer id.' },
  TRANSFER_NOT_FOUND: { status: 400, error_code: 'NOTEXIST', error_desc: 'No transfer for this out_trade_no.' },
  PRE_TRANSFER_EXPIRED: { status: 400, error_code: 'EXPIRED', error_desc: 'The unified fund transfer has expired.' },
  INSUFFICIENT_PARTNER_BALANCE: validationError('insufficient partner balance'),
  DUPLICATE_OUT_TRADE_NO: validationError('duplicate out_trade_no'),
  DUPLICATE_PARTNER_TRANSACTION_ID: validationError('duplicate partner_transaction_id'),
  CURRENCY_NOT_ALLOWED: validationError('currency only USD is allowed'),
  // The api records every confirm it sends; a missing record is never the partner's doing.
  CONFIRMATION_NOT_RECORDED: SYSTEM_ERROR,
  // The ledger's refusals of the hold: the float short of the amount is the partner's; the rest never are.
  INSUFFICIENT_FUNDS: validationError('insufficient partner balance'),
  ACCOUNT_NOT_FOUND: SYSTEM_ERROR,
  CURRENCY_MISMATCH: SYSTEM_ERROR,
  UNBALANCED_POSTINGS: SYSTEM_ERROR,
  IDEMPOTENCY_CONFLICT: SYSTEM_ERROR,
  PENDING_TRANSFER_NOT_FOUND: SYSTEM_ERROR,
  PENDING_TRANSFER_ALREADY_POSTED: SYSTEM_ERROR,
  PENDING_TRANSFER_ALREADY_VOIDED: SYSTEM_ERROR,
  PENDING_TRANSFER_EXPIRED: SYSTEM_ERROR,
  VALIDATION_FAILED: validationError('invalid request'),
  INVALID_AMOUNT: validationError('invalid request'),
  // The platform's own credentials or health, never the partner's doing.
  PERMISSION_DENIED: SYSTEM_ERROR,
  // Too many failed token requests, or too many requests of one partner: 429 with Retry-After (docs/security.md).
  RATE_LIMITED: RATE_LIMITED_ERROR,
  UNAVAILABLE: SYSTEM_ERROR,
  DEADLINE_EXCEEDED: SYSTEM_ERROR,
  INTERNAL: SYSTEM_ERROR,
};

/** The Area A error of a domain error; a reason the TransferService cannot answer is a SYSTEMERROR. */
export function areaAErrorOf(error: DomainError): AreaAError {
  if (!isReasonOf(TRANSFER_SERVICE_REASONS, error.reason)) return SYSTEM_ERROR;
  if (error.reason === 'VALIDATION_FAILED' || error.reason === 'INVALID_AMOUNT') {
    const [field, messages] = Object.entries(error.fields)[0] ?? [];
    return field && messages?.[0] ? validationError(`${field} ${messages[0]}`) : AREA_A_ERRORS.VALIDATION_FAILED;
  }
  return AREA_A_ERRORS[error.reason];
}

type Body = Record<string, unknown>;

/** An answer before signing: the documented success or error envelope with its HTTP status. */
export class GatewayAnswer {
  constructor(
    readonly status: number,
    readonly body: Body,
  ) {}
  static error(error: AreaAError): GatewayAnswer {
    return new GatewayAnswer(error.status, errorEnvelope(error));
  }
  static ok(data: Body): GatewayAnswer {
    return new GatewayAnswer(200, { success: true, code: 200, message: 'OK', data });
  }
}

/** The failure envelope `{success:false, error_code, error_desc}`. */
export function errorEnvelope(error: AreaAError): Body {
  return { success: false, error_code: error.error_code, error_desc: error.error_desc };
}

/** Thrown inside the gateway to answer with an Area A error. */
export class AreaAFailure extends Error {
  constructor(readonly error: AreaAError) {
    super(error.error_desc);
  }
}

/** How a field's value is checked: the interface's type notation. */
export type FieldKind = 'alpha' | 'string' | 'char3' | 'receiver';

const ALPHA = /^[A-Za-z0-9]+$/;

/**
 * Checks one request field against its interface type. Returns the problem as an error_desc, or undefined.
 * kind: alpha = Alpha(n) (letters and digits), string = String(n) (non-empty), char3 = three uppercase letters,
 * receiver = Alpha(25) with an optional leading "+" (international phone form, §6).
 */
export function checkField(body: Body, field: string, kind: FieldKind, maxLength: number): string | undefined {
  const value = body[field];
  if (value === undefined || value === null || value === '') return `${field} is required`;
  if (typeof value !== 'string') return `${field} must be a string`;
  if (hasControlCharacters(value)) return `${field} must not contain control characters`;
  if (value.length > maxLength) return `${field} must be at most ${maxLength} characters`;
  if (kind === 'alpha' && !ALPHA.test(value)) return `${field} must contain only letters and digits`;
  if (kind === 'receiver' && !/^\+?[A-Za-z0-9]+$/.test(value)) return `${field} must be a user id or a phone number`;
  if (kind === 'char3' && !/^[A-Z]{3}$/.test(value)) return `${field} must be a three-letter currency code`;
  return undefined;
}

/** Checks each field in order; throws the first problem as a VALIDATIONERROR. */
export function requireFields(body: Body, checks: Array<[string, FieldKind, number]>): void {
  for (const [field, kind, max] of checks) {
    const problem = checkField(body, field, kind, max);
    if (problem) throw new AreaAFailure(validationError(problem));
  }
}
