/**
 * Area C's contract (interface "Area C" and "Errors / Area C", platform decisions §7 and §8), the one module of its
 * words: the envelopes, what every /do-action service handler gets and returns, Area C's forms of the field rules
 * (src/field-rules.ts) with `readAreaC`, the documented messages with the exhaustive table rendering every field
 * problem code the services answer, and the one exhaustive error table of the area. Each service family's table,
 * field readers and pages live beside the router (./wallet-services.ts, ./deposit-services.ts,
 * ./instrument-services.ts); only this module writes the merchant's English. Pure, no I/O.
 *
 *   success  200 {"success":true,"code":200,"message":"OK","data":…}
 *   failure  400 {"success":false,"code":400,"message":"Bad Request","error":{field:[messages]}}
 *   auth     401 {"success":false,"code":401,"message":"Unauthorized","error":{"token"|"merchant":[…]}}
 *   fault    500 {"success":false,"code":500,"message":"Internal Server Error","error":{"server":[…]}}
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { CallOptions } from '@connectrpc/connect';
import { DomainError, invalidFields, type FieldViolations } from '../../src/errors';
import { parseProblem, type FieldProblem } from '../../src/field-problems';
import {
  amount as amountRule,
  currency as currencyRule,
  readFields,
  text,
  type Body,
  type FieldRule,
  type FieldRules,
  type ValuesOf,
} from '../../src/field-rules';
import type { ActionAuthSchema } from '../../src/gen/payments/wallet/v1/wallet_pb';
import { AREA_C_CURRENCIES, isLosslessNumber, type Currency } from '../../src/money';
import type { PlatformClients } from '../../src/rpc/clients';
import { codeOfKind, readRpcFailure, type RpcFailure, type ServiceReason } from '../../src/rpc/errors';

// ---- Envelopes ----

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

export function badRequest(fields: FieldViolations): AreaCAnswer {
  return failure(400, 'Bad Request', fields);
}

export function internalError(): AreaCAnswer {
  return failure(500, 'Internal Server Error', { server: [INTERNAL_ERROR_MESSAGE] });
}

// ---- Service handlers ----

/**
 * What a service handler gets: the parsed (lossless) body and `caller`, to spread into the RPC request: it carries
 * the call's authentication (ActionAuth: merchant headers, session token and the raw signed body), which the service
 * verifies and binds its typed fields to before acting, so a /do-action call costs one RPC.
 */
export interface MerchantActionContext {
  body: Record<string, unknown>;
  caller: { merchantId: string; auth: MessageInitShape<typeof ActionAuthSchema> };
  clients: PlatformClients;
  /** Pass on every RPC (carries the request id header). */
  callOptions: CallOptions;
  /**
   * The `Idempotency-Key` header ("" when none), for money-moving services. The api answers a repeat of the signed
   * body (and of its signed `request_id`) with its first answer whatever this header; the header may only narrow.
   */
  idempotencyKey: string;
  /** `<PUBLIC_BASE_URL><MERCHANT_PREFIX>`: where the hosted pages' forms post (html_confirm_payment). */
  pageBaseUrl: string;
}

/** Returns the success `data`; throws DomainError (field violations) or an RPC error. */
export type MerchantServiceHandler = (context: MerchantActionContext) => Promise<unknown>;

/** service name → handler. */
export type MerchantServiceTable = Readonly<Record<string, MerchantServiceHandler>>;

// ---- Messages ----

/** Currencies Area C services accept, as its messages name them. */
const ACCEPTED_CURRENCIES = AREA_C_CURRENCIES.join(', ');
const SIGN_TYPE = 'RSA2';

