/**
 * Area C request signatures (platform decisions §7, interface "Authentication / Area C"): the canonical
 * query string and RSA2 (RSASSA-PKCS1-v1_5 with SHA-256, base64) over it. Pure functions over keys and text.
 *
 * Canonical string:
 * - drop `sign`, `sign_type` and every parameter whose value is null, undefined or the empty string;
 * - sort the remaining keys ascending (UTF-16 code unit order, `Array.prototype.sort`);
 * - join `key=value` with `&` (no leading `?`, no trailing `&`); values are not percent-encoded;
 * - numbers and booleans as ECMAScript `String()` gives them (a JSON number `10.50` is the number 10.5 → "10.5");
 * - a value that is an array or object becomes `[` + `JSON.stringify(value)` + `]`.
 *
 * Numbers parsed losslessly (lossless-json `LosslessNumber`) are treated as the ECMAScript number they denote,
 * so a signer working on plain `JSON.parse` output and the verifier agree.
 *
 * The string is ambiguous when a value holds `&` followed by `=`: `{note: "a=1&b=2"}` and `{note: "a=1", b: "2"}`
 * have the same canonical string, hence the same signature. The platform refuses such a parameter before it
 * verifies (`ambiguousParameters`). What it accepts reads back one way only: split the string at every `&`; a part
 * holding `=` starts a parameter (its name ends at its first `=`, and no name holds `&` or `=`), a part without `=`
 * continues the value before it. So a value may hold `=` (the base64 padding of every encrypted field does) and `&`
 * not followed by `=` before the next `&` (`Tom & Jerry`).
 */
import type { KeyObject } from 'node:crypto';
import { SIGN_TYPE_RSA2, signRsa2, toEcmaScriptJson } from './rsa2';

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
