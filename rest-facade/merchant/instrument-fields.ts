/**
 * The field rules of the InstrumentService's /do-action services (./instrument-services.ts; interface "Area C"
 * tokenize_local_card, tokenize_bank_account, tokenize_visa_master). Encrypted fields are only checked for presence
 * and type here; InstrumentService decrypts and checks them. Area C's rule forms: ./fields.ts.
 */
import { id, present, refuse, type FieldRule } from '../../src/field-rules';
import { isLosslessNumber } from '../../src/money';
import { readAreaC, requestFields, string } from './fields';

/** Longest accepted encrypted field (base64 of a ciphertext of up to a 16384-bit key, plus line breaks). */
export const ENCRYPTED_FIELD_MAX = 4096;
export const CALL_BACK_MAX = 2048;

const encrypted = () => string({ required: true, max: ENCRYPTED_FIELD_MAX });

/** bank_id: a listed bank's id, as a JSON integer or a digit string; anything else is "The selected bank_id is invalid.". */
const bankId: FieldRule<string> = (value) => {
  if (!present(value)) return refuse('required');
  const text = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : undefined;
  return text !== undefined && /^[1-9]\d{0,17}$/.test(text) ? text : refuse('not_found');
};

const TOKENIZE_LOCAL_CARD = { user_id: id({ required: true }), holder_name: encrypted(), bank_id: bankId, bank_code: encrypted() };

export function readTokenizeLocalCard(body: Record<string, unknown>) {
  return requestFields(readAreaC(TOKENIZE_LOCAL_CARD, body));
}

/** call_back: required text here; InstrumentService checks it is an http(s) URL (with the decrypted fields' checks). */
const TOKENIZE_BANK_ACCOUNT = {
  user_id: id({ required: true }),
  holder_name: encrypted(),
  bank_id: bankId,
  bank_number: encrypted(),
  call_back: string({ required: true, max: CALL_BACK_MAX }),
};

export function readTokenizeBankAccount(body: Record<string, unknown>) {
  return requestFields(readAreaC(TOKENIZE_BANK_ACCOUNT, body));
}

const TOKENIZE_VISA_MASTER = { user_id: id({ required: true }), sourceOfFunds: encrypted(), holder_name: encrypted() };

export function readTokenizeVisaMaster(body: Record<string, unknown>) {
  return requestFields(readAreaC(TOKENIZE_VISA_MASTER, body));
}
