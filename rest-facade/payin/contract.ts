/**
 * Area B contract as data (payment-services-interface.md "Area B", "Errors / Area B", platform decisions §4, §8):
 * the envelopes, the documented messages, the field rules of B1 and B2 with their messages, and the one exhaustive
 * table mapping every reason the PayinService can answer to an HTTP status and body per route. Pure: used by the
 * payin router and the tests.
 */
import type { FieldViolations } from '../../src/errors';
import type { ServiceReason } from '../../src/rpc/errors';
import { AmountError, parseJsonLossless, readAmount, type AmountProblem } from '../../src/money';
import { exceedsJsonDepth, hasControlCharacters } from '../../src/text';

/** Area B route names used in the messages table. */
export type PayinRoute = 'payins' | 'status' | 'balance' | 'notifications';

export const PAYIN_MESSAGES = {
  rateLimited: 'Too many requests. Retry after the time in Retry-After.',
  validationErrors: 'Validation errors',
  upstreamUnavailable: 'Payin service is unavailable. Please try again later.',
  payinFailed: 'Unable to process payin request. Please contact support.',
  unauthorized: 'Unauthorized',
  topUpNotFound: 'Top-up not found.',
  validationError: 'Validation error',
  unauthenticated: 'Unauthenticated. Please provide valid credentials.',
  suspended: 'Merchant account is suspended',
  invalidSignature: 'Invalid signature',
  internal: 'Internal server error',
  busy: 'Service is busy. Please try again later.',
} as const;

/** Field limits of B1 (interface "Limits"). */
export const PAYIN_LIMITS = {
  minAmountUnits: 10_000n, // 0.01 USDT (6 decimals)
  memoMaxLength: 255,
  outTradeNoMaxLength: 255,
  currency: 'USDT',
} as const;

/** `PAYIN-` + 20 uppercase letters and digits (platform decisions §4). */
export const INVOICE_REFERENCE_PATTERN = /^PAYIN-[A-Z0-9]{20}$/;

/** Area B failure body (platform decisions §8). */
export interface PayinErrorBody {
  success: false;
  message: string;
  errors: FieldViolations | null;
}

export interface AreaBError {
  status: number;
  body: PayinErrorBody;
}

/** Every reason the Area B RPCs can answer: the PayinService's (src/flows/payin/reasons.ts). */
export type AreaBReason = ServiceReason<'payin'>;

const failure = (status: number, message: string, errors: FieldViolations | null = null): AreaBError => ({
  status,
  body: { success: false, message, errors },
});

const AMOUNT_MESSAGES: Record<AmountProblem, string> = {
  not_a_number: 'The amount must be a number.',
  too_many_decimals: 'The amount must not have more than 6 decimal places.',
  negative: 'The amount must be at least 0.01.',
  zero: 'The amount must be at least 0.01.',
  too_large: 'The amount is too large.',
};

/**
 * The PayinService names the problem of each notification field it refuses (`required`, `invalid`, or an amount
 * problem); these are their messages (platform decisions §4).
 */
const NOTIFICATION_FIELD_MESSAGES: Record<string, Record<string, string>> = {
  invoice_reference: { required: 'The invoice reference field is required.', invalid: 'The selected invoice reference is invalid.' },
  trx_ref: { required: 'The trx ref field is required.', invalid: 'The trx ref must be a string of at most 255 characters without control characters.' },
  status: { invalid: 'The selected status is invalid.' },
  currency: { invalid: 'The selected currency is invalid.' },
  amount: AMOUNT_MESSAGES,
};

function notificationMessages(fields: FieldViolations): FieldViolations {
  return Object.fromEntries(
    Object.entries(fields).map(([field, problems]) => [field, problems.map((problem) => NOTIFICATION_FIELD_MESSAGES[field]?.[problem] ?? problem)]),
  );
}

/** A route's 500: the payins route's documented message, the others a generic one; never an internal message. */
const systemError = (route: PayinRoute) => failure(500, route === 'payins' ? PAYIN_MESSAGES.payinFailed : PAYIN_MESSAGES.internal);
const validation = (route: PayinRoute, fields: FieldViolations) =>
  failure(
    422,
    route === 'status' ? PAYIN_MESSAGES.validationError : PAYIN_MESSAGES.validationErrors,
    route === 'notifications' ? notificationMessages(fields) : fields,
  );

