/**
 * HMAC-SHA256 signatures as lowercase hex (interface Area B "Webhook authentication", platform decisions §4, §5):
 * the merchant webhook signature header and the upstream provider's `X-Upstream-Signature`. Pure.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Lowercase hex HMAC-SHA256 of `body` (the raw bytes or UTF-8 text as sent) under `secret`. */
export function hmacSha256Hex(secret: string, body: string | Uint8Array): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * Verifies a hex HMAC-SHA256 signature in constant time. Accepts upper- or lowercase hex; anything that is not
 * 64 hex digits is simply false (never throws).
 */
export function verifyHmacSha256Hex(secret: string, body: string | Uint8Array, signature: string | undefined | null): boolean {
  if (typeof signature !== 'string' || !/^[0-9a-fA-F]{64}$/.test(signature.trim())) return false;
  const expected = Buffer.from(hmacSha256Hex(secret, body), 'hex');
  const given = Buffer.from(signature.trim().toLowerCase(), 'hex');
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * The Standard Webhooks signature (`webhook-signature: v1,<base64>`): HMAC-SHA256 over `"{id}.{timestamp}.{body}"`
 * keyed with the same secret bytes as the contract's header, so a receiver can reject replays (the timestamp) and
 * altered ids (the id is signed). `timestamp_seconds` is Unix seconds (docs/webhooks.md).
 */
export function standardWebhookSignature(secret: string, id: string, timestamp_seconds: number, body: string): string {
  return `v1,${createHmac('sha256', secret).update(`${id}.${timestamp_seconds}.${body}`).digest('base64')}`;
}
