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
import type { KeyObject } from 'node:crypto';
import { SIGN_TYPE_RSA2, signRsa2, toEcmaScriptJson, verifyRsa2 } from './rsa2';

/** Fields never covered by the signature. */
export const UNSIGNED_FIELDS = ['sign', 'sign_type'] as const;

/**
 * The canonical string of a request or response object (§6). Accepts plain JSON values, lossless-json
 * `LosslessNumber`s and bigints (both written as ECMAScript numbers).
 * @throws TypeError when `body` is not a plain object.
 */
export function canonicalJson(body: Record<string, unknown>): string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new TypeError('canonicalJson expects an object');
  const copy: Record<string, unknown> = { ...body };
  for (const field of UNSIGNED_FIELDS) delete copy[field];
  return JSON.stringify(toEcmaScriptJson(copy, { sortKeys: true }));
}

/** Signs an object: returns a copy with `sign_type` "RSA2" and `sign` added. */
export function signBody<T extends Record<string, unknown>>(body: T, privateKey: KeyObject | string): T & { sign_type: typeof SIGN_TYPE_RSA2; sign: string } {
  return { ...body, sign_type: SIGN_TYPE_RSA2, sign: signRsa2(canonicalJson(body), privateKey) };
}

/** Verifies the `sign` field of an object against its canonical string. */
export function verifyBody(body: Record<string, unknown>, publicKey: KeyObject | string): boolean {
  return verifyRsa2(canonicalJson(body), body.sign, publicKey);
}
