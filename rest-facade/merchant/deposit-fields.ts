/**
 * The field readers of the DepositService's /do-action services (./deposit-services.ts) and of the hosted page's
 * card form (./payment-pages.ts): docs/area-c.md "Deposits and confirmations"; shared reading: ./fields.ts.
 */
import type { Currency } from '../../src/money';
import { FieldReader } from './fields';

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
