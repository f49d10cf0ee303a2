/**
 * Area A's answer rules as data (payment-services-interface.md "Area A", platform decisions §6): the envelopes, the
 * field rules of the interface's tables (src/field-rules.ts) with the words of their problems, the service names, the
 * documented messages, and the one exhaustive table mapping every reason the TransferService can answer to the
 * documented error_code / error_desc / HTTP status. Pure: the api's gateway (gateway.ts) answers with them, the
 * partner façade its own edge answers, the tests read them.
 */
import { isReasonOf, type DomainError } from '../../errors';
import { parseProblem, type FieldProblem } from '../../field-problems';
import { amount, integer, readFields, text, type Body, type FieldRules, type ValuesOf } from '../../field-rules';
import { isCurrency } from '../../money';
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

export const AREA_A_SERVICES = ['create.unified.fundTransfer', 'confirm.fundTransfer', 'query.fundTransfer', 'query.events'] as const;
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
    const [field, problems] = Object.entries(error.fields)[0] ?? [];
    return field && problems?.[0] ? validationError(describeProblem(field, problems[0])) : AREA_A_ERRORS.VALIDATION_FAILED;
  }
  return AREA_A_ERRORS[error.reason];
}

/** The failure envelope `{success:false, error_code, error_desc}`. */
export function errorEnvelope(error: AreaAError): Body {
  return { success: false, error_code: error.error_code, error_desc: error.error_desc };
}

/** The success envelope of a gateway answer's `data`. */
export function okEnvelope(data: Body): Body {
  return { success: true, code: 200, message: 'OK', data };
}

/** Thrown inside the gateway to answer with an Area A error. */
export class AreaAFailure extends Error {
  constructor(readonly error: AreaAError) {
    super(error.error_desc);
  }
}

/** The field problems Area A's rules answer (and the amounts the money module refuses). */
type AreaAProblem = Extract<
  FieldProblem,
  | 'required'
  | 'string'
  | 'control_characters'
  | 'max_length'
  | 'alphanumeric'
  | 'user_id_or_phone'
  | 'currency_code'
  | 'decimal'
  | 'decimals'
  | 'not_negative'
  | 'positive'
  | 'too_large'
  | 'integer'
  | 'min'
  | 'max'
>;

/** Field problem → the words after the field's name in a VALIDATIONERROR's error_desc ("out_trade_no is required"). */
const AREA_A_PROBLEM_WORDS: Record<AreaAProblem, (...params: string[]) => string> = {
  required: () => 'is required',
  string: () => 'must be a string',
  control_characters: () => 'must not contain control characters',
  max_length: (max) => `must be at most ${max} characters`,
  alphanumeric: () => 'must contain only letters and digits',
  user_id_or_phone: () => 'must be a user id or a phone number',
  currency_code: () => 'must be a three-letter currency code',
  decimal: () => 'must be a decimal number',
  decimals: (places) => `must have at most ${places} decimal places`,
  not_negative: () => 'must not be negative',
  positive: () => 'must be greater than 0',
  too_large: () => 'is too large',
  integer: () => 'must be an integer',
  min: (least) => `must be at least ${least}`,
  max: (most) => `must be at most ${most}`,
};

/** A VALIDATIONERROR's error_desc for one field's problem; text that is no problem Area A knows follows the name. */
export function describeProblem(field: string, text: string): string {
  const parsed = parseProblem(text);
  const words = parsed && Object.hasOwn(AREA_A_PROBLEM_WORDS, parsed.code) ? AREA_A_PROBLEM_WORDS[parsed.code as AreaAProblem](...parsed.params) : text;
  return `${field} ${words}`;
}

/** Alpha(n): letters and digits only. */
const alpha = (max: number) => text({ required: true, max, pattern: { test: /^[A-Za-z0-9]+$/, code: 'alphanumeric' } });
/** String(n): non-empty text. */
const string = (max: number) => text({ required: true, max });

/** The service a gateway request names (String(64)); then its own fields. */
export const SERVICE_FIELD = { service: string(AREA_A_LIMITS.service) };

/**
 * The fields of each gateway service, in the interface's order; each request answers its first failing field. A
 * receiver_id is Alpha(25) with an optional leading "+" (international phone form, §6); a malformed (but present,
 * in-size) pre_transfer_id is NOTEXIST, as the interface's table says, so it is only String(64) here.
 */
export const AREA_A_FIELD_RULES = {
  'create.unified.fundTransfer': {
    out_trade_no: alpha(AREA_A_LIMITS.out_trade_no),
    receiver_id: text({ required: true, max: AREA_A_LIMITS.receiver_id, pattern: { test: /^\+?[A-Za-z0-9]+$/, code: 'user_id_or_phone' } }),
    sender_name: string(AREA_A_LIMITS.sender_name),
    currency: text({ required: true, max: 3, pattern: { test: /^[A-Z]{3}$/, code: 'currency_code' } }),
    // Read in the currency's decimals (USD's when it is none); only USD is transferred (the service says so).
    amount: amount({ required: true, absence: 'missing', currency: (read) => (isCurrency(read.currency) ? read.currency : 'USD') }),
  },
  'confirm.fundTransfer': { partner_transaction_id: alpha(AREA_A_LIMITS.partner_transaction_id), pre_transfer_id: string(AREA_A_LIMITS.pre_transfer_id) },
  'query.fundTransfer': { out_trade_no: alpha(AREA_A_LIMITS.out_trade_no) },
  // The partner's event stream (docs/events.md): the seq of the last event seen (default 0), events per page (default 100).
  'query.events': { after: integer({ min: 0, max: Number.MAX_SAFE_INTEGER, digits: 16 }), limit: integer({ min: 1, max: 500 }) },
} as const satisfies Record<AreaAService, FieldRules>;

/**
 * Reads a gateway body with `rules`.
 * @throws AreaAFailure VALIDATIONERROR naming the first failing field
 */
export function readAreaA<R extends FieldRules>(rules: R, body: Body): ValuesOf<R> {
  const { values, problems } = readFields(rules, body);
  const [field, texts] = Object.entries(problems)[0] ?? [];
  if (field && texts?.[0]) throw new AreaAFailure(validationError(describeProblem(field, texts[0])));
  return values;
}
