/**
 * What binds an Area C request to the body its merchant signed (platform decisions §7): the one table of every RPC
 * that carries the merchant's proof (ActionAuth or, for Login, SignedEnvelope), found by the request's `$typeName`.
 * For each, the `service` its signed body must name and, for each typed field of the request, the body parameter it
 * is read from and how (the rules of the façade's field readers in rest-facade/merchant/fields.ts, which produce the
 * typed fields from the same body). A request whose typed fields say anything the signed body does not is refused
 * as a bad signature: holding a transport credential and one captured signed request buys no other action.
 *
 * Fields a request carries beside them and that no body holds: `merchant_id` (the merchant is the one the proof
 * verifies), `auth` / `envelope` (the proof itself) and `idempotency_key` (the unsigned header, which may only
 * narrow; docs/idempotency.md). Every other field of such a request must be listed here
 * (test/unit/signed-body-bindings.test.ts walks the generated descriptors).
 */
import { isLosslessNumber } from 'lossless-json';
import { AmountError, isCurrency, readAmount, type Currency } from '../money';

/** How one typed field is read from its body parameter. */
export type FieldBinding =
  /** Text (a JSON string as it is, a JSON number as written); absent, null, "" and blank text are "". */
  | { kind: 'text'; parameter: string }
  /** Minor units of the body's `currency` parameter (USD when that names no currency); absent is 0. */
  | { kind: 'amount'; parameter: string; currency: string }
  /** An integer (JSON integer or digit string); absent is `absent`, the documented default the façade sends. */
  | { kind: 'integer'; parameter: string; absent: number };

export interface SignedAction {
  /** The `service` the signed body names; null for a login body, which names none. */
  service: string | null;
  /** Typed field (protobuf-es local name) → where the signed body holds it. */
  fields: Readonly<Record<string, FieldBinding>>;
}

/** Request fields that are not read from the signed body (see the file comment). */
export const UNBOUND_FIELDS: ReadonlySet<string> = new Set(['merchantId', 'auth', 'envelope', 'idempotencyKey']);

const text = (parameter: string): FieldBinding => ({ kind: 'text', parameter });
const amount = (parameter: string, currency = 'currency'): FieldBinding => ({ kind: 'amount', parameter, currency });
const integer = (parameter: string, absent: number): FieldBinding => ({ kind: 'integer', parameter, absent });

const USER_FIELDS = {
  phoneNumber: text('phone_number'),
  email: text('email'),
  firstName: text('first_name'),
  lastName: text('last_name'),
  address: text('address'),
  currency: text('currency'),
  birthday: text('birthday'),
  gender: text('gender'),
  description: text('description'),
};

const DEPOSIT_FIELDS = {
  token: text('token'),
  preOrderToken: text('pre_order_token'),
  amountUnits: amount('amount'),
  currency: text('currency'),
  userId: text('user_id'),
};

