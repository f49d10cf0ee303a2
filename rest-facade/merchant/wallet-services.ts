/**
 * The WalletService's part of Area C (interface "Area C"; platform decisions §7 and §8): the /do-action service
 * table, each entry reading its fields, calling one WalletService RPC with the call's ActionAuth and shaping
 * `data`, and the field rules of each of those services and of the login (one rule table per service, and its
 * reader, body → the fields of its RPC request, without merchantId). Area C's rule forms, messages and answers:
 * ./contract.ts. Another family adds services by exporting a table of the same type from its own file and listing
 * it in the router (./router.ts).
 */
import { date, email, httpUrl, id, ifAbsent, integer, percent, present, refuse, withCheck, type Body } from '../../src/field-rules';
import { BANK_PAGE_DEFAULT, BANK_PAGE_MAX } from '../../src/flows/wallet/contract';
import type { UserRecord } from '../../src/gen/payments/wallet/v1/wallet_pb';
import { parseJsonLossless } from '../../src/money';
import { amount, currency, maxLengthOf, phone, readAreaC, requestFields, string, type MerchantServiceTable } from './contract';

// ---- Field rules ----

const GENERATE_PRE_ORDER_TOKEN = {
  currency: currency(),
  out_trade_no: string({ required: true }),
  seller_code: string({ required: true }),
  description: string({ required: true }),
  amount: amount(),
  redirect_url: httpUrl({ max: maxLengthOf('redirect_url') }),
  commission_rate: percent(),
  call_back_url: httpUrl({ max: maxLengthOf('call_back_url') }),
};

export function readGeneratePreOrderToken(body: Body) {
  const fields = requestFields(readAreaC(GENERATE_PRE_ORDER_TOKEN, body));
  return { ...fields, redirectUrl: fields.redirectUrl ?? '', commissionRate: fields.commissionRate ?? '', callBackUrl: fields.callBackUrl ?? '' };
}

/** The user record's fields, after the phone number and the email (create_user, update_user). */
const USER_FIELDS = {
  first_name: string({ required: true }),
  last_name: string({ required: true }),
  address: string({ required: true }),
  currency: currency(),
  birthday: date(),
  gender: string(),
  description: string({ max: 1000 }),
};

/** create_user: one of phone_number and email is required. */
const CREATE_USER = {
  phone_number: ifAbsent(phone(), ({ body }) => (present(body.email) ? undefined : refuse('required_without', 'phone_number', 'email'))),
  email: ifAbsent(email({ max: maxLengthOf('email') }), ({ body }) => (present(body.phone_number) ? undefined : refuse('required_without', 'email', 'phone_number'))),
  ...USER_FIELDS,
};

export function readCreateUser(body: Body) {
  return requestFields(readAreaC(CREATE_USER, body));
}

/** update_user: the user is `user_id` when sent, else the merchant's user with this phone_number. */
const UPDATE_USER = {
  user_id: id(),
  phone_number: phone({ required: true }),
  email: email({ max: maxLengthOf('email') }),
  ...USER_FIELDS,
};

export function readUpdateUser(body: Body) {
  const fields = requestFields(readAreaC(UPDATE_USER, body));
  return { ...fields, userId: fields.userId ?? '' };
}

/**
 * pay_by_token: pre_order_token (interface "Area C"); the optional `user_id` (a platform extension) names the merchant's
 * user who pays, else the merchant's own wallet pays (docs/area-c.md).
 */
const PAY_BY_TOKEN = { pre_order_token: string({ required: true }), user_id: id() };

export function readPayByToken(body: Body) {
  const fields = requestFields(readAreaC(PAY_BY_TOKEN, body));
  return { ...fields, userId: fields.userId ?? '' };
}

/** transfer: a fee (fees_amount, may be 0) needs fees_currency, the transfer's own currency. */
const TRANSFER = {
  currency: currency(),
  from_user_id: id({ required: true }),
  to_user_id: withCheck(id({ required: true }), (to, { read }) => (to === read.from_user_id ? refuse('same_user') : undefined)),
  amount: amount(),
  fees_currency: withCheck(
    ifAbsent(currency({ required: false }), ({ body }) => (present(body.fees_amount) ? refuse('fees_currency_required') : undefined)),
    (fees, { body, read }) => (present(body.fees_amount) && read.currency && fees !== read.currency ? refuse('fees_currency_mismatch') : undefined),
  ),
  fees_amount: amount({ required: false, allowZero: true }),
};

export function readTransfer(body: Body) {
  const fields = requestFields(readAreaC(TRANSFER, body));
  return { ...fields, feesAmountUnits: fields.feesAmountUnits ?? 0n, feesCurrency: fields.feesCurrency ?? '' };
}