/** Field rules of the /do-action readers. */
export const MESSAGES = {
  required: (field: string) => `The ${field} field is required.`,
  string: (field: string) => `The ${field} must be a string.`,
  number: (field: string) => `The ${field} must be a number.`,
  max: (field: string, max: number | string) => `The ${field} may not be greater than ${max} characters.`,
  integer: (field: string) => `The ${field} must be an integer.`,
  min: (field: string, min: number | string) => `The ${field} must be at least ${min}.`,
  maxValue: (field: string, max: number | string) => `The ${field} may not be greater than ${max}.`,
  currency: (field: string) => `The selected ${field} is invalid. Accepted: ${ACCEPTED_CURRENCIES}.`,
  date: (field: string) => `The ${field} does not match the format YYYY-MM-DD.`,
  email: (field: string) => `The ${field} must be a valid email address.`,
  url: (field: string) => `The ${field} format is invalid.`,
  publicUrl: (field: string) => `The ${field} must be a public http or https URL.`,
  percent: (field: string) => `The ${field} must be a number between 0 and 100 with at most 6 decimal places.`,
  phoneOrEmail: 'The phone_number field is required when email is not present.',
  emailOrPhone: 'The email field is required when phone_number is not present.',
  feesCurrencyRequired: 'The fees_currency field is required when fees_amount is present.',
  feesCurrencyMismatch: 'The fees_currency must be the same as currency.',
  sameUser: 'The to_user_id and from_user_id must be different.',
  userNotFound: (field: string) => `The selected ${field} is invalid.`,
  insufficientFunds: 'Insufficient balance.',
  unknownService: (service: string) => `The service "${service}" is not supported.`,
  controlCharacters: (field: string) => `The ${field} must not contain control characters.`,
} as const;

/** Merchant authentication (C1 login, the /do-action envelope and session). */
export const AUTH_MESSAGES = {
  merchant: 'The merchant-id or merchant-secret-key is invalid.',
  tokenMissing: 'The token is required.',
  tokenInvalid: 'The token is invalid.',
  tokenExpired: 'The token has expired.',
  sign: 'invalid sign',
  signType: `The sign_type must be ${SIGN_TYPE}.`,
  login: 'These credentials do not match our records.',
  loginReplayed: 'This signed login was already used: sign a new one with the current timestamp.',
} as const;

/** What makes a signed body unreadable (§7 canonical string) or a signed login stale. */
export const SIGNED_BODY_MESSAGES = {
  separatorInValue: (field: string) => `The ${field} must not contain & followed by = (it would read as another parameter).`,
  separatorInName: (field: string) => `The parameter name ${field} must not contain & or =.`,
  timestampWindow: (seconds: number | string) => `The timestamp must be within ${seconds} seconds of the current time.`,
} as const;

/** Deposits, confirmations and the hosted pages. */
export const DEPOSIT_MESSAGES = {
  acquirerMissing: 'Card and bank deposits are not available.',
  preorderInvalid: 'The selected pre_order_token is invalid.',
  preorderPaid: 'The preorder has already been paid.',
  amountMismatch: 'The amount must equal the preorder amount.',
  currencyMismatch: 'The currency must equal the preorder currency.',
  tokenInvalid: 'The selected token is invalid.',
  passwordIncorrect: 'The password is incorrect.',
  cancelled: 'The payment has been cancelled.',
  confirmed: 'The payment has already been confirmed.',
  expired: 'The payment has expired.',
  failed: 'The payment has failed.',
  pending: 'The payment is awaiting confirmation.',
  declined: 'The card was declined.',
  confirmByForm: 'The payment is confirmed through html_confirm_payment.',
  securityCode: 'The security code must be 3 or 4 digits.',
  cardExpired: 'The card has expired.',
} as const;

/** refund_deposit (a platform extension, docs/refunds.md "Area C"). */
export const REFUND_MESSAGES = {
  notCompleted: 'Only a completed deposit can be refunded.',
  notSupported: 'Bank-account deposits cannot be refunded.',
  exceedsRefundable: 'The amount exceeds the refundable amount of the deposit.',
  partialBeforeCapture: 'The deposit is not captured yet: only its whole amount can be refunded (reversed) now.',
  preorderWholeOnly: 'A deposit that paid a preorder can only be refunded whole.',
  insufficientBalance: 'The credited wallet has less available than the refund.',
} as const;

/** payout_to_bank and payout_status (docs/payouts.md "Bank payouts"). */
export const PAYOUT_MESSAGES = {
  insufficientBalance: 'The wallet balance is insufficient for this payout and its fee.',
  feeNotConfigured: 'No payout fee is configured for this bank and currency.',
  notFound: 'The selected payout_reference is invalid.',
  belowMinimum: 'The amount is below the minimum payout.',
  aboveLimit: 'The amount is above the largest payout allowed.',
  dailyLimitExceeded: 'The amount would take today\'s payouts above the daily payout limit.',
} as const;

/** Card and account number rules (platform decisions §7). */
export const CARD_MESSAGES = {
  number: 'The card number is invalid.',
  expired: 'The card has expired.',
  expiry: 'The card expiry is invalid.',
  securityCode: 'The security code must be 3 or 4 digits.',
  accountNumber: (field: string) => `The ${field} must be 6 to 20 digits.`,
} as const;

