/**
 * Area C field rules and messages (interface "Area C", platform decisions §7 and §8): pure readers that turn a
 * losslessly parsed /do-action body into the typed fields of a WalletService request, collecting every failing
 * field under its own name. Shared by the façade (translation) and the service (business checks use the same
 * messages). No I/O.
 */
import { hasControlCharacters } from '../../text';
import { isHttpUrl } from '../../web/url';
import { DomainError, invalidFields, type FieldViolations } from '../../errors';
import { isLosslessNumber, readAmount, type Currency } from '../../money';

/** Currencies Area C services accept (interface: "currency string R (USD)"). */
export const WALLET_CURRENCIES: readonly Currency[] = ['USD'];

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

export const MESSAGES = {
  required: (field: string) => `The ${field} field is required.`,
  string: (field: string) => `The ${field} must be a string.`,
  max: (field: string, max: number) => `The ${field} may not be greater than ${max} characters.`,
  integer: (field: string) => `The ${field} must be an integer.`,
  min: (field: string, min: number) => `The ${field} must be at least ${min}.`,
  maxValue: (field: string, max: number) => `The ${field} may not be greater than ${max}.`,
  currency: (field: string) => `The selected ${field} is invalid. Accepted: ${WALLET_CURRENCIES.join(', ')}.`,
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


/** Collects field violations; `finish()` throws them all at once. */
export class FieldReader {
  readonly errors: FieldViolations = {};

  constructor(readonly body: Record<string, unknown>) {}

  fail(field: string, message: string): undefined {
    (this.errors[field] ??= []).push(message);
    return undefined;
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
      return this.fail(field, `The ${field} must be a number.`);
    }
    try {
      return readAmount(value, currency ?? 'USD', { field });
    } catch (error) {
      if (error instanceof DomainError) {
        for (const message of error.fields[field] ?? [error.message]) this.fail(field, message);
        return undefined;
      }
      throw error;
    }
  }

  /** An integer within [min, max]; JSON integer or digit string. */
  integer(field: string, options: { min: number; max: number; required?: boolean }): number | undefined {
    const value = this.body[field];
    if (value === undefined || value === null || value === '') {
      return options.required ? this.fail(field, MESSAGES.required(field)) : undefined;
    }
    const text = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : undefined;
    if (text === undefined || !/^-?\d{1,9}$/.test(text)) return this.fail(field, MESSAGES.integer(field));
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

// ---- one reader per service: body → the fields of its RPC request (without merchantId) ----

export function readGeneratePreOrderToken(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const currency = reader.currency('currency');
  const fields = {
    outTradeNo: reader.string('out_trade_no', { required: true }),
    sellerCode: reader.string('seller_code', { required: true }),
    description: reader.string('description', { required: true }),
    amountUnits: reader.amount('amount', currency),
    currency,
    redirectUrl: reader.url('redirect_url') ?? '',
    commissionRate: reader.percent('commission_rate') ?? '',
    callBackUrl: reader.url('call_back_url') ?? '',
  };
  reader.finish();
  return fields as Required<typeof fields>;
}

function readUserFields(reader: FieldReader, phoneRequired: boolean) {
  const phone = reader.phone('phone_number', { required: phoneRequired });
  const email = reader.email('email');
  return {
    phoneNumber: phone,
    email,
    firstName: reader.string('first_name', { required: true }),
    lastName: reader.string('last_name', { required: true }),
    address: reader.string('address', { required: true }),
    currency: reader.currency('currency'),
    birthday: reader.date('birthday'),
    gender: reader.string('gender'),
    description: reader.string('description', { max: 1000 }),
  };
}

export function readCreateUser(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  if (!reader.has('phone_number') && !reader.has('email')) {
    reader.fail('phone_number', MESSAGES.phoneOrEmail);
    reader.fail('email', MESSAGES.emailOrPhone);
  }
  const fields = readUserFields(reader, false);
  reader.finish();
  return fields as typeof fields & { firstName: string; lastName: string; address: string; currency: Currency };
}

/** update_user: the user is `user_id` when sent, else the merchant's user with this phone_number. */
export function readUpdateUser(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const userId = reader.id('user_id') ?? '';
  const fields = readUserFields(reader, true);
  reader.finish();
  return { userId, ...fields } as { userId: string } & typeof fields & {
    phoneNumber: string; firstName: string; lastName: string; address: string; currency: Currency;
  };
}

/** pay_by_token: the payer is the merchant's user `user_id` (platform decision, documented in docs/area-c.md). */
export function readPayByToken(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const fields = {
    preOrderToken: reader.string('pre_order_token', { required: true }),
    userId: reader.id('user_id', { required: true }),
  };
  reader.finish();
  return fields as Required<{ [K in keyof typeof fields]: string }>;
}

export function readTransfer(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const currency = reader.currency('currency');
  const fromUserId = reader.id('from_user_id', { required: true });
  const toUserId = reader.id('to_user_id', { required: true });
  if (fromUserId && toUserId && fromUserId === toUserId) reader.fail('to_user_id', MESSAGES.sameUser);
  const amountUnits = reader.amount('amount', currency);
  let feesAmountUnits = 0n;
  let feesCurrency: Currency | undefined;
  if (reader.has('fees_amount')) {
    feesCurrency = reader.currency('fees_currency', { required: false });
    if (!reader.has('fees_currency')) reader.fail('fees_currency', MESSAGES.feesCurrencyRequired);
    else if (feesCurrency && currency && feesCurrency !== currency) reader.fail('fees_currency', MESSAGES.feesCurrencyMismatch);
    feesAmountUnits = reader.body.fees_amount === undefined ? 0n : (readZeroableAmount(reader, 'fees_amount', currency) ?? 0n);
  } else if (reader.has('fees_currency')) {
    feesCurrency = reader.currency('fees_currency', { required: false });
  }
  reader.finish();
  return {
    fromUserId: fromUserId!,
    toUserId: toUserId!,
    amountUnits: amountUnits!,
    currency: currency!,
    feesAmountUnits,
    feesCurrency: feesCurrency ?? '',
  };
}

function readZeroableAmount(reader: FieldReader, field: string, currency: Currency | undefined): bigint | undefined {
  const value = reader.body[field];
  if (typeof value === 'boolean' || (typeof value === 'object' && value !== null && !isLosslessNumber(value))) {
    return reader.fail(field, `The ${field} must be a number.`);
  }
  try {
    return readAmount(value, currency ?? 'USD', { field, allowZero: true });
  } catch (error) {
    if (error instanceof DomainError) {
      for (const message of error.fields[field] ?? [error.message]) reader.fail(field, message);
      return undefined;
    }
    throw error;
  }
}

/** Default and bounds of list_banks paging (interface: 20 in the sample). */
export const BANK_PAGE_DEFAULT = 20;
export const BANK_PAGE_MAX = 100;

export function readListBanks(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const fields = {
    page: reader.integer('page', { min: 1, max: 1_000_000 }) ?? 1,
    perPage: reader.integer('per_page', { min: 1, max: BANK_PAGE_MAX }) ?? BANK_PAGE_DEFAULT,
  };
  reader.finish();
  return fields;
}

export function readBlockMoney(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const currency = reader.currency('currency');
  const fields = {
    userToken: reader.string('user_token', { required: true }),
    amountUnits: reader.amount('amount', currency),
    currency,
    reference: reader.string('reference', { required: true }),
  };
  reader.finish();
  return fields as Required<typeof fields>;
}

export function readCancelBlockMoney(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const fields = { transactionRef: reader.string('transaction_ref', { required: true }) };
  reader.finish();
  return fields as { transactionRef: string };
}

/** Login body fields (C1). Both required; failures are reported under their own names. */
export function readLogin(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const fields = { userName: reader.string('user_name', { required: true }), password: reader.string('password', { required: true }) };
  reader.finish();
  return fields as { userName: string; password: string };
}
