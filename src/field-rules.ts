/**
 * Declarative field rules, the one validation style of the three façade areas (docs/architecture.md "One error
 * model"): each request is a table of field → rule, read in order by `readFields`, and every refusal is a field
 * problem code of src/field-problems.ts. Each area renders the codes in its documented words: Area A in
 * src/flows/pre-transfer/area-a.ts, Area B in rest-facade/payin/contract.ts, Area C in rest-facade/merchant/contract.ts.
 * A rule reads a body parsed losslessly (a JSON number is a LosslessNumber). Pure, no I/O.
 *
 *   const TRANSFER = { currency: currency(), amount: amount({ currency: (read) => read.currency as Currency }) };
 *   const { values, problems } = readFields(TRANSFER, body);   // problems: { amount: ['decimals:2'] }
 */
import type { FieldViolations } from './errors';
import { problem, type FieldProblem } from './field-problems';
import { AmountError, decimalsOf, isLosslessNumber, readAmount, type AmountProblem, type Currency } from './money';
import { hasControlCharacters } from './text';
import { isHttpUrl } from './web/url';

export type Body = Record<string, unknown>;

/** A field's refusal: a problem code with its params, in wire form (`max_length:64`). */
export class Problem {
  constructor(readonly text: string) {}
}

/** The refusal `code` (with its params) of the field being read. */
export function refuse(code: FieldProblem, ...params: Array<string | number | bigint>): Problem {
  return new Problem(problem(code, ...params));
}

/** What a rule sees besides its value: the field's name, the whole body, the fields read before it (valid ones). */
export interface RuleContext {
  field: string;
  body: Body;
  read: Readonly<Record<string, unknown>>;
}

/** One field's rule: its typed value (undefined: absent and optional), or its refusal. */
export type FieldRule<T> = (value: unknown, context: RuleContext) => T | Problem;

/** A request's rules: field → rule, read in this order. */
export type FieldRules = Record<string, FieldRule<unknown>>;

/** The values a table of rules reads, by field. */
export type ValuesOf<R extends FieldRules> = { [K in keyof R]: Exclude<ReturnType<R[K]>, Problem> };

/**
 * Reads `body` with `rules`: every field in order, every failing field with its problem.
 * @returns the values read (valid ones) and the problems, empty when the body passes
 */
export function readFields<R extends FieldRules>(rules: R, body: Body): { values: ValuesOf<R>; problems: FieldViolations } {
  const read: Record<string, unknown> = {};
  const problems: FieldViolations = {};
  for (const [field, rule] of Object.entries(rules)) {
    const outcome = rule(body[field], { field, body, read });
    if (outcome instanceof Problem) (problems[field] ??= []).push(outcome.text);
    else read[field] = outcome;
  }
  return { values: read as ValuesOf<R>, problems };
}