/** tokenize_* and the bank-account activation link. */
export const TOKENIZE_MESSAGES = {
  bankId: 'The selected bank_id is invalid.',
  sourceOfFundsJson: 'The sourceOfFunds must be a JSON object.',
  sourceOfFundsType: 'The sourceOfFunds type must be CARD.',
  sourceOfFundsCard: 'The sourceOfFunds must contain provided.card.',
  activationNotFound: 'The activation link is invalid.',
} as const;

/** A vaulted instrument used by a later call. */
export const INSTRUMENT_MESSAGES = {
  tokenInvalid: 'The selected token is invalid.',
  notActivated: 'The bank account is not activated yet.',
  holderName: 'The holder_name field is required.',
} as const;

type Render = (field: string, ...params: string[]) => string;

/**
 * Field problem → its Area C message. Exhaustive: a problem added to src/field-problems.ts without a line here
 * does not compile.
 */
export const AREA_C_PROBLEM_MESSAGES: Record<FieldProblem, Render> = {
  required: (field) => MESSAGES.required(field),
  required_label: (_field, label) => MESSAGES.required(label!),
  string: (field) => MESSAGES.string(field),
  number: (field) => MESSAGES.number(field),
  integer: (field) => MESSAGES.integer(field),
  max_length: (field, max) => MESSAGES.max(field, max!),
  max_length_label: (_field, label, max) => MESSAGES.max(label!, max!),
  min: (field, min) => MESSAGES.min(field, min!),
  max: (field, max) => MESSAGES.maxValue(field, max!),
  currency: (field) => MESSAGES.currency(field),
  currency_code: (field) => `The ${field} must be a three-letter currency code.`,
  alphanumeric: (field) => `The ${field} must contain only letters and digits.`,
  user_id_or_phone: (field) => `The ${field} must be a user id or a phone number.`,
  json_object: (field) => `The ${field} must be a JSON object.`,
  date: (field) => MESSAGES.date(field),
  past_date: (field) => `The ${field} must be a past date in the format YYYY-MM-DD.`,
  email: (field) => MESSAGES.email(field),
  format: (field) => MESSAGES.url(field),
  format_label: (_field, label) => `The ${label} is invalid.`,
  public_url: (field) => MESSAGES.publicUrl(field),
  percent: (field) => MESSAGES.percent(field),
  not_found: (field) => MESSAGES.userNotFound(field),
  invalid: (field) => `The ${field} is invalid.`,
  invalid_label: (_field, label) => `The ${label} is invalid.`,
  control_characters: (field) => MESSAGES.controlCharacters(field),
  not_decryptable: (field) => `The ${field} could not be decrypted.`,
  taken: (_field, label) => `The ${label} has already been taken.`,
  decimal: (field) => `The ${field} must be a decimal number.`,
  decimals: (field, places) => `The ${field} must have at most ${places} decimal places.`,
  positive: (field) => `The ${field} must be greater than 0.`,
  not_negative: (field) => `The ${field} must not be negative.`,
  too_large: (field) => `The ${field} is too large.`,
  required_without: (_field, required, absent) => `The ${required} field is required when ${absent} is not present.`,
  fees_currency_required: () => MESSAGES.feesCurrencyRequired,
  fees_currency_mismatch: () => MESSAGES.feesCurrencyMismatch,
  same_user: () => MESSAGES.sameUser,
  insufficient_funds: () => MESSAGES.insufficientFunds,
  wallet_currency: (_field, currency) => `The user's wallet does not hold ${currency}.`,
  payer_is_seller: () => 'The payer must differ from the seller.',
  preorder_paid: () => DEPOSIT_MESSAGES.preorderPaid,
  blocked_money_cancelled: () => 'The blocked money has already been cancelled.',
  merchant_credentials: () => AUTH_MESSAGES.merchant,
  session_missing: () => AUTH_MESSAGES.tokenMissing,
  session_invalid: () => AUTH_MESSAGES.tokenInvalid,
  session_expired: () => AUTH_MESSAGES.tokenExpired,
  sign: () => AUTH_MESSAGES.sign,
  sign_type: () => AUTH_MESSAGES.signType,
  login: () => AUTH_MESSAGES.login,
  separator_in_value: (field) => SIGNED_BODY_MESSAGES.separatorInValue(field),
  separator_in_name: (field) => SIGNED_BODY_MESSAGES.separatorInName(field),
  timestamp_window: (_field, seconds) => SIGNED_BODY_MESSAGES.timestampWindow(seconds!),
  login_replayed: () => AUTH_MESSAGES.loginReplayed,
  acquirer_missing: () => DEPOSIT_MESSAGES.acquirerMissing,
  amount_mismatch: () => DEPOSIT_MESSAGES.amountMismatch,
  currency_mismatch: () => DEPOSIT_MESSAGES.currencyMismatch,
  password_incorrect: () => DEPOSIT_MESSAGES.passwordIncorrect,
  payment_cancelled: () => DEPOSIT_MESSAGES.cancelled,
  payment_confirmed: () => DEPOSIT_MESSAGES.confirmed,
  payment_expired: () => DEPOSIT_MESSAGES.expired,
  payment_failed: () => DEPOSIT_MESSAGES.failed,
  payment_pending: () => DEPOSIT_MESSAGES.pending,
  card_declined: () => DEPOSIT_MESSAGES.declined,
  confirm_by_form: () => DEPOSIT_MESSAGES.confirmByForm,
  card_number: () => CARD_MESSAGES.number,
  card_expiry: () => CARD_MESSAGES.expiry,
  card_expired: () => CARD_MESSAGES.expired,
  security_code: () => CARD_MESSAGES.securityCode,
  account_number: (field) => CARD_MESSAGES.accountNumber(field),
  source_of_funds_json: () => TOKENIZE_MESSAGES.sourceOfFundsJson,
  source_of_funds_type: () => TOKENIZE_MESSAGES.sourceOfFundsType,
  source_of_funds_card: () => TOKENIZE_MESSAGES.sourceOfFundsCard,
  activation_not_found: () => TOKENIZE_MESSAGES.activationNotFound,
  not_activated: () => INSTRUMENT_MESSAGES.notActivated,
};

