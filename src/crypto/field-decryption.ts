/**
 * Area C encrypted fields (interface "Authentication / Area C" item 6; platform decisions §7): holder_name,
 * bank_code, bank_number, sourceOfFunds and security_code arrive as base64 of an RSA ciphertext under the platform
 * public key. Accepted paddings, tried in this order:
 *
 *   1. RSAES-OAEP, SHA-256 (MGF1 SHA-256, empty label)   Node crypto
 *   2. RSAES-OAEP, SHA-1 (MGF1 SHA-1, empty label)       Node crypto
 *   3. RSAES-PKCS1-v1_5 with implicit rejection          pkcs1-implicit-rejection.ts over Node's raw RSA: a
 *                                                        non-conformant padding yields a synthetic message derived
 *                                                        from the key and the ciphertext, never an error
 *
 * No padding oracle (platform decisions §7; docs/security.md "Encrypted fields are no padding oracle"): a field is
 * opened and then checked by the field's rule (what a holder name, a card number… must be: the instruments' store),
 * and every failure answers the one same error (problem `not_decryptable`): not a string, not base64, not k bytes
 * below the modulus, no padding accepted, not UTF-8, empty, or refused by the rule. Since PKCS#1 v1.5 never fails on
 * padding, a ciphertext with garbage inside a conformant padding and one whose padding is not conformant both reach
 * the rule with a message, and strict rules refuse both (random plaintexts essentially never pass them).
 *
 * Every value costs the same work: the three decryptions always run (a malformed value is replaced by a placeholder
 * ciphertext of the key and refused at the end), whichever padding succeeds. Plaintexts are never logged.
 */
import { constants, privateDecrypt, type KeyObject } from 'node:crypto';
import { reasonError } from '../errors';
import { FIELD_DECRYPTION_REASONS } from './reasons';
import { problem } from '../field-problems';
import { belowModulus, decryptPkcs1WithImplicitRejection, modulusBytesOf } from './pkcs1-implicit-rejection';
import type { RsaKeyPair } from './platform-keys';

export type FieldPadding = 'oaep-sha256' | 'oaep-sha1' | 'pkcs1';

/**
 * What a field's plaintext must be: its checked value (normalized as the field keeps it), or undefined to refuse it.
 * Pure and quick, no I/O: it runs on synthetic messages too.
 */
export type FieldRule<T> = (plaintext: string) => T | undefined;

type FieldKeys = Pick<RsaKeyPair, 'privateKey'>;

/** The one field problem of every decryption failure on `field` (the same code whatever the field). */
export function fieldNotDecryptable(_field: string): string {
  return problem('not_decryptable');
}

/** Longest accepted base64 text (a 16384-bit key's ciphertext is 2732 characters). */
const MAX_BASE64_LENGTH = 4096;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The ciphertext of an encrypted field value: base64 (line breaks ignored) of k bytes below the modulus. */
function ciphertextOf(privateKey: KeyObject, value: unknown): Buffer | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.replace(/\s+/g, '');
  if (text.length === 0 || text.length > MAX_BASE64_LENGTH || !BASE64.test(text)) return undefined;
  const ciphertext = Buffer.from(text, 'base64');
  return belowModulus(privateKey, ciphertext) ? ciphertext : undefined;
}

/** What a malformed value is decrypted as, so that it costs what any ciphertext costs: 2, as k bytes. */
function placeholderCiphertext(privateKey: KeyObject): Buffer {
  const placeholder = Buffer.alloc(modulusBytesOf(privateKey));
  placeholder[placeholder.length - 1] = 2;
  return placeholder;
}

function oaep(privateKey: KeyObject, ciphertext: Buffer, hash: 'sha256' | 'sha1'): Buffer | undefined {
  try {
    return privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: hash }, ciphertext);
  } catch {
    return undefined;
  }
}

/** The plaintext bytes under the first accepted padding; all three decryptions run whatever the outcome. */
function decryptBytes(privateKey: KeyObject, ciphertext: Buffer): Buffer {
  const sha256 = oaep(privateKey, ciphertext, 'sha256');
  const sha1 = oaep(privateKey, ciphertext, 'sha1');
  const pkcs1 = decryptPkcs1WithImplicitRejection(privateKey, ciphertext);
  return sha256 ?? sha1 ?? pkcs1;
}

function utf8Text(bytes: Buffer): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * The value `rule` gives the plaintext of one encrypted field value, or undefined for any failure (the value does
 * not decrypt, is not non-empty UTF-8, or the rule refuses it).
 */
export function tryDecryptField<T>(keys: FieldKeys, value: unknown, rule: FieldRule<T>): T | undefined {
  const ciphertext = ciphertextOf(keys.privateKey, value);
  const plaintext = decryptBytes(keys.privateKey, ciphertext ?? placeholderCiphertext(keys.privateKey));
  const text = utf8Text(plaintext);
  plaintext.fill(0);
  const checked = text ? rule(text) : undefined;
  return ciphertext ? checked : undefined;
}

/**
 * The value `rule` gives the plaintext of the encrypted field `field`.
 * @throws DomainError invalid_argument FIELD_NOT_DECRYPTABLE `{[field]: ["not_decryptable"]}` for every cause: the
 *         value does not decrypt, or decrypts to something the rule refuses (one answer: no padding oracle).
 */
export function decryptField<T>(keys: FieldKeys, field: string, value: unknown, rule: FieldRule<T>): T {
  const checked = tryDecryptField(keys, value, rule);
  if (checked === undefined) {
    throw reasonError(FIELD_DECRYPTION_REASONS, 'FIELD_NOT_DECRYPTABLE', `${field} could not be decrypted`, {
      [field]: [fieldNotDecryptable(field)],
    });
  }
  return checked;
}