/** The documented message of a field refused by the service (its field violation names only the problem). */
const SERVICE_FIELD_MESSAGES: Partial<Record<AreaBReason, FieldViolations>> = {
  OUT_TRADE_NO_TAKEN: { out_trade_no: ['The out trade no has already been taken.'] },
  UPSTREAM_NOT_CONFIGURED: { upstream: ['No upstream payin server is configured.'] },
};

/**
 * Reason → Area B answer, per route, over every reason the PayinService can answer. Exhaustive: a reason added to
 * any table the service uses without a line here does not compile.
 */
const AREA_B_ERRORS: Record<AreaBReason, (route: PayinRoute, fields: FieldViolations) => AreaBError> = {
  UNAUTHENTICATED: (route) => failure(401, route === 'balance' ? PAYIN_MESSAGES.unauthenticated : PAYIN_MESSAGES.unauthorized),
  UPSTREAM_SIGNATURE_INVALID: () => failure(401, PAYIN_MESSAGES.invalidSignature),
  MERCHANT_SUSPENDED: () => failure(403, PAYIN_MESSAGES.suspended),
  VALIDATION_FAILED: validation,
  INVALID_AMOUNT: validation,
  OUT_TRADE_NO_TAKEN: (route) => validation(route, SERVICE_FIELD_MESSAGES.OUT_TRADE_NO_TAKEN!),
  UPSTREAM_NOT_CONFIGURED: (route) => validation(route, SERVICE_FIELD_MESSAGES.UPSTREAM_NOT_CONFIGURED!),
  UPSTREAM_UNAVAILABLE: () => failure(502, PAYIN_MESSAGES.upstreamUnavailable),
  PAYIN_NOT_FOUND: () => failure(404, PAYIN_MESSAGES.topUpNotFound),
  PAYIN_FAILED: systemError,
  IDEMPOTENCY_KEY_INVALID: (route) => validation(route, { 'Idempotency-Key': ['The idempotency key must be 1 to 255 visible ASCII characters.'] }),
  IDEMPOTENCY_KEY_REUSED: (route) => validation(route, { 'Idempotency-Key': ['The idempotency key was already used with other parameters.'] }),
  // The first request with this key is still running: retry later with the same key (docs/idempotency.md).
  IDEMPOTENCY_KEY_IN_PROGRESS: () => failure(409, 'A request with this idempotency key is in progress. Please retry later.'),
  SETTLEMENT_NOT_AUTHORIZED: systemError,
  CLOSE_NOT_AUTHORIZED: systemError,
  // Operator-only, ledger or infrastructure reasons: never the merchant's doing.
  WEBHOOK_NOT_FOUND: systemError,
  ACCOUNT_NOT_FOUND: systemError,
  CURRENCY_MISMATCH: systemError,
  INSUFFICIENT_FUNDS: systemError,
  UNBALANCED_POSTINGS: systemError,
  IDEMPOTENCY_CONFLICT: systemError,
  PENDING_TRANSFER_NOT_FOUND: systemError,
  PENDING_TRANSFER_ALREADY_POSTED: systemError,
  PENDING_TRANSFER_ALREADY_VOIDED: systemError,
  PENDING_TRANSFER_EXPIRED: systemError,
  PERMISSION_DENIED: systemError,
  // Too many unknown API keys from one address, or too many requests of one merchant (docs/security.md).
  RATE_LIMITED: () => failure(429, PAYIN_MESSAGES.rateLimited),
  UNAVAILABLE: systemError,
  DEADLINE_EXCEEDED: systemError,
  INTERNAL: systemError,
};

/** The one Area B error table: RPC failure reason + route → HTTP status and body. */
export function payinErrorFor(route: PayinRoute, reason: AreaBReason, fields: FieldViolations): AreaBError {
  return AREA_B_ERRORS[reason](route, fields);
}


/** The message of an amount the money module refused, as B1 and the notifications document it. */
export function amountMessage(problem: AmountProblem): string {
  return AMOUNT_MESSAGES[problem];
}

const characters = (text: string) => [...text].length;

/** A body that is not a JSON object, in the B1 envelope. */
const NOT_AN_OBJECT: FieldViolations = { body: ['The request body must be a JSON object.'] };

