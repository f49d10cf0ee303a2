/**
 * Area C field rules (interface "Area C", platform decisions §7 and §8), shared by every service's readers
 * (./wallet-fields.ts, ./deposit-fields.ts, ./instrument-fields.ts, each beside its service table): Area C's forms of
 * the one rule set of src/field-rules.ts, and `readAreaC`, which reads a losslessly parsed /do-action body with a
 * table of them and refuses every failing field at once in the documented words (./messages.ts). The services check
 * what needs the database or a key, and answer field problem codes the façade renders the same way. No I/O.
 */
import { invalidFields } from '../../src/errors';
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
import { WALLET_CURRENCIES } from '../../src/flows/wallet/contract';
import { isLosslessNumber, type Currency } from '../../src/money';
import { renderFieldProblems } from './messages';

export { MESSAGES } from './messages';

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

/** A currency Area C services accept (WALLET_CURRENCIES); required unless said otherwise. */
export function currency(options: { required: false }): FieldRule<Currency | undefined>;
export function currency(options?: { required?: true }): FieldRule<Currency>;
export function currency(options: { required?: boolean } = {}): FieldRule<Currency | undefined> {
  return currencyRule(WALLET_CURRENCIES, { required: options.required ?? true });
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
 * Reads a /do-action body with `rules` (./fields.ts and src/field-rules.ts), in order.
 * @throws DomainError VALIDATION_FAILED listing every failing field in Area C's words
 */
export function readAreaC<R extends FieldRules>(rules: R, body: Body): ValuesOf<R> {
  const { values, problems } = readFields(rules, body);
  if (Object.keys(problems).length > 0) throw invalidFields(renderFieldProblems(problems));
  return values;
}
