/**
 * Area A contract as data (payment-services-interface.md "Area A", platform decisions §6): field limits, the
 * service names, and the one table mapping domain error reasons to the documented error_code / error_desc / HTTP
 * status. Pure: used by the partner façade (rest-facade/partner) and the tests.
 */

/** Field sizes of the interface's Limits table. */
export const AREA_A_LIMITS = {
  'partner-id': 64,
  'partner-secret-key': 128,
  user_name: 64,
  password: 64,
  service: 64,
  sign_type: 10,
  out_trade_no: 64,
  receiver_id: 25,
  sender_name: 96,
  receiver_name: 96,
  pre_transfer_id: 64,
  partner_transaction_id: 64,
  fund_transfer_id: 64,
  Authorization: 1200,
  access_token: 1200,
} as const;

export const AREA_A_SERVICES = ['create.unified.fundTransfer', 'confirm.fundTransfer', 'query.fundTransfer'] as const;
export type AreaAService = (typeof AREA_A_SERVICES)[number];

export type AreaAErrorCode = 'UNAUTHENTICATED' | 'NOTELIGIBLE' | 'VALIDATIONERROR' | 'USED' | 'NOTEXIST' | 'EXPIRED' | 'SYSTEMERROR';

export interface AreaAError {
  status: number;
  error_code: AreaAErrorCode;
  error_desc: string;
}

/** Domain error reasons (from TransferService) → Area A error. Anything not listed is a SYSTEMERROR. */
export const AREA_A_ERRORS: Record<string, AreaAError> = {
  UNAUTHENTICATED: { status: 401, error_code: 'UNAUTHENTICATED', error_desc: 'Unauthorized' },
  RECEIVER_NOT_ELIGIBLE: { status: 400, error_code: 'NOTELIGIBLE', error_desc: 'The receiver is not eligible for the funds.' },
  PRE_TRANSFER_USED: { status: 400, error_code: 'USED', error_desc: 'The pre-transfer id was already used.' },
  PRE_TRANSFER_NOT_FOUND: { status: 400, error_code: 'NOTEXIST', error_desc: 'Wrong or malformed pre-transfer id.' },
  TRANSFER_NOT_FOUND: { status: 400, error_code: 'NOTEXIST', error_desc: 'No transfer for this out_trade_no.' },
  PRE_TRANSFER_EXPIRED: { status: 400, error_code: 'EXPIRED', error_desc: 'The unified fund transfer has expired.' },
  INSUFFICIENT_PARTNER_BALANCE: { status: 400, error_code: 'VALIDATIONERROR', error_desc: 'insufficient partner balance' },
  DUPLICATE_OUT_TRADE_NO: { status: 400, error_code: 'VALIDATIONERROR', error_desc: 'duplicate out_trade_no' },
  DUPLICATE_PARTNER_TRANSACTION_ID: { status: 400, error_code: 'VALIDATIONERROR', error_desc: 'duplicate partner_transaction_id' },
  INVALID_SIGN: { status: 400, error_code: 'VALIDATIONERROR', error_desc: 'invalid sign' },
};

export const SYSTEM_ERROR: AreaAError = { status: 500, error_code: 'SYSTEMERROR', error_desc: 'Server error or busy.' };

/** A VALIDATIONERROR with a field-specific description. */
export function validationError(error_desc: string): AreaAError {
  return { status: 400, error_code: 'VALIDATIONERROR', error_desc };
}

const ALPHA = /^[A-Za-z0-9]+$/;

/**
 * Checks one request field against its interface type. Returns the problem as an error_desc, or undefined.
 * kind: alpha = Alpha(n) (letters and digits), string = String(n) (non-empty), char3 = three uppercase letters,
 * receiver = Alpha(25) with an optional leading "+" (international phone form, §6).
 */
export function checkField(
  body: Record<string, unknown>,
  field: string,
  kind: 'alpha' | 'string' | 'char3' | 'receiver',
  maxLength: number,
): string | undefined {
  const value = body[field];
  if (value === undefined || value === null || value === '') return `${field} is required`;
  if (typeof value !== 'string') return `${field} must be a string`;
  if (value.length > maxLength) return `${field} must be at most ${maxLength} characters`;
  if (kind === 'alpha' && !ALPHA.test(value)) return `${field} must contain only letters and digits`;
  if (kind === 'receiver' && !/^\+?[A-Za-z0-9]+$/.test(value)) return `${field} must be a user id or a phone number`;
  if (kind === 'char3' && !/^[A-Z]{3}$/.test(value)) return `${field} must be a three-letter currency code`;
  return undefined;
}
