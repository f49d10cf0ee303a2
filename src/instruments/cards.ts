/**
 * Card and account number rules (platform decisions §7; docs/area-c.md "Tokenization").
 * Pure functions, no I/O, no logging.
 *
 *   card number     12–19 digits (spaces and hyphens between digits are dropped first), Luhn valid
 *   brand           from the leading digits: visa, mastercard, unionpay, amex, jcb, discover, other
 *   expiry          month 1–12, year of 2 (20yy) or 4 digits; valid through the end of that month, UTC
 *   security code   3 or 4 digits (checked, never stored)
 *   account number  6–20 digits (spaces and hyphens dropped first)
 */

export type CardBrand = 'visa' | 'mastercard' | 'unionpay' | 'amex' | 'jcb' | 'discover' | 'other';

/** Drops spaces and hyphens; returns the digits when only digits remain, else undefined. */
/** The digits of a number written with optional spaces or dashes between digit groups (never a sign). */
function digitsOf(text: string): string | undefined {
  if (!/^\d(?:[\d -]*\d)?$/.test(text)) return undefined;
  return text.replace(/[ -]/g, '');
}

/** Luhn (mod 10) check of a digit string. */
export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  for (let index = 0; index < digits.length; index += 1) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48;
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

/** The normalized card number (12–19 digits, Luhn valid), else undefined. */
export function normalizeCardNumber(text: string): string | undefined {
  const digits = digitsOf(text);
  if (!digits || digits.length < 12 || digits.length > 19 || !luhnValid(digits)) return undefined;
  return digits;
}

/** The normalized bank account number (6–20 digits), else undefined. */
export function normalizeAccountNumber(text: string): string | undefined {
  const digits = digitsOf(text);
  return digits && digits.length >= 6 && digits.length <= 20 ? digits : undefined;
}

function prefixIn(digits: string, length: number, low: number, high: number): boolean {
  const prefix = Number(digits.slice(0, length));
  return digits.length >= length && prefix >= low && prefix <= high;
}

/** The card brand from the number's leading digits (IIN ranges). */
export function cardBrand(digits: string): CardBrand {
  if (digits.startsWith('4')) return 'visa';
  if (prefixIn(digits, 2, 51, 55) || prefixIn(digits, 4, 2221, 2720)) return 'mastercard';
  if (prefixIn(digits, 2, 34, 34) || prefixIn(digits, 2, 37, 37)) return 'amex';
  if (prefixIn(digits, 4, 3528, 3589)) return 'jcb';
  if (digits.startsWith('62') || digits.startsWith('81')) return 'unionpay';
  if (digits.startsWith('6011') || prefixIn(digits, 3, 644, 649) || digits.startsWith('65')) return 'discover';
  return 'other';
}

/** Last 4 digits (what is shown and logged). */
export function lastFour(digits: string): string {
  return digits.slice(-4);
}

export interface Expiry {
  month: number;
  /** Four digits. */
  year: number;
}

function integerOf(value: unknown, pattern: RegExp): number | undefined {
  const text = typeof value === 'number' && Number.isInteger(value) ? String(value) : typeof value === 'string' ? value.trim() : undefined;
  return text !== undefined && pattern.test(text) ? Number(text) : undefined;
}

/**
 * Reads an expiry from month and year given as strings or integers ("12", "30" or "2030").
 * @returns undefined when the month is not 1–12 or the year is not 2 or 4 digits.
 */
export function parseExpiry(month: unknown, year: unknown): Expiry | undefined {
  const monthNumber = integerOf(month, /^\d{1,2}$/);
  const yearNumber = integerOf(year, /^(\d{2}|\d{4})$/);
  if (monthNumber === undefined || yearNumber === undefined || monthNumber < 1 || monthNumber > 12) return undefined;
  return { month: monthNumber, year: yearNumber < 100 ? 2000 + yearNumber : yearNumber };
}

/** True when `now` is past the end of the expiry month (UTC). */
export function isExpired(expiry: Expiry, now: Date = new Date()): boolean {
  return now.getTime() >= Date.UTC(expiry.year, expiry.month, 1); // Date.UTC month is 0-based: this is the next month's first day
}

/** A security code (CVV/CVC): 3 or 4 digits. */
export function validSecurityCode(value: unknown): boolean {
  return typeof value === 'string' ? /^\d{3,4}$/.test(value) : false;
}
