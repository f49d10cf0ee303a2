/**
 * The interface's signing algorithms, written here from the documents only (payment-services-interface.md
 * "Authentication", platform decisions §5, §6 and §7) and independent of the platform's own src/crypto: the contract
 * suite checks the platform against the spec, not against itself. Node's crypto only.
 *
 *   Area A  RSA2 over canonical JSON: drop top-level `sign` and `sign_type`, sort keys ascending at every depth,
 *           ECMAScript JSON.stringify; RSASSA-PKCS1-v1_5 SHA-256, base64 (§6).
 *   Area B  webhook signature: lowercase hex HMAC-SHA256 of the raw body under the merchant's hmac_secret (§5).
 *   Area C  RSA2 over the canonical query string: drop `sign`, `sign_type` and null / undefined / "" values, sort keys
 *           ascending, `key=value` joined by `&`, values not percent-encoded, numbers and booleans as String(), an
 *           array or object as `[` + JSON.stringify + `]` (§7).
 */
import { createHmac, createPrivateKey, createPublicKey, sign, timingSafeEqual, verify } from 'node:crypto';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function sortedDeep(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortedDeep);
  if (value !== null && typeof value === 'object') {
    const sorted: { [key: string]: Json } = {};
    for (const key of Object.keys(value).sort()) sorted[key] = sortedDeep(value[key]!);
    return sorted;
  }
  return value;
}

/** Area A's string to sign (§6). */
export function areaACanonical(parameters: Record<string, unknown>): string {
  const kept: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(parameters)) if (key !== 'sign' && key !== 'sign_type') kept[key] = value as Json;
  return JSON.stringify(sortedDeep(kept));
}

/** Area C's string to sign (§7). */
export function areaCCanonical(parameters: Record<string, unknown>): string {
  return Object.keys(parameters)
    .filter((key) => key !== 'sign' && key !== 'sign_type')
    .filter((key) => parameters[key] !== null && parameters[key] !== undefined && parameters[key] !== '')
    .sort()
    .map((key) => {
      const value = parameters[key];
      return `${key}=${value !== null && typeof value === 'object' ? `[${JSON.stringify(value)}]` : String(value)}`;
    })
    .join('&');
}

/** RSASSA-PKCS1-v1_5 with SHA-256 of `text`, base64. */
export function rsa2Sign(text: string, privateKeyPem: string): string {
  return sign('sha256', Buffer.from(text, 'utf8'), createPrivateKey(privateKeyPem)).toString('base64');
}

export function rsa2Verify(text: string, signature: unknown, publicKeyPem: string): boolean {
  if (typeof signature !== 'string' || signature === '') return false;
  return verify('sha256', Buffer.from(text, 'utf8'), createPublicKey(publicKeyPem), Buffer.from(signature, 'base64'));
}

/** `body` with `sign_type` RSA2 and its `sign` (Area A). */
export function signAreaA(body: Record<string, unknown>, privateKeyPem: string): Record<string, unknown> {
  return { ...body, sign_type: 'RSA2', sign: rsa2Sign(areaACanonical(body), privateKeyPem) };
}

/** `body` with `sign_type` RSA2 and its `sign` (Area C). */
export function signAreaC(body: Record<string, unknown>, privateKeyPem: string): Record<string, unknown> {
  return { ...body, sign_type: 'RSA2', sign: rsa2Sign(areaCCanonical(body), privateKeyPem) };
}

/** True when `signature` is the lowercase hex HMAC-SHA256 of `rawBody` under `secret` (compared in constant time). */
export function webhookSignatureValid(secret: string, rawBody: string, signature: unknown): boolean {
  if (typeof signature !== 'string' || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(rawBody, 'utf8').digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}