/** True when a field was sent: neither missing, null nor empty text. */
export function present(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

/** What counts as a missing field: only absent or null (`missing`), or also empty text (`missing_or_empty`). */
type Absence = 'missing' | 'missing_or_empty';

function absent(value: unknown, absence: Absence = 'missing_or_empty'): boolean {
  return absence === 'missing' ? value === undefined || value === null : !present(value);
}

/** A rule whose absent field is refused `required`, or read as undefined. */
function whenAbsent<T>(required: boolean | undefined): T | Problem {
  return required ? refuse('required') : (undefined as T);
}

/** Adds a check to a rule, run on the value it read (not on an absent optional field). */
export function withCheck<T>(rule: FieldRule<T>, check: (value: Exclude<T, undefined>, context: RuleContext) => Problem | undefined): FieldRule<T> {
  return (value, context) => {
    const outcome = rule(value, context);
    return outcome instanceof Problem || outcome === undefined ? outcome : (check(outcome as Exclude<T, undefined>, context) ?? outcome);
  };
}

/** Refuses an absent optional field when `problemOf` says so (e.g. required without another field). */
export function ifAbsent<T>(rule: FieldRule<T>, problemOf: (context: RuleContext) => Problem | undefined): FieldRule<T> {
  return (value, context) => (present(value) ? rule(value, context) : (problemOf(context) ?? rule(value, context)));
}

export interface TextOptions {
  required?: boolean;
  /** The longest accepted text. */
  max: number;
  /** How `max` counts: UTF-16 code units (default) or code points. */
  count?: 'units' | 'code_points';
  /** What counts as missing (default `missing_or_empty`). */
  absence?: Absence;
  /** Blank text (spaces only) is missing too. */
  blankIsAbsent?: boolean;
  /** The text's form, refused with `code` when it does not match. */
  pattern?: { test: RegExp; code: FieldProblem };
}

/** Text: a JSON string without control characters, at most `max` long; refusals `required`, `string`, `control_characters`, `max_length:N`, the pattern's code. */
export function text(options: TextOptions & { required: true }): FieldRule<string>;
export function text(options: TextOptions): FieldRule<string | undefined>;
export function text(options: TextOptions): FieldRule<string | undefined> {
  return (value) => {
    if (absent(value, options.absence)) return whenAbsent(options.required);
    if (typeof value !== 'string') return refuse('string');
    if (hasControlCharacters(value)) return refuse('control_characters');
    const length = options.count === 'code_points' ? [...value].length : value.length;
    if (length > options.max) return refuse('max_length', options.max);
    if (options.blankIsAbsent && value.trim() === '') return whenAbsent(options.required);
    if (options.pattern && !options.pattern.test.test(value)) return refuse(options.pattern.code);
    return value;
  };
}

/** The text of a JSON number or string, else undefined. */
function numberText(value: unknown): string | undefined {
  return isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : undefined;
}

/** An id: a positive integer (at most 19 digits) sent as a JSON number or a string of digits; read as decimal text. */
export function id(options: { required: true }): FieldRule<string>;
export function id(options?: { required?: boolean }): FieldRule<string | undefined>;
export function id(options: { required?: boolean } = {}): FieldRule<string | undefined> {
  return (value) => {
    if (!present(value)) return whenAbsent(options.required);
    const digits = numberText(value);
    return digits !== undefined && /^[1-9]\d{0,18}$/.test(digits) ? digits : refuse('integer');
  };
}

/** An integer within [min, max] of at most `digits` digits (default 9), sent as a JSON number or a digit string. */
export function integer(options: { min: number; max: number; digits?: number; required: true }): FieldRule<number>;
export function integer(options: { min: number; max: number; digits?: number; required?: boolean }): FieldRule<number | undefined>;
export function integer(options: { min: number; max: number; digits?: number; required?: boolean }): FieldRule<number | undefined> {
  const pattern = new RegExp(`^-?\\d{1,${options.digits ?? 9}}$`);
  return (value) => {
    if (!present(value)) return whenAbsent(options.required);
    const digits = numberText(value);
    if (digits === undefined || !pattern.test(digits)) return refuse('integer');
    const number = Number(digits);
    if (number < options.min) return refuse('min', options.min);
    if (number > options.max) return refuse('max', options.max);
    return number;
  };
}

/** One of `accepted` (a currency code), read as text of at most 3 characters first. */
export function currency(accepted: readonly string[], options: { required: true }): FieldRule<Currency>;
export function currency(accepted: readonly string[], options: { required?: boolean }): FieldRule<Currency | undefined>;
export function currency(accepted: readonly string[], options: { required?: boolean }): FieldRule<Currency | undefined> {
  const code = text({ required: options.required, max: 3, blankIsAbsent: true });
  return withCheck(code, (value) => (accepted.includes(value) ? undefined : refuse('currency'))) as FieldRule<Currency | undefined>;
}

/** The field problem of an amount the money module refused. */
export function amountProblem(error: AmountError, currency: Currency): Problem {
  const codes: Record<AmountProblem, () => Problem> = {
    not_a_number: () => refuse('decimal'),
    too_many_decimals: () => refuse('decimals', decimalsOf(currency)),
    negative: () => refuse('not_negative'),
    zero: () => refuse('positive'),
    too_large: () => refuse('too_large'),
  };
  return codes[error.problem]();
}

export interface AmountOptions {
  required?: boolean;
  /** The amount's currency (its decimals), from the fields read before it. */
  currency: (read: RuleContext['read']) => Currency | undefined;
  /** Accept 0 (default: refused `positive`). */
  allowZero?: boolean;
  /** The least accepted amount: minor units, and as the refusal `min:<text>` names it. */
  min?: { units: bigint; text: string };
  /** What counts as missing (default `missing_or_empty`). */
  absence?: Absence;
  /** Refuse a JSON value that is no number nor string (true, {}, []) as `number` (default: `decimal`). */
  typed?: boolean;
}

/**
 * An amount in minor units of its currency (USD decimals when the currency is itself invalid), read exactly from a
 * JSON number or a decimal string. Refusals: `required`, `number`, `decimal`, `decimals:N`, `not_negative`,
 * `positive`, `too_large`, `min:X`.
 */
export function amount(options: AmountOptions & { required: true }): FieldRule<bigint>;
export function amount(options: AmountOptions): FieldRule<bigint | undefined>;
export function amount(options: AmountOptions): FieldRule<bigint | undefined> {
  return (value, { read }) => {
    if (absent(value, options.absence)) return whenAbsent(options.required);
    if (options.typed && (typeof value === 'boolean' || (typeof value === 'object' && !isLosslessNumber(value)))) return refuse('number');
    const currency = options.currency(read) ?? 'USD';
    let units: bigint;
    try {
      units = readAmount(value, currency, { allowZero: options.allowZero });
    } catch (error) {
      if (error instanceof AmountError) return amountProblem(error, currency);
      throw error;
    }
    return options.min && units < options.min.units ? refuse('min', options.min.text) : units;
  };
}

/** A calendar date YYYY-MM-DD that exists. */
export function date(): FieldRule<string | undefined> {
  return withCheck(text({ max: 10, blankIsAbsent: true }), (value) => {
    const parsed = /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(`${value}T00:00:00Z`) : undefined;
    return parsed && !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === value ? undefined : refuse('date');
  });
}

/** An email address (one @, a dot in the domain). */
export function email(options: { max: number }): FieldRule<string | undefined> {
  return withCheck(text({ max: options.max, blankIsAbsent: true }), (value) => (/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value) ? undefined : refuse('email')));
}

/** An http(s) URL; anything else is refused `format`. */
export function httpUrl(options: { max: number }): FieldRule<string | undefined> {
  return withCheck(text({ max: options.max, blankIsAbsent: true }), (value) => (isHttpUrl(value) ? undefined : refuse('format')));
}

/** A percent 0..100 with at most 6 decimals, read as decimal text ("2.5"). */
export function percent(): FieldRule<string | undefined> {
  return (value) => {
    if (!present(value)) return undefined;
    const digits = numberText(value);
    return digits !== undefined && /^\d{1,3}(\.\d{1,6})?$/.test(digits) && Number(digits) <= 100 ? digits : refuse('percent');
  };
}
