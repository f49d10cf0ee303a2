/**
 * Public references of money movements (`TRF…`, `PAY…`, `BLK…`, `DEP…`): a prefix and 18 uppercase letters or
 * digits, new or derived from the request's own idempotency key.
 */
import { createHash } from 'node:crypto';
import { randomAlphanumeric } from '../crypto/secrets';

/** A new public reference: prefix + 18 uppercase letters/digits. */
export function newReference(prefix: string): string {
  return `${prefix}${randomAlphanumeric(18)}`;
}

/**
 * A public reference derived from a request's own idempotency key (`prefix` + 18 uppercase hex characters): a re-run
 * after a crash builds the same reference, hence the same ledger idempotency key, and moves nothing twice.
 */
export function referenceFromKey(prefix: string, ownKey: string): string {
  return `${prefix}${createHash('sha256').update(ownKey).digest('hex').slice(0, 18).toUpperCase()}`;
}