/** One problem of `field` in Area C words; text that is no problem code (the façade's own) passes unchanged. */
export function renderProblem(field: string, text: string): string {
  const parsed = parseProblem(text);
  return parsed ? AREA_C_PROBLEM_MESSAGES[parsed.code](field, ...parsed.params) : text;
}

/** Every field's problems in Area C words. */
export function renderFieldProblems(fields: FieldViolations): FieldViolations {
  return Object.fromEntries(Object.entries(fields).map(([field, texts]) => [field, texts.map((text) => renderProblem(field, text))]));
}

// ---- Field rules ----

/** Longest accepted text per field (interface "Limits" where given; otherwise the platform's choice). */
export const FIELD_MAX_LENGTH: Record<string, number> = {
  service: 64,
  user_name: 64,
  password: 64,
  sign_type: 10,
  out_trade_no: 64,
  seller_code: 64,
  description: 255,
  first_name: 100,
  last_name: 100,
  address: 255,
  email: 254,
  gender: 16,
  reference: 255,
  redirect_url: 2048,
  call_back_url: 2048,
  user_token: 128,
  pre_order_token: 128,
  transaction_ref: 64,
};

/** The longest text of `field` when its rule names none. */
export function maxLengthOf(field: string): number {
  return FIELD_MAX_LENGTH[field] ?? 255;
}

/** Area C text: blank text is missing; at most `max`, else the field's FIELD_MAX_LENGTH (255 for the rest). */
export function string(options: { required: true; max?: number }): FieldRule<string>;
export function string(options?: { required?: boolean; max?: number }): FieldRule<string | undefined>;
export function string(options: { required?: boolean; max?: number } = {}): FieldRule<string | undefined> {
  return (value, context) => text({ required: options.required, max: options.max ?? maxLengthOf(context.field), blankIsAbsent: true })(value, context);
}

/** A phone number: text of at most 25 characters, or a JSON integer ("integer per listing, sent quoted"). */
export function phone(options: { required?: boolean } = {}): FieldRule<string | undefined> {
  const asText = string({ required: options.required, max: 25 });
  return (value, context) => (isLosslessNumber(value) ? value.toString() : asText(value, context));
}

/** A currency Area C services accept (AREA_C_CURRENCIES); required unless said otherwise. */
export function currency(options: { required: false }): FieldRule<Currency | undefined>;
export function currency(options?: { required?: true }): FieldRule<Currency>;
export function currency(options: { required?: boolean } = {}): FieldRule<Currency | undefined> {
  return currencyRule(AREA_C_CURRENCIES, { required: options.required ?? true });
}

