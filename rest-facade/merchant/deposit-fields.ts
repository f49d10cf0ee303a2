/**
 * The field rules of the DepositService's /do-action services (./deposit-services.ts) and the reader of the hosted
 * page's card form (./payment-pages.ts): docs/area-c.md "Deposits and confirmations"; Area C's rule forms:
 * ./fields.ts.
 */
import { id } from '../../src/field-rules';
import type { Currency } from '../../src/money';
import { amount, currency, readAreaC, requestFields, string } from './fields';

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

/** deposit_by_local_card and deposit_by_bank_account: token, pre_order_token (O), amount, currency, user_id (O). */
const DEPOSIT = {
  currency: currency(),
  token: string({ required: true, max: MAX_LENGTH.token }),
  pre_order_token: string(),
  amount: amount(),
  user_id: id(),
};

function depositFields<V extends { pre_order_token?: string; user_id?: string }>(values: V) {
  const fields = requestFields(values);
  return { ...fields, preOrderToken: fields.preOrderToken ?? '', userId: fields.userId ?? '' };
}

export function readDeposit(body: Record<string, unknown>): DepositFields {
  return depositFields(readAreaC(DEPOSIT, body));
}

/** deposit_by_visa_master: the deposit fields and security_code (encrypted, base64; decrypted by the service). */
const VISA_MASTER_DEPOSIT = { ...DEPOSIT, security_code: string({ required: true, max: MAX_LENGTH.encrypted }) };

export function readVisaMasterDeposit(body: Record<string, unknown>): DepositFields & { securityCode: string } {
  return depositFields(readAreaC(VISA_MASTER_DEPOSIT, body));
}

/** confirm_payments: user_id, token (the deposit token), password (OTP or soft token). */
const CONFIRM_PAYMENTS = {
  user_id: id({ required: true }),
  token: string({ required: true, max: MAX_LENGTH.token }),
  password: string({ required: true, max: MAX_LENGTH.password }),
};

export function readConfirmPayments(body: Record<string, unknown>): { userId: string; token: string; password: string } {
  return requestFields(readAreaC(CONFIRM_PAYMENTS, body));
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
