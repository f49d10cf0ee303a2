/**
 * The documented messages of Area C (interface "Area C" and "Errors / Area C", platform decisions §7 and §8) and
 * the one exhaustive table that renders every field problem a service can answer (src/field-problems.ts) in those
 * words. Services send codes; only this module writes the merchant's English. Pure, no I/O.
 */
import { parseProblem, type FieldProblem } from '../../src/field-problems';
import type { FieldViolations } from '../../src/errors';

/** Currencies Area C services accept (interface: "currency string R (USD)"). */
const ACCEPTED_CURRENCIES = 'USD';
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