const LIST_BANKS = { page: integer({ min: 1, max: 1_000_000 }), per_page: integer({ min: 1, max: BANK_PAGE_MAX }) };

export function readListBanks(body: Body) {
  const fields = requestFields(readAreaC(LIST_BANKS, body));
  return { page: fields.page ?? 1, perPage: fields.perPage ?? BANK_PAGE_DEFAULT };
}

const BLOCK_MONEY = { currency: currency(), user_token: string({ required: true }), amount: amount(), reference: string({ required: true }) };

export function readBlockMoney(body: Body) {
  return requestFields(readAreaC(BLOCK_MONEY, body));
}

const CANCEL_BLOCK_MONEY = { transaction_ref: string({ required: true }) };

export function readCancelBlockMoney(body: Body) {
  return requestFields(readAreaC(CANCEL_BLOCK_MONEY, body));
}

/**
 * Login body fields (C1): user_name and password (required, as the interface documents them), and the optional
 * platform extension timestamp (Unix seconds, a JSON integer or digit string; when sent, the api checks it lies within
 * MERCHANT_LOGIN_WINDOW_SECONDS and accepts the signed body once). Failures are reported under their own names. The
 * timestamp is not forwarded as a typed field: the api reads it from the signed body.
 */
const LOGIN = {
  user_name: string({ required: true }),
  password: string({ required: true }),
  timestamp: integer({ min: 0, max: 999_999_999_999_999, digits: 15 }),
};

export function readLogin(body: Body) {
  const fields = readAreaC(LOGIN, body);
  return { userName: fields.user_name, password: fields.password };
}

// ---- Services ----

/** The user record as the interface lists it, plus user_token and wallet_ref. */
export function userRecordJson(user: UserRecord | undefined): Record<string, unknown> {
  if (!user) return {};
  return {
    id: user.id,
    email: user.email ?? null,
    avatar: user.avatar,
    created_at: user.createdAt,
    updated_at: user.updatedAt,
    phone_number: user.phoneNumber ?? null,
    gender: user.gender ?? null,
    first_name: user.firstName,
    last_name: user.lastName,
    full_name: user.fullName,
    address: user.address ?? null,
    birthday: user.birthday ?? null,
    currency: user.currency,
    user_token: user.userToken,
    wallet_ref: user.walletRef,
  };
}

/** The WalletService's /do-action services. */
export const walletMerchantServices: MerchantServiceTable = {
  async list_fees({ caller, clients, callOptions }) {
    const answer = await clients.wallet.listFees({ ...caller }, callOptions);
    return { FEE: parseJsonLossless(answer.feeJson), EXCHANGE_RATE: parseJsonLossless(answer.exchangeRateJson) };
  },

  async generate_pre_order_token({ body, caller, clients, callOptions }) {
    const fields = readGeneratePreOrderToken(body);
    const answer = await clients.wallet.generatePreOrderToken({ ...caller, ...fields }, callOptions);
    return { pre_order_token: answer.preOrderToken, pre_order_url: answer.preOrderUrl };
  },

  async create_user({ body, caller, clients, callOptions }) {
    const fields = readCreateUser(body);
    const answer = await clients.wallet.createUser({ ...caller, ...fields }, callOptions);
    return userRecordJson(answer.user);
  },

  async update_user({ body, caller, clients, callOptions }) {
    const fields = readUpdateUser(body);
    const answer = await clients.wallet.updateUser({ ...caller, ...fields }, callOptions);
    return userRecordJson(answer.user);
  },

  async pay_by_token({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = readPayByToken(body);
    const answer = await clients.wallet.payByToken({ ...caller, ...fields, idempotencyKey }, callOptions);
    return { reference: answer.reference };
  },

  async transfer({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = readTransfer(body);
    const answer = await clients.wallet.transfer({ ...caller, ...fields, idempotencyKey }, callOptions);
    return { reference: answer.reference };
  },

  async list_banks({ body, caller, clients, callOptions }) {
    const fields = readListBanks(body);
    const answer = await clients.wallet.listBanks({ ...caller, ...fields }, callOptions);
    return {
      current_page: answer.currentPage,
      data: answer.data.map((bank) => ({ id: bank.id, name: bank.name, region: bank.region, city: bank.city, logo: bank.logo })),
      from: answer.from ?? null,
      last_page: answer.lastPage,
      per_page: answer.perPage,
      to: answer.to ?? null,
      total: answer.total,
    };
  },

  async block_money({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = readBlockMoney(body);
    const answer = await clients.wallet.blockMoney({ ...caller, ...fields, idempotencyKey }, callOptions);
    return { transaction_ref: answer.transactionRef };
  },

  async cancel_block_money({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = readCancelBlockMoney(body);
    await clients.wallet.cancelBlockMoney({ ...caller, ...fields, idempotencyKey }, callOptions);
    return [];
  },
};