/**
 * An amount in minor units of the currency read in `currencyField` (default `currency`); a JSON value that is no
 * number nor string is refused as not a number. Required unless said otherwise.
 */
export function amount(options: { required: false; allowZero?: boolean; currencyField?: string }): FieldRule<bigint | undefined>;
export function amount(options?: { required?: true; allowZero?: boolean; currencyField?: string }): FieldRule<bigint>;
export function amount(options: { required?: boolean; allowZero?: boolean; currencyField?: string } = {}): FieldRule<bigint | undefined> {
  const field = options.currencyField ?? 'currency';
  return amountRule({ required: options.required ?? true, allowZero: options.allowZero, typed: true, currency: (read) => read[field] as Currency | undefined });
}

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;
/** A body field's name in its RPC request: camelCase, an amount in minor units (`fees_amount` → `feesAmountUnits`). */
type RequestName<K extends string> = K extends 'amount' | `${string}_amount` ? `${CamelCase<K>}Units` : CamelCase<K>;
/** The values read, under their RPC request names. */
export type RequestFields<V> = { [K in keyof V & string as RequestName<K>]: V[K] };

/** The values a rule table read, under their RPC request names (`out_trade_no` → `outTradeNo`, `amount` → `amountUnits`). */
export function requestFields<V extends Record<string, unknown>>(values: V): RequestFields<V> {
  return Object.fromEntries(
    Object.entries(values).map(([field, value]) => {
      const name = field.replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase());
      return [field === 'amount' || field.endsWith('_amount') ? `${name}Units` : name, value];
    }),
  ) as RequestFields<V>;
}

/**
 * Reads a /do-action body with `rules` (Area C's forms above and src/field-rules.ts), in order.
 * @throws DomainError VALIDATION_FAILED listing every failing field in Area C's words
 */
export function readAreaC<R extends FieldRules>(rules: R, body: Body): ValuesOf<R> {
  const { values, problems } = readFields(rules, body);
  if (Object.keys(problems).length > 0) throw invalidFields(renderFieldProblems(problems));
  return values;
}

// ---- Errors ----

/** The services Area C calls: /login and /do-action's tables, the hosted pages. */
const AREA_C_SERVICES = ['wallet', 'deposit', 'instrument', 'events', 'timeline', 'payout'] as const;

/** Every reason the Area C RPCs can answer: the union of the services' (src/rpc/service-reasons.ts). */
export type AreaCReason = ServiceReason<(typeof AREA_C_SERVICES)[number]>;

interface AreaCError {
  status: number;
  message: string;
  /** The field a failure without field violations is reported under. */
  field: string;
  /** The documented text of such a failure (else the RPC's message). */
  text?: string;
}

const BAD_REQUEST = (field: string): AreaCError => ({ status: 400, message: 'Bad Request', field });
const UNAUTHORIZED = (field: string): AreaCError => ({ status: 401, message: 'Unauthorized', field });
/** A fault that is never the caller's doing: the 500 envelope, nothing internal shown. */
const FAULT: AreaCError = { status: 500, message: 'Internal Server Error', field: 'server' };