/** Parses a JSON object losslessly; undefined when the text is not one. */
export function parseObject(raw: string): Record<string, unknown> | undefined {
  try {
    const parsed = parseJsonLossless(raw);
    // A body nested deeper than any documented shape is refused like one that is not an object.
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && !exceedsJsonDepth(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** B1's fields, typed. */
export interface CreatePayinFields {
  amount_units: bigint;
  currency: 'USDT';
  memo: string | undefined;
  out_trade_no: string;
}

/**
 * B1 fields in the interface's order: amount (≥ 0.01, ≤ 6 decimals, read losslessly), currency (USDT only, default
 * USDT), memo (≤ 255), out_trade_no (required, ≤ 255). Every failing field at once.
 */
export function readCreatePayin(raw: string): { fields: CreatePayinFields } | { errors: FieldViolations } {
  const body = parseObject(raw);
  if (!body) return { errors: NOT_AN_OBJECT };
  const errors: FieldViolations = {};
  let amount_units = 0n;
  if (body.amount === undefined || body.amount === null || body.amount === '') {
    errors.amount = ['The amount field is required.'];
  } else {
    try {
      amount_units = readAmount(body.amount, 'USDT', { allowZero: true });
      if (amount_units < PAYIN_LIMITS.minAmountUnits) errors.amount = ['The amount must be at least 0.01.'];
    } catch (error) {
      if (!(error instanceof AmountError)) throw error;
      errors.amount = [amountMessage(error.problem)];
    }
  }
  if (body.currency !== undefined && body.currency !== null && body.currency !== PAYIN_LIMITS.currency) {
    errors.currency = ['The selected currency is invalid. Only USDT is supported.'];
  }
  let memo: string | undefined;
  if (body.memo !== undefined && body.memo !== null) {
    if (typeof body.memo !== 'string') errors.memo = ['The memo must be a string.'];
    else if (hasControlCharacters(body.memo)) errors.memo = ['The memo must not contain control characters.'];
    else if (characters(body.memo) > PAYIN_LIMITS.memoMaxLength) errors.memo = ['The memo must not be greater than 255 characters.'];
    else memo = body.memo;
  }
  let out_trade_no = '';
  if (body.out_trade_no === undefined || body.out_trade_no === null || body.out_trade_no === '') {
    errors.out_trade_no = ['The out trade no field is required.'];
  } else if (typeof body.out_trade_no !== 'string') {
    errors.out_trade_no = ['The out trade no must be a string.'];
  } else if (hasControlCharacters(body.out_trade_no)) {
    errors.out_trade_no = ['The out trade no must not contain control characters.'];
  } else if (characters(body.out_trade_no) > PAYIN_LIMITS.outTradeNoMaxLength) {
    errors.out_trade_no = ['The out trade no must not be greater than 255 characters.'];
  } else {
    out_trade_no = body.out_trade_no;
  }
  if (Object.keys(errors).length > 0) return { errors };
  return { fields: { amount_units, currency: 'USDT', memo, out_trade_no } };
}

/** B2's one field, out_trade_no (required string). */
export function readPayinStatus(raw: string): { out_trade_no: string } | { errors: FieldViolations } {
  const body = parseObject(raw);
  const out_trade_no = body?.out_trade_no;
  if (out_trade_no === undefined || out_trade_no === null || out_trade_no === '') {
    return { errors: { out_trade_no: ['The out trade no field is required.'] } };
  }
  if (typeof out_trade_no !== 'string') return { errors: { out_trade_no: ['The out trade no must be a string.'] } };
  if (hasControlCharacters(out_trade_no)) return { errors: { out_trade_no: ['The out trade no must not contain control characters.'] } };
  if (characters(out_trade_no) > PAYIN_LIMITS.outTradeNoMaxLength) {
    return { errors: { out_trade_no: ['The out trade no must not be greater than 255 characters.'] } };
  }
  return { out_trade_no };
}


/** The façade's own answers on an Area B path: unknown route, wrong method, body too large, last-resort fault. */
export function areaBEdgeError(status: 404 | 405 | 413 | 500 | 503): { status: number; body: PayinErrorBody } {
  const messages = { 404: 'Not Found.', 405: 'Method Not Allowed.', 413: 'Payload Too Large.', 500: PAYIN_MESSAGES.internal, 503: PAYIN_MESSAGES.busy };
  return failure(status, messages[status]);
}
