/**
 * Area C tokenize field readers (interface "Area C" tokenize_local_card, tokenize_bank_account,
 * tokenize_visa_master): pure readers from a losslessly parsed /do-action body to the fields of an
 * InstrumentService request, in the style of src/wallet/contract.ts (every failing field at once). Encrypted fields
 * are only checked for presence and type here; InstrumentService decrypts and checks their content.
 */
import { FieldReader, MESSAGES } from '../flows/wallet/fields';
import { isLosslessNumber } from '../money';

/** Longest accepted encrypted field (base64 of a ciphertext of up to a 16384-bit key, plus line breaks). */
export const ENCRYPTED_FIELD_MAX = 4096;
export const CALL_BACK_MAX = 2048;
export const BANK_ID_INVALID = 'The selected bank_id is invalid.';

function encrypted(reader: FieldReader, field: string): string | undefined {
  return reader.string(field, { required: true, max: ENCRYPTED_FIELD_MAX });
}

/** bank_id: a listed bank's id, as a JSON integer or a digit string; anything else is "The selected bank_id is invalid.". */
function bankId(reader: FieldReader): string | undefined {
  const value = reader.body.bank_id;
  if (value === undefined || value === null || value === '') return reader.fail('bank_id', MESSAGES.required('bank_id'));
  const text = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : undefined;
  if (text === undefined || !/^[1-9]\d{0,17}$/.test(text)) return reader.fail('bank_id', BANK_ID_INVALID);
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
