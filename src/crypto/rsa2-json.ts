/**
 * RSA2 signatures over canonical JSON (Area A, platform decisions §6). Pure functions over keys and strings.
 *
 * Canonical string: drop the top-level `sign` and `sign_type`; sort object keys ascending (UTF-16 code unit
 * order, as `Array.prototype.sort` does) at every depth; serialize with ECMAScript `JSON.stringify` (no spaces,
 * `/` and non-ASCII not escaped). Numbers are written as ECMAScript writes them: a body carrying `10.50` is
 * canonicalized as `10.5`, exactly what a partner's `JSON.stringify({amount: 10.50})` produces.
 *
 * RSA2 = RSASSA-PKCS1-v1_5 with SHA-256 over the UTF-8 bytes of the canonical string, keys of 2048 bits or more;
 * `sign` is the standard base64 (with padding) of the signature.
 */
import { createPrivateKey, createPublicKey, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { isLosslessNumber } from 'lossless-json';

/** Fields never covered by the signature. */
export const UNSIGNED_FIELDS = ['sign', 'sign_type'] as const;

/** Smallest RSA modulus accepted for RSA2, in bits. */
export const MIN_RSA_BITS = 2048;

function sortDeep(value: unknown): unknown {
  if (isLosslessNumber(value)) return Number(value.toString());
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(sortDeep);
  if (value !== null && typeof value === 'object') {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) sorted[key] = sortDeep((value as Record<string, unknown>)[key]);
    return sorted;
  }
  return value;
}

/**
 * The canonical string of a request or response object (§6). Accepts plain JSON values, lossless-json
 * `LosslessNumber`s and bigints (both written as ECMAScript numbers).
 * @throws TypeError when `body` is not a plain object.
 */
export function canonicalJson(body: Record<string, unknown>): string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new TypeError('canonicalJson expects an object');
  const copy: Record<string, unknown> = { ...body };
  for (const field of UNSIGNED_FIELDS) delete copy[field];
  return JSON.stringify(sortDeep(copy));
}

const BASE64_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** True when `text` is non-empty standard base64 with correct padding. */
export function isBase64(text: string): boolean {
  return text.length > 0 && text.length % 4 === 0 && BASE64_PATTERN.test(text);
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
 * a key that is not RSA or is under 2048 bits.
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

/** Signs an object: returns a copy with `sign_type` "RSA2" and `sign` added. */
export function signBody<T extends Record<string, unknown>>(body: T, privateKey: KeyObject | string): T & { sign_type: 'RSA2'; sign: string } {
  return { ...body, sign_type: 'RSA2', sign: signRsa2(canonicalJson(body), privateKey) };
}

/** Verifies the `sign` field of an object against its canonical string. */
export function verifyBody(body: Record<string, unknown>, publicKey: KeyObject | string): boolean {
  return verifyRsa2(canonicalJson(body), body.sign, publicKey);
}