/** Request `$typeName` → what its signed body must say. */
export const SIGNED_BODY_BINDINGS: Readonly<Record<string, SignedAction>> = {
  'payments.wallet.v1.LoginRequest': { service: null, fields: { userName: text('user_name'), password: text('password') } },
  'payments.wallet.v1.ListFeesRequest': { service: 'list_fees', fields: {} },
  'payments.wallet.v1.GeneratePreOrderTokenRequest': {
    service: 'generate_pre_order_token',
    fields: {
      outTradeNo: text('out_trade_no'),
      sellerCode: text('seller_code'),
      description: text('description'),
      amountUnits: amount('amount'),
      currency: text('currency'),
      redirectUrl: text('redirect_url'),
      commissionRate: text('commission_rate'),
      callBackUrl: text('call_back_url'),
    },
  },
  'payments.wallet.v1.CreateUserRequest': { service: 'create_user', fields: USER_FIELDS },
  'payments.wallet.v1.UpdateUserRequest': { service: 'update_user', fields: { userId: text('user_id'), ...USER_FIELDS } },
  'payments.wallet.v1.PayByTokenRequest': { service: 'pay_by_token', fields: { preOrderToken: text('pre_order_token'), userId: text('user_id') } },
  'payments.wallet.v1.TransferRequest': {
    service: 'transfer',
    fields: {
      fromUserId: text('from_user_id'),
      toUserId: text('to_user_id'),
      amountUnits: amount('amount'),
      currency: text('currency'),
      feesAmountUnits: amount('fees_amount'),
      feesCurrency: text('fees_currency'),
    },
  },
  // The documented defaults of list_banks (docs/area-c.md), which the façade sends when the body has none.
  'payments.wallet.v1.ListBanksRequest': { service: 'list_banks', fields: { page: integer('page', 1), perPage: integer('per_page', 20) } },
  'payments.wallet.v1.BlockMoneyRequest': {
    service: 'block_money',
    fields: { userToken: text('user_token'), amountUnits: amount('amount'), currency: text('currency'), reference: text('reference') },
  },
  'payments.wallet.v1.CancelBlockMoneyRequest': { service: 'cancel_block_money', fields: { transactionRef: text('transaction_ref') } },
  'payments.deposit.v1.DepositByLocalCardRequest': { service: 'deposit_by_local_card', fields: DEPOSIT_FIELDS },
  'payments.deposit.v1.DepositByBankAccountRequest': { service: 'deposit_by_bank_account', fields: DEPOSIT_FIELDS },
  'payments.deposit.v1.DepositByVisaMasterRequest': { service: 'deposit_by_visa_master', fields: { ...DEPOSIT_FIELDS, securityCode: text('security_code') } },
  'payments.deposit.v1.ConfirmPaymentRequest': {
    service: 'confirm_payments',
    fields: { userId: text('user_id'), token: text('token'), password: text('password') },
  },
  'payments.instrument.v1.TokenizeLocalCardRequest': {
    service: 'tokenize_local_card',
    fields: { userId: text('user_id'), holderName: text('holder_name'), bankId: text('bank_id'), bankCode: text('bank_code') },
  },
  'payments.instrument.v1.TokenizeBankAccountRequest': {
    service: 'tokenize_bank_account',
    fields: { userId: text('user_id'), holderName: text('holder_name'), bankId: text('bank_id'), bankNumber: text('bank_number'), callBack: text('call_back') },
  },
  'payments.instrument.v1.TokenizeVisaMasterRequest': {
    service: 'tokenize_visa_master',
    fields: { userId: text('user_id'), holderName: text('holder_name'), sourceOfFunds: text('sourceOfFunds') },
  },
};

/** Never equal to a typed value: the body holds something no reader turns into one. */
const UNREADABLE = Symbol('unreadable');

function absent(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

/** The typed value the body parameter stands for, as the façade's readers produce it, or UNREADABLE. */
function expected(binding: FieldBinding, body: Record<string, unknown>): string | bigint | number | typeof UNREADABLE {
  const value = Object.hasOwn(body, binding.parameter) ? body[binding.parameter] : undefined;
  switch (binding.kind) {
    case 'text':
      if (absent(value)) return '';
      if (typeof value === 'string') return value.trim() === '' ? '' : value;
      return isLosslessNumber(value) ? value.toString() : UNREADABLE;
    case 'integer': {
      if (absent(value)) return binding.absent;
      const digits = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : '';
      return /^-?\d{1,9}$/.test(digits) ? Number(digits) : UNREADABLE;
    }
    case 'amount': {
      if (absent(value)) return 0n;
      const currencyText = body[binding.currency];
      const currency: Currency = isCurrency(currencyText) ? currencyText : 'USD';
      // The signature covers a JSON number as a double writes it (§7) and this reads its exact decimal: they agree
      // for every accepted amount (at most MAX_AMOUNT_UNITS, 15 significant digits, which a double holds exactly).
      try {
        return readAmount(value, currency, { allowZero: true, field: binding.parameter });
      } catch (error) {
        if (error instanceof AmountError) return UNREADABLE;
        throw error;
      }
    }
  }
}

/**
 * The names of the typed fields of `request` that differ from what the signed `body` says (empty when bound), or
 * `['service']` when the body names another service. @throws Error when `request` has no entry in the table.
 */
export function unboundFields(request: { $typeName: string }, body: Record<string, unknown>): string[] {
  const action = SIGNED_BODY_BINDINGS[request.$typeName];
  if (!action) throw new Error(`${request.$typeName} has no signed-body binding (src/merchant-auth/bindings.ts)`);
  const service = Object.hasOwn(body, 'service') ? body.service : undefined;
  if (action.service === null ? !absent(service) : service !== action.service) return ['service'];
  const typed = request as unknown as Record<string, unknown>;
  return Object.entries(action.fields)
    .filter(([field, binding]) => {
      const value = typed[field] ?? (binding.kind === 'text' ? '' : undefined);
      return expected(binding, body) !== value;
    })
    .map(([field]) => field);
}
