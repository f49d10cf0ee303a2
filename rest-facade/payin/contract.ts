/**
 * Area B contract as data (payment-services-interface.md "Area B", "Errors / Area B", platform decisions §4, §8):
 * the envelopes, the documented messages, the field rules of B1 and B2 (src/field-rules.ts), the words of every field
 * problem Area B meets (its rules' and the PayinService's), and the one exhaustive table mapping every reason the
 * PayinService can answer to an HTTP status and body per route. Pure: used by the payin router and the tests.
 */
import type { FieldViolations } from '../../src/errors';
import { parseProblem, problem } from '../../src/field-problems';
import { amount, integer, present, readFields, refuse, text, type FieldRule } from '../../src/field-rules';
import { parseJsonLossless } from '../../src/money';
import type { ServiceReason } from '../../src/rpc/errors';
import { exceedsJsonDepth } from '../../src/text';

/** Area B route names used in the messages table. */
export type PayinRoute = 'payins' | 'status' | 'balance' | 'notifications' | 'events' | 'timeline' | 'refunds' | 'refund_status' | 'payouts' | 'payout_status';

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
  paymentNotFound: 'Payment not found.',
  refundNotFound: 'Refund not found.',
  payoutNotFound: 'Payout not found.',
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

/**
 * Every reason the Area B RPCs can answer: the PayinService's (src/flows/payin/reasons.ts), the EventsService's, the
 * TimelineService's and the RefundService's (src/flows/refund/reasons.ts).
 */
export type AreaBReason = ServiceReason<'payin' | 'events' | 'timeline' | 'refund' | 'payout'>;

const failure = (status: number, message: string, errors: FieldViolations | null = null): AreaBError => ({
  status,
  body: { success: false, message, errors },
});

/** The least B1 amount, as its message writes it. */
const MIN_AMOUNT_TEXT = '0.01';

/** A field as Area B's messages name it ("The out trade no field is required."). */
const LABELS: Record<string, string> = { out_trade_no: 'out trade no', invoice_reference: 'invoice reference', trx_ref: 'trx ref', refund_reference: 'refund reference' };

/** The field problems Area B meets: its own rules' (B1, B2) and the PayinService's (notifications, OUT_TRADE_NO_TAKEN). */
type AreaBProblem =
  | 'required'
  | 'string'
  | 'control_characters'
  | 'max_length'
  | 'number'
  | 'decimal'
  | 'decimals'
  | 'not_negative'
  | 'positive'
  | 'min'
  | 'too_large'
  | 'currency'
  | 'invalid'
  | 'taken'
  | 'json_object'
  | 'integer'
  | 'max';

/** Field problem → its Area B message (platform decisions §4, §8), by the field's label and the problem's params. */
const AREA_B_PROBLEM_MESSAGES: Record<AreaBProblem, (label: string, ...params: string[]) => string> = {
  required: (label) => `The ${label} field is required.`,
  string: (label) => `The ${label} must be a string.`,
  control_characters: (label) => `The ${label} must not contain control characters.`,
  max_length: (label, max) => `The ${label} must not be greater than ${max} characters.`,
  number: (label) => `The ${label} must be a number.`,
  decimal: (label) => `The ${label} must be a number.`,
  decimals: (label, places) => `The ${label} must not have more than ${places} decimal places.`,
  not_negative: (label) => `The ${label} must be at least ${MIN_AMOUNT_TEXT}.`,
  positive: (label) => `The ${label} must be at least ${MIN_AMOUNT_TEXT}.`,
  min: (label, min) => `The ${label} must be at least ${min}.`,
  too_large: (label) => `The ${label} is too large.`,
  currency: (label) => `The selected ${label} is invalid. Only USDT is supported.`,
  invalid: (label) => `The selected ${label} is invalid.`,
  taken: (_label, label) => `The ${label} has already been taken.`,
  json_object: () => 'The request body must be a JSON object.',
  integer: (label) => `The ${label} must be an integer.`,
  max: (label, max) => `The ${label} must not be greater than ${max}.`,
};

/** Where one field's problem has words of its own. */
const FIELD_PROBLEM_MESSAGES: Record<string, Partial<Record<AreaBProblem, string>>> = {
  trx_ref: { invalid: 'The trx ref must be a string of at most 255 characters without control characters.' },
};

