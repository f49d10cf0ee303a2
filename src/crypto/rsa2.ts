/**
 * The RSA2 primitive shared by Area A (canonical JSON, platform decisions §6) and Area C (canonical query string,
 * §7): RSASSA-PKCS1-v1_5 with SHA-256 over the UTF-8 bytes of a canonical string, keys of 2048 bits or more,
 * the signature as standard base64 with padding. Pure functions over keys and strings.
 */
import { createPrivateKey, createPublicKey, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { isLosslessNumber } from 'lossless-json';

/** The only `sign_type` accepted (and the default). */
export const SIGN_TYPE_RSA2 = 'RSA2';

/** Smallest RSA modulus accepted for RSA2, in bits. */
export const MIN_RSA_BITS = 2048;

const BASE64_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** True when `text` is non-empty standard base64 with correct padding. */
export function isBase64(text: string): boolean {
  return text.length > 0 && text.length % 4 === 0 && BASE64_PATTERN.test(text);
}

/**
 * A parsed JSON value as a signer working on plain `JSON.parse` output sees it: lossless numbers and bigints
 * become ECMAScript numbers (`10.50` → 10.5), at any depth. With `sortKeys`, object keys are sorted ascending
 * (UTF-16 code unit order) at every depth.
 */
export function toEcmaScriptJson(value: unknown, options: { sortKeys: boolean }): unknown {
  if (isLosslessNumber(value)) return Number(value.toString());
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map((item) => toEcmaScriptJson(item, options));
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const keys = options.sortKeys ? Object.keys(record).sort() : Object.keys(record);
    // No prototype: a "__proto__" key stays an own property instead of replacing the prototype (and vanishing
    // from JSON.stringify).
    const result: Record<string, unknown> = Object.create(null);
    for (const key of keys) result[key] = toEcmaScriptJson(record[key], options);
    return result;
  }
  return value;
}

function asPrivateKey(key: KeyObject | string): KeyObject {
  return typeof key === 'string' ? createPrivateKey(key) : key;
}

function asPublicKey(key: KeyObject | string): KeyObject {
  return typeof key === 'string' ? createPublicKey(key) : key;
}

/** RSA2 signature (base64) of a canonical string. @param privateKey PEM (PKCS#1 or PKCS#8) or KeyObject. */
export function signRsa2(canonical: string, privateKey: KeyObject | string): string {
  return cryptoSign('sha256', Buffer.from(canonical, 'utf8'), asPrivateKey(privateKey)).toString('base64');
}

/**
 * Verifies an RSA2 signature. Returns false (never throws) for a missing, non-base64 or wrong signature, and for
 * a key that is malformed, not RSA, or under 2048 bits.
 * @param publicKey SPKI/PKCS#1 PEM or KeyObject.
 */
export function verifyRsa2(canonical: string, signature: unknown, publicKey: KeyObject | string): boolean {
  if (typeof signature !== 'string' || !isBase64(signature)) return false;
  try {
    const key = asPublicKey(publicKey);
    if (key.asymmetricKeyType !== 'rsa' || (key.asymmetricKeyDetails?.modulusLength ?? 0) < MIN_RSA_BITS) return false;
    return cryptoVerify('sha256', Buffer.from(canonical, 'utf8'), key, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}