/**
 * Reason → Area C answer, over every reason the WalletService, DepositService, InstrumentService, EventsService and
 * TimelineService can answer.
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
  // refund_deposit and refund_deposit_status (docs/refunds.md "Area C"); nothing is held for any of them.
  DEPOSIT_REFUND_NOT_COMPLETED: { ...BAD_REQUEST('reference'), text: REFUND_MESSAGES.notCompleted },
  DEPOSIT_REFUND_NOT_SUPPORTED: { ...BAD_REQUEST('reference'), text: REFUND_MESSAGES.notSupported },
  DEPOSIT_REFUND_AMOUNT_EXCEEDS_REFUNDABLE: { ...BAD_REQUEST('amount'), text: REFUND_MESSAGES.exceedsRefundable },
  DEPOSIT_REFUND_PARTIAL_BEFORE_CAPTURE: { ...BAD_REQUEST('amount'), text: REFUND_MESSAGES.partialBeforeCapture },
  DEPOSIT_REFUND_PREORDER_WHOLE_ONLY: { ...BAD_REQUEST('amount'), text: REFUND_MESSAGES.preorderWholeOnly },
  DEPOSIT_REFUND_INSUFFICIENT_BALANCE: { ...BAD_REQUEST('amount'), text: REFUND_MESSAGES.insufficientBalance },
  DEPOSIT_REFUND_NOT_FOUND: { ...BAD_REQUEST('refund_reference'), text: MESSAGES.userNotFound('refund_reference') },
  // payout_to_bank and payout_status (docs/payouts.md "Bank payouts"); nothing is held for any of them. An unverified
  // bank account is INSTRUMENT_NOT_ACTIVATED, another merchant's or user's INSTRUMENT_NOT_FOUND (above).
  PAYOUT_INSUFFICIENT_BALANCE: { ...BAD_REQUEST('amount'), text: PAYOUT_MESSAGES.insufficientBalance },
  PAYOUT_FEE_NOT_CONFIGURED: { ...BAD_REQUEST('currency'), text: PAYOUT_MESSAGES.feeNotConfigured },
  PAYOUT_NOT_FOUND: { ...BAD_REQUEST('payout_reference'), text: PAYOUT_MESSAGES.notFound },
  // The merchant's USD payout limits (docs/payouts.md "Limits").
  PAYOUT_BELOW_MINIMUM: { ...BAD_REQUEST('amount'), text: PAYOUT_MESSAGES.belowMinimum },
  PAYOUT_ABOVE_LIMIT: { ...BAD_REQUEST('amount'), text: PAYOUT_MESSAGES.aboveLimit },
  PAYOUT_DAILY_LIMIT_EXCEEDED: { ...BAD_REQUEST('amount'), text: PAYOUT_MESSAGES.dailyLimitExceeded },
  // Area B's crypto payouts' refusals and the operators' approvals: an Area C call meets none of them.
  PAYOUT_OUT_TRADE_NO_TAKEN: FAULT,
  PAYOUT_PROVIDER_NOT_CONFIGURED: FAULT,
  PAYOUT_DECISION_NOT_AUTHORIZED: FAULT,
  PAYOUT_APPROVAL_NOT_AUTHORIZED: FAULT,
  PAYOUT_NOT_AWAITING_APPROVAL: FAULT,
  PAYOUT_NOTIFICATION_MISMATCH: FAULT,
  // Only a confirmation step sent straight to Temporal meets it: never the merchant's doing.
  CONFIRMATION_NOT_RECORDED: FAULT,
  IDEMPOTENCY_KEY_INVALID: BAD_REQUEST('Idempotency-Key'),
  // The key names another request (other parameters): it may only narrow a signed body, never redirect it.
  IDEMPOTENCY_KEY_REUSED: { status: 409, message: 'Conflict', field: 'Idempotency-Key' },
  // A request with this key is still running: retry later (docs/idempotency.md).
  IDEMPOTENCY_KEY_IN_PROGRESS: { status: 409, message: 'Conflict', field: 'Idempotency-Key' },
  PERMISSION_DENIED: FAULT,
  // list_timeline: a reference unknown or another merchant's, one answer for both (docs/area-c.md).
  PAYMENT_NOT_FOUND: { ...BAD_REQUEST('reference'), text: MESSAGES.userNotFound('reference') },
  // The EventsService's and TimelineService's other owner proof (Area B's API key) and the PayinService's reasons
  // they share a table with: an Area C call sends neither, so none is the merchant's doing.
  MERCHANT_SUSPENDED: FAULT,
  OUT_TRADE_NO_TAKEN: FAULT,
  UPSTREAM_NOT_CONFIGURED: FAULT,
  UPSTREAM_UNAVAILABLE: FAULT,
  PAYIN_FAILED: FAULT,
  PAYIN_NOT_FOUND: FAULT,
  SETTLEMENT_NOT_AUTHORIZED: FAULT,
  CLOSE_NOT_AUTHORIZED: FAULT,
  UPSTREAM_SIGNATURE_INVALID: FAULT,
  WEBHOOK_NOT_FOUND: FAULT,
  // Too many failed logins, or too many requests of one merchant: 429 with Retry-After (docs/security.md).
  RATE_LIMITED: { status: 429, message: 'Too Many Requests', field: 'request' },
  UNAVAILABLE: FAULT,
  DEADLINE_EXCEEDED: FAULT,
  INTERNAL: FAULT,
};

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
  if (Object.keys(fields).length === 0) fields = { [entry.field]: [entry.text ?? failureInfo.message] };
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