/** One problem of `field` in Area B's words; text that is no problem Area B knows passes unchanged. */
function renderProblem(field: string, text: string): string {
  const parsed = parseProblem(text);
  if (!parsed || !Object.hasOwn(AREA_B_PROBLEM_MESSAGES, parsed.code)) return text;
  const code = parsed.code as AreaBProblem;
  return FIELD_PROBLEM_MESSAGES[field]?.[code] ?? AREA_B_PROBLEM_MESSAGES[code](LABELS[field] ?? field, ...parsed.params);
}

/** Every field's problems in Area B's words. */
export function renderFieldProblems(fields: FieldViolations): FieldViolations {
  return Object.fromEntries(Object.entries(fields).map(([field, texts]) => [field, texts.map((text) => renderProblem(field, text))]));
}

/** A route's 500: the payins route's documented message, the others a generic one; never an internal message. */
const systemError = (route: PayinRoute) => failure(500, route === 'payins' ? PAYIN_MESSAGES.payinFailed : PAYIN_MESSAGES.internal);
const validation = (route: PayinRoute, fields: FieldViolations) =>
  failure(422, route === 'status' ? PAYIN_MESSAGES.validationError : PAYIN_MESSAGES.validationErrors, renderFieldProblems(fields));

/**
 * Reason → Area B answer, per route, over every reason the PayinService can answer. Exhaustive: a reason added to
 * any table the service uses without a line here does not compile.
 */
const AREA_B_ERRORS: Record<AreaBReason, (route: PayinRoute, fields: FieldViolations) => AreaBError> = {
  UNAUTHENTICATED: (route) => failure(401, route === 'balance' || route === 'events' || route === 'timeline' ? PAYIN_MESSAGES.unauthenticated : PAYIN_MESSAGES.unauthorized),
  UPSTREAM_SIGNATURE_INVALID: () => failure(401, PAYIN_MESSAGES.invalidSignature),
  MERCHANT_SUSPENDED: () => failure(403, PAYIN_MESSAGES.suspended),
  VALIDATION_FAILED: validation,
  INVALID_AMOUNT: validation,
  // The service names the field and its problem (taken): the message is the interface's.
  OUT_TRADE_NO_TAKEN: validation,
  UPSTREAM_NOT_CONFIGURED: (route) => validation(route, { upstream: ['No upstream payin server is configured.'] }),
  UPSTREAM_UNAVAILABLE: () => failure(502, PAYIN_MESSAGES.upstreamUnavailable),
  PAYIN_NOT_FOUND: () => failure(404, PAYIN_MESSAGES.topUpNotFound),
  // Unknown, or another merchant's: one answer (docs/timeline.md).
  PAYMENT_NOT_FOUND: () => failure(404, PAYIN_MESSAGES.paymentNotFound),
  PAYIN_FAILED: systemError,
  IDEMPOTENCY_KEY_INVALID: (route) => validation(route, { 'Idempotency-Key': ['The idempotency key must be 1 to 255 visible ASCII characters.'] }),
  // A refund's key reused with another body is a conflict (docs/refunds.md); B1 keeps its documented 422.
  IDEMPOTENCY_KEY_REUSED: (route) =>
    route === 'refunds' || route === 'payouts'
      ? failure(409, 'The idempotency key was already used with other parameters.', { 'Idempotency-Key': ['The idempotency key was already used with other parameters.'] })
      : validation(route, { 'Idempotency-Key': ['The idempotency key was already used with other parameters.'] }),
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
  // Area C's proof refusals (the EventsService and TimelineService check it too): Area B never sends one.
  MERCHANT_UNAUTHENTICATED: systemError,
  SESSION_MISSING: systemError,
  SESSION_INVALID: systemError,
  SESSION_EXPIRED: systemError,
  INVALID_SIGNATURE: systemError,
  LOGIN_FAILED: systemError,
  LOGIN_TIMESTAMP_INVALID: systemError,
  LOGIN_REPLAYED: systemError,
  // Too many unknown API keys from one address, or too many requests of one merchant (docs/security.md).
  RATE_LIMITED: () => failure(429, PAYIN_MESSAGES.rateLimited),
  UNAVAILABLE: systemError,
  DEADLINE_EXCEEDED: systemError,
  INTERNAL: systemError,
  // Refunds (docs/refunds.md "What a merchant sees"): each refusal holds nothing.
  REFUND_PAYIN_NOT_FOUND: () => failure(404, PAYIN_MESSAGES.topUpNotFound),
  REFUND_NOT_FOUND: () => failure(404, PAYIN_MESSAGES.refundNotFound),
  REFUND_PAYIN_NOT_SETTLED: (route) => validation(route, { out_trade_no: ['The top-up is not paid: there is nothing to refund.'] }),
  REFUND_AMOUNT_EXCEEDS_REFUNDABLE: (route) => validation(route, { amount: ['The amount exceeds the refundable amount of the top-up.'] }),
  REFUND_INSUFFICIENT_BALANCE: (route) => validation(route, { amount: ['The wallet balance is insufficient for this refund.'] }),
  REFUND_PROVIDER_NOT_CONFIGURED: (route) => validation(route, { upstream: ['No refund provider is configured.'] }),
  REFUND_NOTIFICATION_MISMATCH: (route) => validation(route, { amount: ['The amount is not the refund\'s.'] }),
  REFUND_DECISION_NOT_AUTHORIZED: systemError,
  // Payouts (docs/payouts.md "What a merchant sees"): each refusal holds nothing.
  PAYOUT_NOT_FOUND: () => failure(404, PAYIN_MESSAGES.payoutNotFound),
  PAYOUT_INSUFFICIENT_BALANCE: (route) => validation(route, { amount: ['The wallet balance is insufficient for this payout and its fee.'] }),
  PAYOUT_BELOW_MINIMUM: (route) => validation(route, { amount: ['The amount is below the minimum payout.'] }),
  PAYOUT_ABOVE_LIMIT: (route) => validation(route, { amount: ['The amount is above the payout limit.'] }),
  PAYOUT_DAILY_LIMIT_EXCEEDED: (route) => validation(route, { amount: ['The payout would exceed the daily payout limit.'] }),
  PAYOUT_OUT_TRADE_NO_TAKEN: (route) => validation(route, { out_trade_no: ['The out trade no is already used by another payout.'] }),
  PAYOUT_PROVIDER_NOT_CONFIGURED: (route) => validation(route, { upstream: ['No payout provider is configured.'] }),
  PAYOUT_FEE_NOT_CONFIGURED: (route) => validation(route, { currency: ['No payout fee is configured for this currency.'] }),
  PAYOUT_NOTIFICATION_MISMATCH: (route) => validation(route, { amount: ["The amount is not the payout's."] }),
  PAYOUT_DECISION_NOT_AUTHORIZED: systemError,
  PAYOUT_APPROVAL_NOT_AUTHORIZED: systemError,
  PAYOUT_NOT_AWAITING_APPROVAL: systemError,
  // Area C's bank payouts (the PayoutService's other door): an Area B call never names a bank account.
  INSTRUMENT_NOT_FOUND: systemError,
  INSTRUMENT_NOT_ACTIVATED: systemError,
  ACTIVATION_NOT_FOUND: systemError,
  FIELD_NOT_DECRYPTABLE: systemError,
  CARD_EXPIRED: systemError,
};

