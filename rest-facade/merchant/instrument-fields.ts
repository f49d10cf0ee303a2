/**
 * The field readers of the InstrumentService's /do-action services (./instrument-services.ts; interface "Area C"
 * tokenize_local_card, tokenize_bank_account, tokenize_visa_master). Encrypted fields are only checked for presence
 * and type here; InstrumentService decrypts and checks them. Shared reading: ./fields.ts.
 */
import { isLosslessNumber } from '../../src/money';
import { FieldReader } from './fields';
import { MESSAGES, TOKENIZE_MESSAGES } from './messages';

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
