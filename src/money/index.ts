/**
 * Money (platform decisions §3): amounts are integer counts of minor units (`bigint`), never floats.
 * JSON amounts are read from the raw request text with a lossless parser, so "0.1" stays the decimal 0.1.
 *
 * Currencies and decimals: USD 2, KHR 2, USDT 6.
 */
import { isLosslessNumber, LosslessNumber, parse, stringify } from 'lossless-json';
import { COMMON_REASONS, DomainError } from '../errors';
import { exceedsJsonDepth } from '../text';

export const CURRENCY_DECIMALS = { USD: 2, KHR: 2, USDT: 6 } as const;
export type Currency = keyof typeof CURRENCY_DECIMALS;
export const CURRENCIES = Object.keys(CURRENCY_DECIMALS) as Currency[];

/**
 * The currencies Area C accepts (interface: "currency string R (USD)"): its façade's field rule, and the wallet's and
 * the deposit's checks of a typed request read this one list.
 */
export const AREA_C_CURRENCIES: readonly Currency[] = ['USD'];

/** Whether `value` is a currency Area C accepts (AREA_C_CURRENCIES). */
export function isAreaCCurrency(value: unknown): value is Currency {
  return isCurrency(value) && AREA_C_CURRENCIES.includes(value);
}

/** Largest amount accepted anywhere, in minor units (fits int64 with room for sums). */
export const MAX_AMOUNT_UNITS = 10n ** 15n;

export function isCurrency(value: unknown): value is Currency {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(CURRENCY_DECIMALS, value);
}

export function decimalsOf(currency: Currency): number {
  return CURRENCY_DECIMALS[currency];
}

/** Why an amount was refused; stable strings used as `reason` and in field messages. */
export type AmountProblem =
  | 'not_a_number'
  | 'too_many_decimals'
  | 'negative'
  | 'zero'
  | 'too_large';

const AMOUNT_MESSAGES: Record<AmountProblem, (currency: Currency) => string> = {
  not_a_number: () => 'must be a decimal number',
  too_many_decimals: (currency) => `must have at most ${decimalsOf(currency)} decimal places`,
  negative: () => 'must not be negative',
  zero: () => 'must be greater than 0',
  too_large: () => 'is too large',
};

/** Thrown by the parsers; `field` names the request field when the caller gave one. */
export class AmountError extends DomainError<'INVALID_AMOUNT'> {
  constructor(
    readonly problem: AmountProblem,
    currency: Currency,
    field = 'amount',
  ) {
    const message = AMOUNT_MESSAGES[problem](currency);
    super(COMMON_REASONS, 'INVALID_AMOUNT', `${field} ${message}`, { [field]: [`The ${field} ${message}.`] });
    this.name = 'AmountError';
  }
}

const DECIMAL_PATTERN = /^(-)?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * Parses a decimal text ("12.5", "1e2", "0.000001") into minor units of `currency`.
 * @param options.allowZero accept 0 (default false). Negative amounts are always refused.
 * @throws AmountError not_a_number | too_many_decimals | negative | zero | too_large
 */
export function parseAmount(
  text: string,
  currency: Currency,
  options: { allowZero?: boolean; field?: string } = {},
): bigint {
  const field = options.field ?? 'amount';
  const match = DECIMAL_PATTERN.exec(text.trim());
  if (!match || text.trim() !== text) throw new AmountError('not_a_number', currency, field);
  const [, sign, integerPart, fractionPart = '', exponentText] = match;
  const exponent = exponentText === undefined ? 0 : Number(exponentText);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 30) throw new AmountError('too_large', currency, field);
  // Shift the decimal point by the exponent on the digit string, never through a float.
  let digits = (integerPart ?? '') + fractionPart;
  let pointPosition = (integerPart ?? '').length + exponent;
  if (pointPosition < 0) {
    digits = '0'.repeat(-pointPosition) + digits;
    pointPosition = 0;
  }
  if (pointPosition > digits.length) {
    digits = digits + '0'.repeat(pointPosition - digits.length);
  }
  const whole = digits.slice(0, pointPosition) || '0';
  const fraction = digits.slice(pointPosition).replace(/0+$/, '');
  const decimals = decimalsOf(currency);
  if (fraction.length > decimals) throw new AmountError('too_many_decimals', currency, field);
  const units = BigInt(whole) * 10n ** BigInt(decimals) + BigInt((fraction + '0'.repeat(decimals)).slice(0, decimals) || '0');
  if (sign === '-' && units !== 0n) throw new AmountError('negative', currency, field);
  if (units === 0n && !options.allowZero) throw new AmountError('zero', currency, field);
  if (units > MAX_AMOUNT_UNITS) throw new AmountError('too_large', currency, field);
  return units;
}