/** The one Area B error table: RPC failure reason + route → HTTP status and body. */
export function payinErrorFor(route: PayinRoute, reason: AreaBReason, fields: FieldViolations): AreaBError {
  return AREA_B_ERRORS[reason](route, fields);
}


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

/** The order's out_trade_no (B1, B2): required text of at most 255 characters. */
const OUT_TRADE_NO = text({ required: true, max: PAYIN_LIMITS.outTradeNoMaxLength, count: 'code_points' });

/** B1's currency: USDT, the default when absent or null. */
const USDT_ONLY: FieldRule<'USDT' | undefined> = (value) =>
  value === undefined || value === null ? undefined : value === PAYIN_LIMITS.currency ? PAYIN_LIMITS.currency : refuse('currency');

/**
 * B1 fields in the interface's order: amount (≥ 0.01, ≤ 6 decimals, read losslessly), currency (USDT only, default
 * USDT), memo (≤ 255, empty text kept), out_trade_no (required, ≤ 255).
 */
const CREATE_PAYIN = {
  amount: amount({ required: true, currency: () => 'USDT', allowZero: true, min: { units: PAYIN_LIMITS.minAmountUnits, text: MIN_AMOUNT_TEXT }, typed: true }),
  currency: USDT_ONLY,
  memo: text({ max: PAYIN_LIMITS.memoMaxLength, count: 'code_points', absence: 'missing' }),
  out_trade_no: OUT_TRADE_NO,
};

/** B1's fields, or every failing field at once (problem codes, rendered by the error table). */
export function readCreatePayin(raw: string): { fields: CreatePayinFields } | { errors: FieldViolations } {
  const body = parseObject(raw);
  if (!body) return { errors: { body: [problem('json_object')] } };
  const { values, problems } = readFields(CREATE_PAYIN, body);
  if (Object.keys(problems).length > 0) return { errors: problems };
  return { fields: { amount_units: values.amount, currency: 'USDT', memo: values.memo, out_trade_no: values.out_trade_no } };
}

