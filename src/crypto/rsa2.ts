/**
 * RSA2 signatures, one primitive over the two canonical strings of the interface: Area A signs canonical JSON
 * (platform decisions §6), Area C a canonical query string (§7). RSA2 = RSASSA-PKCS1-v1_5 with SHA-256 over the
 * UTF-8 bytes of the canonical string, keys of 2048 bits or more, the signature as standard base64 with padding.
 * Pure functions over keys and strings: every area signs and verifies through this module the same way (Area B's
 * HMAC signatures are in ./hmac.ts).
 *
 * Canonical JSON (Area A): drop the top-level `sign` and `sign_type`; sort object keys ascending (UTF-16 code unit
 * order, as `Array.prototype.sort` does) at every depth; serialize with ECMAScript `JSON.stringify` (no spaces,
 * `/` and non-ASCII not escaped). Numbers are written as ECMAScript writes them: a body carrying `10.50` is
 * canonicalized as `10.5`, exactly what a partner's `JSON.stringify({amount: 10.50})` produces.
 *
 * Canonical query string (Area C):
 * - drop `sign`, `sign_type` and every parameter whose value is null, undefined or the empty string;
 * - sort the remaining keys ascending (UTF-16 code unit order, `Array.prototype.sort`);
 * - join `key=value` with `&` (no leading `?`, no trailing `&`); values are not percent-encoded;
 * - numbers and booleans as ECMAScript `String()` gives them (a JSON number `10.50` is the number 10.5 → "10.5");
 * - a value that is an array or object becomes `[` + `JSON.stringify(value)` + `]`.
 *
 * In both, numbers parsed losslessly (lossless-json `LosslessNumber`) are treated as the ECMAScript number they
 * denote, so a signer working on plain `JSON.parse` output and the verifier agree.
 *
 * The query string is ambiguous when a value holds `&` followed by `=`: `{note: "a=1&b=2"}` and `{note: "a=1", b:
 * "2"}` have the same canonical string, hence the same signature. The platform refuses such a parameter before it
 * verifies (`ambiguousParameters`). What it accepts reads back one way only: split the string at every `&`; a part
 * holding `=` starts a parameter (its name ends at its first `=`, and no name holds `&` or `=`), a part without `=`
 * continues the value before it. So a value may hold `=` (the base64 padding of every encrypted field does) and `&`
 * not followed by `=` before the next `&` (`Tom & Jerry`).
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

// ---- Area A: canonical JSON ----

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

// ---- Area C: canonical query string ----

/** Parameters never part of the canonical string. */
export const UNSIGNED_PARAMETERS: ReadonlySet<string> = new Set(['sign', 'sign_type']);

/** One value as it appears after `key=` in the canonical string. */
export function canonicalValue(value: unknown): string {
  const plain = toEcmaScriptJson(value, { sortKeys: false });
  if (plain !== null && typeof plain === 'object') return `[${JSON.stringify(plain)}]`;
  return String(plain);
}

/**
 * The §7 canonical string of a request's parameters (a parsed JSON object body).
 * Example: `{service:"transfer", amount:10.5, sign:"…", memo:""}` → `amount=10.5&service=transfer`.
 */
export function canonicalQueryString(parameters: Record<string, unknown>): string {
  return Object.keys(parameters)
    .filter((key) => {
      if (UNSIGNED_PARAMETERS.has(key)) return false;
      const value = parameters[key];
      return value !== null && value !== undefined && value !== '';
    })
    .sort()
    .map((key) => `${key}=${canonicalValue(parameters[key])}`)
    .join('&');
}

/** True when `text` holds an `&` followed by `=` before the next `&` (text that reads as one more parameter). */
export function holdsParameterSeparator(text: string): boolean {
  return text.split('&').slice(1).some((part) => part.includes('='));
}

/**
 * The parameters that would make the canonical string of `parameters` ambiguous, in canonical (sorted) order: a
 * name holding `&` or `=`, or a value whose canonical text (an array or object value included) holds `&` followed
 * by `=` before the next `&`. Empty when the string reads back as exactly these parameters.
 * Example: `{note: "a=1&b=2", service: "x"}` → `["note"]`; `{note: "Tom & Jerry"}` → `[]`.
 */
export function ambiguousParameters(parameters: Record<string, unknown>): string[] {
  return Object.keys(parameters)
    .filter((key) => {
      if (UNSIGNED_PARAMETERS.has(key)) return false;
      const value = parameters[key];
      if (value === null || value === undefined || value === '') return false;
      return key.includes('&') || key.includes('=') || holdsParameterSeparator(canonicalValue(value));
    })
    .sort();
}

/** Returns a copy of `parameters` with `sign_type` = RSA2 and `sign` over its canonical string. */
export function signRequestParameters<T extends Record<string, unknown>>(
  parameters: T,
  privateKey: string | KeyObject,
): T & { sign_type: string; sign: string } {
  const signed = { ...parameters, sign_type: SIGN_TYPE_RSA2 };
  return { ...signed, sign: signRsa2(canonicalQueryString(signed), privateKey) };
}