/**
 * Reads an amount from a lossless-parsed JSON value: a JSON number (LosslessNumber) or, leniently, a numeric
 * string. Anything else (boolean, object, null) is `not_a_number`.
 */
export function readAmount(
  value: unknown,
  currency: Currency,
  options: { allowZero?: boolean; field?: string } = {},
): bigint {
  if (isLosslessNumber(value)) return parseAmount(value.toString(), currency, options);
  if (typeof value === 'string' && value !== '') return parseAmount(value, currency, options);
  if (typeof value === 'number' && Number.isFinite(value)) return parseAmount(String(value), currency, options);
  if (typeof value === 'bigint') return parseAmount(value.toString(), currency, options);
  throw new AmountError('not_a_number', currency, options.field ?? 'amount');
}

/** Formats minor units as a fixed decimal string with all the currency's decimals: 1250n USD → "12.50". */
export function formatAmount(units: bigint, currency: Currency): string {
  const decimals = decimalsOf(currency);
  const negative = units < 0n;
  const magnitude = (negative ? -units : units).toString().padStart(decimals + 1, '0');
  const whole = magnitude.slice(0, magnitude.length - decimals);
  const fraction = magnitude.slice(magnitude.length - decimals);
  return `${negative ? '-' : ''}${whole}${decimals > 0 ? `.${fraction}` : ''}`;
}

/** The shortest exact decimal text: 1250n USD → "12.5", 100n USD → "1". */
export function formatAmountShort(units: bigint, currency: Currency): string {
  const full = formatAmount(units, currency);
  return full.includes('.') ? full.replace(/\.?0+$/, '') : full;
}

/** A JSON number for responses, exact (no float): serialize the body with `stringifyJson`. */
export function amountJson(units: bigint, currency: Currency): LosslessNumber {
  return new LosslessNumber(formatAmountShort(units, currency));
}

/**
 * `percent` % of `units`, rounded half-up to the minor unit (platform decisions §3).
 * @param percent decimal text such as "1.0" or "2.75" (at most 6 decimals), not negative.
 */
export function percentOf(units: bigint, percent: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(percent);
  if (!match) throw new Error(`invalid percent "${percent}"`);
  const scale = 1_000_000n;
  const percentScaled = BigInt(match[1]!) * scale + BigInt(((match[2] ?? '') + '000000').slice(0, 6));
  const numerator = units * percentScaled;
  const denominator = 100n * scale;
  return (numerator * 2n + denominator) / (denominator * 2n);
}

/** Parses JSON text keeping every number as a LosslessNumber (no precision lost). @throws SyntaxError */
export function parseJsonLossless(text: string): unknown {
  return parse(text);
}

/**
 * The JSON object `text` holds, its numbers kept lossless, else undefined: not JSON (or a duplicated member, which
 * lossless-json refuses), not an object, or nested deeper than `exceedsJsonDepth` allows.
 */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed = parse(text);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && !exceedsJsonDepth(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Serializes JSON in which LosslessNumber and bigint values are written as exact numbers. */
export function stringifyJson(value: unknown): string {
  return stringify(value, (_key, item) => (typeof item === 'bigint' ? new LosslessNumber(item.toString()) : item)) ?? 'null';
}

export { isLosslessNumber, LosslessNumber };