/** B2's one field, out_trade_no (required text); a body that is no object has none. */
export function readPayinStatus(raw: string): { out_trade_no: string } | { errors: FieldViolations } {
  const { values, problems } = readFields({ out_trade_no: OUT_TRADE_NO }, parseObject(raw) ?? {});
  return Object.keys(problems).length > 0 ? { errors: problems } : { out_trade_no: values.out_trade_no };
}

/** Events per page of GET /api/v1/events: at most, and when `limit` is absent (docs/events.md). */
export const EVENTS_LIMITS = { max: 500, default: 100, typeMaxLength: 64, subjectMaxLength: 128 } as const;

/** The largest `seq` (PostgreSQL bigint). */
const MAX_SEQ = 9_223_372_036_854_775_807n;

/** `after`: the seq of the last event seen, a whole number from 0 (absent: 0). */
const AFTER: FieldRule<bigint> = (value) => {
  if (!present(value)) return 0n;
  if (typeof value !== 'string' || !/^-?\d{1,19}$/.test(value)) return refuse('integer');
  const seq = BigInt(value);
  if (seq < 0n) return refuse('min', 0);
  return seq > MAX_SEQ ? refuse('max', MAX_SEQ) : seq;
};

/** GET /api/v1/events query: after (≥ 0), limit (1..500, default 100), type (≤ 64), subject (≤ 128). */
const LIST_EVENTS = {
  after: AFTER,
  limit: integer({ min: 1, max: EVENTS_LIMITS.max, digits: 6 }),
  type: text({ max: EVENTS_LIMITS.typeMaxLength }),
  subject: text({ max: EVENTS_LIMITS.subjectMaxLength, count: 'code_points' }),
};

/** The events query's fields, typed. */
export interface ListEventsFields {
  after: bigint;
  limit: number;
  type: string | undefined;
  subject: string | undefined;
}

/**
 * The events query (its parameters as the router received them: a repeated one is an array, refused), or every
 * failing field at once. Whether `type` names an event type is the EventsService's to say.
 */
export function readListEvents(query: Record<string, string | string[] | undefined>): { fields: ListEventsFields } | { errors: FieldViolations } {
  const { values, problems } = readFields(LIST_EVENTS, query);
  if (Object.keys(problems).length > 0) return { errors: problems };
  return { fields: { after: values.after, limit: values.limit ?? EVENTS_LIMITS.default, type: values.type, subject: values.subject } };
}

/** Field limits of a refund request (docs/refunds.md). */
export const REFUND_FIELD_LIMITS = { reasonMaxLength: 255, addressMaxLength: 128, refundReferenceMaxLength: 64 } as const;

/** `refunds` fields, typed; one of out_trade_no and invoice_reference. */
export interface CreateRefundFields {
  out_trade_no: string | undefined;
  invoice_reference: string | undefined;
  /** Absent: everything still refundable. */
  amount_units: bigint | undefined;
  reason: string;
  address: string;
}

const INVOICE_REFERENCE: FieldRule<string | undefined> = (value) =>
  !present(value) ? undefined : typeof value === 'string' && INVOICE_REFERENCE_PATTERN.test(value) ? value : refuse('invalid');

const CREATE_REFUND = {
  out_trade_no: text({ max: PAYIN_LIMITS.outTradeNoMaxLength, count: 'code_points' }),
  invoice_reference: INVOICE_REFERENCE,
  amount: amount({ currency: () => 'USDT', min: { units: 1n, text: '0.000001' }, typed: true }),
  reason: text({ max: REFUND_FIELD_LIMITS.reasonMaxLength, count: 'code_points' }),
  address: text({ required: true, max: REFUND_FIELD_LIMITS.addressMaxLength, count: 'code_points' }),
};

/** POST /api/v1/payins/refunds: its fields, or every failing field at once. */
export function readCreateRefund(raw: string): { fields: CreateRefundFields } | { errors: FieldViolations } {
  const body = parseObject(raw);
  if (!body) return { errors: { body: [problem('json_object')] } };
  const { values, problems } = readFields(CREATE_REFUND, body);
  if (!values.out_trade_no && !values.invoice_reference && !problems.out_trade_no && !problems.invoice_reference) problems.out_trade_no = [problem('required')];
  if (Object.keys(problems).length > 0) return { errors: problems };
  return {
    fields: {
      out_trade_no: values.out_trade_no,
      invoice_reference: values.invoice_reference,
      amount_units: values.amount,
      reason: values.reason ?? '',
      address: values.address,
    },
  };
}

