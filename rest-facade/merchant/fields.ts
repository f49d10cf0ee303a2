/**
 * Area C field reading (interface "Area C", platform decisions §7 and §8), shared by every service's readers
 * (./wallet-fields.ts, ./deposit-fields.ts, ./instrument-fields.ts, each beside its service table): `FieldReader`
 * turns a losslessly parsed /do-action body into typed fields, collecting every failing field under its own name in
 * the documented words (./messages.ts). The services check what needs the database or a key, and answer field
 * problem codes the façade renders. No I/O.
 */
import { hasControlCharacters } from '../../src/text';
import { isHttpUrl } from '../../src/web/url';
import { AmountError, decimalsOf, isLosslessNumber, readAmount, type Currency } from '../../src/money';
import { invalidFields, type FieldViolations } from '../../src/errors';
import { WALLET_CURRENCIES } from '../../src/flows/wallet/contract';
import { AREA_C_PROBLEM_MESSAGES, MESSAGES } from './messages';

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

/** Collects field violations; `finish()` throws them all at once. */
export class FieldReader {
  readonly errors: FieldViolations = {};

  constructor(readonly body: Record<string, unknown>) {}

  fail(field: string, message: string): undefined {
    (this.errors[field] ??= []).push(message);
    return undefined;
  }

  /** An amount the money module refused, in Area C words. */
  failAmount(field: string, error: AmountError, currency: Currency | undefined): undefined {
    const messages = AREA_C_PROBLEM_MESSAGES;
    const decimals = String(decimalsOf(currency ?? 'USD'));
    const rendered = {
      not_a_number: messages.decimal(field),
      too_many_decimals: messages.decimals(field, decimals),
      negative: messages.not_negative(field),
      zero: messages.positive(field),
      too_large: messages.too_large(field),
    }[error.problem];
    return this.fail(field, rendered);
  }

  has(field: string): boolean {
    const value = this.body[field];
    return value !== undefined && value !== null && value !== '';
  }

  /** A string field; numbers are refused (wrong type). */
  string(field: string, options: { required?: boolean; max?: number } = {}): string | undefined {
    const value = this.body[field];
    if (value === undefined || value === null || value === '') {
      return options.required ? this.fail(field, MESSAGES.required(field)) : undefined;
    }
    if (typeof value !== 'string') return this.fail(field, MESSAGES.string(field));
    if (hasControlCharacters(value)) return this.fail(field, MESSAGES.controlCharacters(field));
    const max = options.max ?? FIELD_MAX_LENGTH[field] ?? 255;
    if (value.length > max) return this.fail(field, MESSAGES.max(field, max));
    if (value.trim() === '') return options.required ? this.fail(field, MESSAGES.required(field)) : undefined;
    return value;
  }

  /** An id: a positive integer given as a JSON integer or a string of digits. Returned as decimal text. */
  id(field: string, options: { required?: boolean } = {}): string | undefined {
    const value = this.body[field];
    if (value === undefined || value === null || value === '') {
      return options.required ? this.fail(field, MESSAGES.required(field)) : undefined;
    }
    const text = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : undefined;
    if (text === undefined || !/^[1-9]\d{0,18}$/.test(text)) return this.fail(field, MESSAGES.integer(field));
    return text;
  }

  /** A phone number: a string, or a JSON integer ("integer per listing, sent quoted"). */
  phone(field: string, options: { required?: boolean } = {}): string | undefined {
    const value = this.body[field];
    if (isLosslessNumber(value)) return value.toString();
    return this.string(field, { ...options, max: 25 });
  }

  /** A currency code among WALLET_CURRENCIES. */
  currency(field: string, options: { required?: boolean } = { required: true }): Currency | undefined {
    const text = this.string(field, { ...options, max: 3 });
    if (text === undefined) return undefined;
    if (!(WALLET_CURRENCIES as readonly string[]).includes(text)) return this.fail(field, MESSAGES.currency(field));
    return text as Currency;
  }

  /** An amount in minor units of `currency` (USD decimals when the currency is itself invalid). */
  amount(field: string, currency: Currency | undefined, options: { required?: boolean } = { required: true }): bigint | undefined {
    const value = this.body[field];
    if (value === undefined || value === null || value === '') {
      return options.required ? this.fail(field, MESSAGES.required(field)) : undefined;
    }
    if (typeof value === 'boolean' || (typeof value === 'object' && !isLosslessNumber(value))) {
      return this.fail(field, MESSAGES.number(field));
    }
    try {
      return readAmount(value, currency ?? 'USD', { field });
    } catch (error) {
      if (error instanceof AmountError) return this.failAmount(field, error, currency);
      throw error;
    }
  }

  /** An integer within [min, max] of at most `digits` digits (default 9); JSON integer or digit string. */
  integer(field: string, options: { min: number; max: number; required?: boolean; digits?: number }): number | undefined {
    const value = this.body[field];
    if (value === undefined || value === null || value === '') {
      return options.required ? this.fail(field, MESSAGES.required(field)) : undefined;
    }
    const text = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : undefined;
    if (text === undefined || !new RegExp(`^-?\\d{1,${options.digits ?? 9}}$`).test(text)) return this.fail(field, MESSAGES.integer(field));
    const number = Number(text);
    if (number < options.min) return this.fail(field, MESSAGES.min(field, options.min));
    if (number > options.max) return this.fail(field, MESSAGES.maxValue(field, options.max));
    return number;
  }

  /** A calendar date YYYY-MM-DD that exists. */
  date(field: string): string | undefined {
    const text = this.string(field, { max: 10 });
    if (text === undefined) return undefined;
    const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
    const parsed = match ? new Date(`${text}T00:00:00Z`) : undefined;
    if (!parsed || Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== text) {
      return this.fail(field, MESSAGES.date(field));
    }
    return text;
  }

  email(field: string): string | undefined {
    const text = this.string(field);
    if (text === undefined) return undefined;
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text)) return this.fail(field, MESSAGES.email(field));
    return text;
  }

  url(field: string): string | undefined {
    const text = this.string(field);
    if (text === undefined) return undefined;
    return isHttpUrl(text) ? text : this.fail(field, MESSAGES.url(field));
  }

  /** A percent 0..100 with at most 6 decimals, returned as decimal text ("2.5"). */
  percent(field: string): string | undefined {
    const value = this.body[field];
    if (value === undefined || value === null || value === '') return undefined;
    const text = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : undefined;
    if (text === undefined || !/^\d{1,3}(\.\d{1,6})?$/.test(text) || Number(text) > 100) {
      return this.fail(field, MESSAGES.percent(field));
    }
    return text;
  }

  /** Throws every collected violation (DomainError invalid_argument VALIDATION_FAILED). */
  finish(): void {
    if (Object.keys(this.errors).length > 0) throw invalidFields(this.errors);
  }
}
