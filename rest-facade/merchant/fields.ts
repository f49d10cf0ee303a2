/**
 * Area C field readers (interface "Area C", platform decisions §7 and §8): pure readers that turn a losslessly
 * parsed /do-action body into the typed fields of a WalletService, DepositService or InstrumentService request,
 * collecting every failing field under its own name in the documented words (./messages.ts). The services check
 * what needs the database or a key, and answer field problem codes the façade renders. No I/O.
 */
import { hasControlCharacters } from '../../src/text';
import { isHttpUrl } from '../../src/web/url';
import { AmountError, decimalsOf, isLosslessNumber, readAmount, type Currency } from '../../src/money';
import { invalidFields, type FieldViolations } from '../../src/errors';
import { WALLET_CURRENCIES, BANK_PAGE_DEFAULT, BANK_PAGE_MAX } from '../../src/flows/wallet/contract';
import { AREA_C_PROBLEM_MESSAGES, MESSAGES, TOKENIZE_MESSAGES } from './messages';

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
    return reader.fail(field, MESSAGES.number(field));
  }
  try {
    return readAmount(value, currency ?? 'USD', { field, allowZero: true });
  } catch (error) {
    if (error instanceof AmountError) return reader.failAmount(field, error, currency);
    throw error;
  }
}

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

/**
 * Login body fields (C1): user_name, password and timestamp (Unix seconds, a JSON integer or digit string; the
 * api checks it lies within MERCHANT_LOGIN_WINDOW_SECONDS). All required; failures are reported under their own
 * names. The timestamp is not forwarded as a typed field: the api reads it from the signed body.
 */
export function readLogin(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const fields = { userName: reader.string('user_name', { required: true }), password: reader.string('password', { required: true }) };
  reader.integer('timestamp', { min: 0, max: 999_999_999_999_999, required: true, digits: 15 });
  reader.finish();
  return fields as { userName: string; password: string };
}

// ---- deposits (docs/area-c.md "Deposits and confirmations") ----

/** Longest accepted text of the deposit fields. */
const MAX_LENGTH = { token: 64, password: 64, encrypted: 4096 } as const;

export interface DepositFields {
  token: string;
  preOrderToken: string;
  amountUnits: bigint;
  currency: Currency;
  /** Empty when not sent. */
  userId: string;
}

function readDepositFields(reader: FieldReader) {
  const currency = reader.currency('currency');
  return {
    token: reader.string('token', { required: true, max: MAX_LENGTH.token }),
    preOrderToken: reader.string('pre_order_token') ?? '',
    amountUnits: reader.amount('amount', currency),
    currency,
    userId: reader.id('user_id') ?? '',
  };
}

/** deposit_by_local_card and deposit_by_bank_account: token, pre_order_token (O), amount, currency, user_id (O). */
export function readDeposit(body: Record<string, unknown>): DepositFields {
  const reader = new FieldReader(body);
  const fields = readDepositFields(reader);
  reader.finish();
  return fields as DepositFields;
}

/** deposit_by_visa_master: the deposit fields and security_code (encrypted, base64; decrypted by the service). */
export function readVisaMasterDeposit(body: Record<string, unknown>): DepositFields & { securityCode: string } {
  const reader = new FieldReader(body);
  const fields = readDepositFields(reader);
  const securityCode = reader.string('security_code', { required: true, max: MAX_LENGTH.encrypted });
  reader.finish();
  return { ...(fields as DepositFields), securityCode: securityCode! };
}

/** confirm_payments: user_id, token (the deposit token), password (OTP or soft token). */
export function readConfirmPayments(body: Record<string, unknown>): { userId: string; token: string; password: string } {
  const reader = new FieldReader(body);
  const fields = {
    userId: reader.id('user_id', { required: true }),
    token: reader.string('token', { required: true, max: MAX_LENGTH.token }),
    password: reader.string('password', { required: true, max: MAX_LENGTH.password }),
  };
  reader.finish();
  return fields as { userId: string; token: string; password: string };
}

/** The card form of the hosted preorder page (application/x-www-form-urlencoded fields, all text). */
export interface CardFormFields {
  holderName: string;
  cardNumber: string;
  expiryMonth: string;
  expiryYear: string;
  securityCode: string;
}

/** Reads the hosted page's card form from parsed form fields (missing fields become empty text). */
export function readCardForm(form: URLSearchParams): CardFormFields {
  const text = (name: string) => (form.get(name) ?? '').slice(0, 256);
  return {
    holderName: text('holder_name'),
    cardNumber: text('card_number'),
    expiryMonth: text('expiry_month'),
    expiryYear: text('expiry_year'),
    securityCode: text('security_code'),
  };
}

// ---- tokenization (interface "Area C" tokenize_local_card, tokenize_bank_account, tokenize_visa_master) ----
// Encrypted fields are only checked for presence and type here; InstrumentService decrypts and checks them.

/** Longest accepted encrypted field (base64 of a ciphertext of up to a 16384-bit key, plus line breaks). */
export const ENCRYPTED_FIELD_MAX = 4096;
export const CALL_BACK_MAX = 2048;

function encrypted(reader: FieldReader, field: string): string | undefined {
  return reader.string(field, { required: true, max: ENCRYPTED_FIELD_MAX });
}

/** bank_id: a listed bank's id, as a JSON integer or a digit string; anything else is "The selected bank_id is invalid.". */
function bankId(reader: FieldReader): string | undefined {
  const value = reader.body.bank_id;
  if (value === undefined || value === null || value === '') return reader.fail('bank_id', MESSAGES.required('bank_id'));
  const text = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : undefined;
  if (text === undefined || !/^[1-9]\d{0,17}$/.test(text)) return reader.fail('bank_id', TOKENIZE_MESSAGES.bankId);
  return text;
}

/** call_back: required text here; InstrumentService checks it is an http(s) URL (with the decrypted fields' checks). */
function callBack(reader: FieldReader): string | undefined {
  return reader.string('call_back', { required: true, max: CALL_BACK_MAX });
}

export function readTokenizeLocalCard(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const fields = {
    userId: reader.id('user_id', { required: true }),
    holderName: encrypted(reader, 'holder_name'),
    bankId: bankId(reader),
    bankCode: encrypted(reader, 'bank_code'),
  };
  reader.finish();
  return fields as Required<{ [K in keyof typeof fields]: string }>;
}

export function readTokenizeBankAccount(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const fields = {
    userId: reader.id('user_id', { required: true }),
    holderName: encrypted(reader, 'holder_name'),
    bankId: bankId(reader),
    bankNumber: encrypted(reader, 'bank_number'),
    callBack: callBack(reader),
  };
  reader.finish();
  return fields as Required<{ [K in keyof typeof fields]: string }>;
}

export function readTokenizeVisaMaster(body: Record<string, unknown>) {
  const reader = new FieldReader(body);
  const fields = {
    userId: reader.id('user_id', { required: true }),
    sourceOfFunds: encrypted(reader, 'sourceOfFunds'),
    holderName: encrypted(reader, 'holder_name'),
  };
  reader.finish();
  return fields as Required<{ [K in keyof typeof fields]: string }>;
}