/** POST /api/v1/payins/refunds/status: a refund_reference, or the payin's out_trade_no or invoice_reference. */
export function readRefundStatus(raw: string): { fields: { refund_reference?: string; out_trade_no?: string; invoice_reference?: string } } | { errors: FieldViolations } {
  const body = parseObject(raw);
  if (!body) return { errors: { body: [problem('json_object')] } };
  const { values, problems } = readFields(
    {
      refund_reference: text({ max: REFUND_FIELD_LIMITS.refundReferenceMaxLength }),
      out_trade_no: text({ max: PAYIN_LIMITS.outTradeNoMaxLength, count: 'code_points' }),
      invoice_reference: INVOICE_REFERENCE,
    },
    body,
  );
  if (!values.refund_reference && !values.out_trade_no && !values.invoice_reference && Object.keys(problems).length === 0) problems.out_trade_no = [problem('required')];
  if (Object.keys(problems).length > 0) return { errors: problems };
  return { fields: { refund_reference: values.refund_reference, out_trade_no: values.out_trade_no, invoice_reference: values.invoice_reference } };
}

/** Field limits of a payout request (docs/payouts.md). */
export const PAYOUT_FIELD_LIMITS = { memoMaxLength: 255, addressMaxLength: 128, payoutReferenceMaxLength: 64 } as const;

/** `payouts` fields, typed. */
export interface CreatePayoutFields {
  amount_units: bigint;
  currency: string;
  address: string;
  memo: string;
  out_trade_no: string | undefined;
}

const CREATE_PAYOUT = {
  amount: amount({ currency: () => 'USDT', min: { units: 1n, text: '0.000001' }, typed: true, required: true }),
  currency: text({ required: true, max: 16 }),
  address: text({ required: true, max: PAYOUT_FIELD_LIMITS.addressMaxLength, count: 'code_points' }),
  memo: text({ max: PAYOUT_FIELD_LIMITS.memoMaxLength, count: 'code_points' }),
  out_trade_no: text({ max: PAYIN_LIMITS.outTradeNoMaxLength, count: 'code_points' }),
};

/** POST /api/v1/payouts: its fields, or every failing field at once (the address's format is the service's). */
export function readCreatePayout(raw: string): { fields: CreatePayoutFields } | { errors: FieldViolations } {
  const body = parseObject(raw);
  if (!body) return { errors: { body: [problem('json_object')] } };
  const { values, problems } = readFields(CREATE_PAYOUT, body);
  if (values.currency !== undefined && values.currency !== 'USDT' && !problems.currency) problems.currency = [problem('invalid')];
  if (Object.keys(problems).length > 0) return { errors: problems };
  return { fields: { amount_units: values.amount!, currency: values.currency!, address: values.address!, memo: values.memo ?? '', out_trade_no: values.out_trade_no } };
}

/** POST /api/v1/payouts/status: a payout_reference or the merchant's out_trade_no. */
export function readPayoutStatus(raw: string): { fields: { payout_reference?: string; out_trade_no?: string } } | { errors: FieldViolations } {
  const body = parseObject(raw);
  if (!body) return { errors: { body: [problem('json_object')] } };
  const { values, problems } = readFields(
    { payout_reference: text({ max: PAYOUT_FIELD_LIMITS.payoutReferenceMaxLength }), out_trade_no: text({ max: PAYIN_LIMITS.outTradeNoMaxLength, count: 'code_points' }) },
    body,
  );
  if (!values.payout_reference && !values.out_trade_no && Object.keys(problems).length === 0) problems.payout_reference = [problem('required')];
  if (Object.keys(problems).length > 0) return { errors: problems };
  return { fields: { payout_reference: values.payout_reference, out_trade_no: values.out_trade_no } };
}

/** The façade's own answers on an Area B path: unknown route, wrong method, body too large, last-resort fault. */
export function areaBEdgeError(status: 404 | 405 | 413 | 500 | 503): { status: number; body: PayinErrorBody } {
  const messages = { 404: 'Not Found.', 405: 'Method Not Allowed.', 413: 'Payload Too Large.', 500: PAYIN_MESSAGES.internal, 503: PAYIN_MESSAGES.busy };
  return failure(status, messages[status]);
}
