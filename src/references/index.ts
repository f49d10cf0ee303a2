/**
 * New public references of money movements (`TRF…`, `PAY…`, `BLK…`, `DEP…`): a prefix and 18 uppercase letters or
 * digits. A movement whose request has an idempotency key takes the reference derived from that key instead
 * (`referenceFromKey` of src/idempotency), so a re-run names it alike.
 */
import { randomAlphanumeric } from '../crypto/secrets';

/** A new public reference: prefix + 18 uppercase letters/digits. */
export function newReference(prefix: string): string {
  return `${prefix}${randomAlphanumeric(18)}`;
}
