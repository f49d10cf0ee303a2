/**
 * What a timeline may copy out of Temporal payloads: decoded with the default payload converter, then made JSON-safe,
 * bounded, and with every secret replaced by `[redacted]`, wherever it sits. A field is a secret by its name
 * (password, otp, sealed, token, secret, card, security code, cvv/cvc, in any case or spelling: `sealed_password`,
 * `cardNumber`, `pre_order_token`) or by its value (a sealed ciphertext, `v1.…` / `v2.<key id>.…`, under any name).
 * Redaction errs on the side of hiding: `max_password_attempts` is hidden too.
 */
import type { Payload } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';

export const REDACTED = '[redacted]';

/** Name fragments (lower case, without separators) that mark a field as secret. */
const SECRET_NAME_PARTS = ['password', 'passwd', 'otp', 'sealed', 'token', 'secret', 'card', 'securitycode', 'cvv', 'cvc'];

/** A sealed secret (src/crypto/data-keys.ts): `v2.<key id>.<iv>.<ciphertext>.<tag>` or `v1.<iv>.<ciphertext>.<tag>`. */
const SEALED_VALUE = /^v1(\.[A-Za-z0-9_-]+){3}$|^v2(\.[A-Za-z0-9_-]+){4}$/;

/** Bounds of what one payload contributes: nesting, items per array or object, characters per string. */
const MAX_DEPTH = 8;
const MAX_ITEMS = 100;
const MAX_STRING = 500;

/** Whether a field of this name holds a secret. */
export function isSecretName(name: string): boolean {
  const normalized = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  return SECRET_NAME_PARTS.some((part) => normalized.includes(part));
}

/** Whether a string is a sealed secret. */
export function isSealedValue(value: string): boolean {
  return SEALED_VALUE.test(value);
}

/** Whether a field of this name holds an amount, which the timeline writes as a decimal string of minor units. */
function isAmountName(name: string): boolean {
  return /amount|units/i.test(name);
}

/**
 * A JSON-safe copy of `value` with secrets redacted (see the module comment), numbers under amount names as decimal
 * strings, and the bounds applied (deeper levels, extra items and long strings cut, marked with `…`).
 */
export function redact(value: unknown, name = '', depth = 0): unknown {
  if (name && isSecretName(name)) return REDACTED;
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') {
    if (isSealedValue(value)) return REDACTED;
    return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value;
  }
  if (typeof value === 'number') return Number.isFinite(value) ? (isAmountName(name) ? String(value) : value) : null;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'boolean') return value;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) return { binary_bytes: value.byteLength };
  if (depth >= MAX_DEPTH) return '…';
  if (Array.isArray(value)) {
    const items = value.slice(0, MAX_ITEMS).map((item) => redact(item, name, depth + 1));
    return value.length > MAX_ITEMS ? [...items, '…'] : items;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    const copy: Record<string, unknown> = {};
    for (const [key, item] of entries.slice(0, MAX_ITEMS)) copy[key] = redact(item, key, depth + 1);
    if (entries.length > MAX_ITEMS) copy['…'] = `${entries.length - MAX_ITEMS} more`;
    return copy;
  }
  return null;
}

/**
 * One payload decoded with the default converter (JSON, null, binary) and redacted; a payload it cannot decode (an
 * encrypted or unknown encoding) is described by its encoding only, never copied.
 */
export function decodePayload(payload: Payload | null | undefined, name = ''): unknown {
  if (!payload) return null;
  try {
    return redact(defaultPayloadConverter.fromPayload(payload), name);
  } catch {
    const encoding = payload.metadata?.encoding;
    return { undecodable: encoding ? Buffer.from(encoding).toString('utf8').slice(0, 40) : 'unknown' };
  }
}

/** Several payloads (a workflow's or an Update's arguments), decoded and redacted; a single one as itself. */
export function decodePayloads(payloads: Array<Payload | null | undefined> | null | undefined): unknown {
  const decoded = (payloads ?? []).map((payload) => decodePayload(payload));
  if (decoded.length === 0) return null;
  return decoded.length === 1 ? decoded[0] : decoded;
}
