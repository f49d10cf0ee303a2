/**
 * The field readers of the WalletService's /do-action services (./services.ts) and of the login: one reader per
 * service, body → the fields of its RPC request (without merchantId). Field rules: interface "Area C"; shared
 * reading: ./fields.ts.
 */
import { AmountError, isLosslessNumber, readAmount, type Currency } from '../../src/money';
import { BANK_PAGE_DEFAULT, BANK_PAGE_MAX } from '../../src/flows/wallet/contract';
import { FieldReader } from './fields';
import { MESSAGES } from './messages';

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
