/**
 * Field problems: what is wrong with one request field, as a stable code, the one vocabulary of the three areas.
 * Services put them in `DomainError.fields` (the RPC's `FieldViolation.messages`) and the field rules of every
 * area's input gate answer them (src/field-rules.ts); each façade area renders them in the interface's documented
 * words, so no service writes a partner's or merchant's English. Pure, no imports.
 *
 * Wire form: `code`, or `code:param` / `code:param:param` where a code needs values (a limit, a label), e.g.
 * `required`, `max_length:64`, `taken:phone number`, `decimals:2`. Params never contain `:`.
 */

/** Every field problem with the number of params it carries. */
export const FIELD_PROBLEMS = {
  // ---- any field (the field's name, or a label param, is part of the rendered message) ----
  required: 0,
  /** Param: the label the message names instead of the field (optional). */
  required_label: 1,
  string: 0,
  number: 0,
  integer: 0,
  /** Param: the longest accepted length in characters. */
  max_length: 1,
  /** Params: the label, the longest accepted length in characters. */
  max_length_label: 2,
  /** Param: the least accepted value. */
  min: 1,
  /** Param: the greatest accepted value. */
  max: 1,
  /** Not one of the accepted currencies. */
  currency: 0,
  /** Not three uppercase letters (a currency code's form). */
  currency_code: 0,
  /** Not letters and digits only. */
  alphanumeric: 0,
  /** Neither a user id nor a phone number (digits, an optional leading +). */
  user_id_or_phone: 0,
  /** Not a JSON object. */
  json_object: 0,
  date: 0,
  past_date: 0,
  email: 0,
  format: 0,
  /** Param: the label the message names instead of the field. */
  format_label: 1,
  public_url: 0,
  percent: 0,
  /** The value names nothing this caller may use (unknown, another tenant's, inactive). */
  not_found: 0,
  invalid: 0,
  /** Param: the label the message names instead of the field. */
  invalid_label: 1,
  control_characters: 0,
  not_decryptable: 0,
  /** Param: the label the message names instead of the field. */
  taken: 1,
  // ---- amounts (src/money AmountProblem) ----
  decimal: 0,
  /** Param: the currency's decimal places. */
  decimals: 1,
  positive: 0,
  not_negative: 0,
  too_large: 0,
  // ---- wallet ----
  /** Params: the field required, the field whose absence requires it (as the message names them). */
  required_without: 2,
  fees_currency_required: 0,
  fees_currency_mismatch: 0,
  same_user: 0,
  insufficient_funds: 0,
  /** Param: the currency the wallet does not hold. */
  wallet_currency: 1,
  payer_is_seller: 0,
  preorder_paid: 0,
  blocked_money_cancelled: 0,
  // ---- merchant authentication ----
  merchant_credentials: 0,
  session_missing: 0,
  session_invalid: 0,
  session_expired: 0,
  sign: 0,
  sign_type: 0,
  login: 0,
  /** A signed value holds `&` followed by `=` (it would verify as more parameters). */
  separator_in_value: 0,
  /** A signed parameter's name holds `&` or `=`. */
  separator_in_name: 0,
  /** Param: the accepted distance from the platform's clock, in seconds. */
  timestamp_window: 1,
  /** This signed login body was accepted before. */
  login_replayed: 0,
  // ---- deposits ----
  acquirer_missing: 0,
  amount_mismatch: 0,
  currency_mismatch: 0,
  password_incorrect: 0,
  payment_cancelled: 0,
  payment_confirmed: 0,
  payment_expired: 0,
  payment_failed: 0,
  payment_pending: 0,
  card_declined: 0,
  confirm_by_form: 0,
  // ---- cards, bank accounts, tokenization ----
  card_number: 0,
  card_expiry: 0,
  card_expired: 0,
  security_code: 0,
  account_number: 0,
  source_of_funds_json: 0,
  source_of_funds_type: 0,
  source_of_funds_card: 0,
  activation_not_found: 0,
  not_activated: 0,
} as const;

export type FieldProblem = keyof typeof FIELD_PROBLEMS;

/** One field problem in its wire form. */
export function problem(code: FieldProblem, ...params: Array<string | number | bigint>): string {
  if (params.length !== FIELD_PROBLEMS[code]) throw new Error(`assertion failed: ${code} takes ${FIELD_PROBLEMS[code]} params`);
  return [code, ...params.map(String)].join(':');
}

/** The code and params of a wire-form problem, or undefined when `text` is not one (free text). */
export function parseProblem(text: string): { code: FieldProblem; params: string[] } | undefined {
  const [code, ...params] = text.split(':');
  if (code === undefined || !Object.hasOwn(FIELD_PROBLEMS, code)) return undefined;
  if (params.length !== FIELD_PROBLEMS[code as FieldProblem]) return undefined;
  return { code: code as FieldProblem, params };
}
