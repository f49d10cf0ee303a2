/**
 * The ledger's input checks: every malformed input is refused here with a DomainError (VALIDATION_FAILED, or the
 * ledger's INVALID_AMOUNT, UNBALANCED_POSTINGS, ACCOUNT_NOT_FOUND, PENDING_TRANSFER_NOT_FOUND) before any lock, so
 * no bad input ever reaches an assertion.
 */
import { invalidFields } from '../errors';
import { CURRENCIES, isCurrency, MAX_AMOUNT_UNITS } from '../money';
import { accountNotFound, invalidAmount, pendingNotFound, unbalancedPostings } from './refusals';
import type { AccountAddress, AccountKind, AccountOwnerType, PlatformAccountKind, PlatformPosting, Posting } from './types';

export const OWNER_TYPES: readonly AccountOwnerType[] = ['platform', 'partner', 'merchant', 'user'];
export const ACCOUNT_KINDS: readonly AccountKind[] = ['wallet', 'partner_float', 'fee_revenue', 'settlement', 'holds'];
export const PLATFORM_ACCOUNT_KINDS: readonly PlatformAccountKind[] = ['fee_revenue', 'settlement', 'holds'];
export const MAX_OWNER_ID_LENGTH = 200;
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;
export const MAX_DESCRIPTION_LENGTH = 500;
export const MAX_POSTINGS_PER_TRANSACTION = 50;

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID_PATTERN.test(value);
}

export function validateKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw invalidFields({ idempotency_key: [`must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`] });
  }
  return key;
}

export function validateDescription(description: unknown): string {
  if (typeof description !== 'string' || description.length > MAX_DESCRIPTION_LENGTH) {
    throw invalidFields({ description: [`must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters`] });
  }
  return description;
}

export function validateMetadata(metadata: unknown): Record<string, unknown> {
  if (metadata === undefined) return {};
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) {
    throw invalidFields({ metadata: ['must be an object'] });
  }
  return metadata as Record<string, unknown>;
}

/** Refuses an address with an unknown owner type, currency or kind, listing every failing field. */
export function validateAddress(input: { [K in keyof AccountAddress]: unknown }): void {
  const fields: Record<string, string[]> = {};
  if (!OWNER_TYPES.includes(input.owner_type as AccountOwnerType)) fields.owner_type = [`must be one of ${OWNER_TYPES.join(', ')}`];
  if (typeof input.owner_id !== 'string' || input.owner_id.length === 0 || input.owner_id.length > MAX_OWNER_ID_LENGTH) {
    fields.owner_id = [`must be 1 to ${MAX_OWNER_ID_LENGTH} characters`];
  }
  if (!isCurrency(input.currency)) fields.currency = [`must be one of ${CURRENCIES.join(', ')}`];
  if (!ACCOUNT_KINDS.includes(input.kind as AccountKind)) fields.kind = [`must be one of ${ACCOUNT_KINDS.join(', ')}`];
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
}

/** Whether a posting names a platform account (its `platform` field set, checked by `platformPostingOf`) rather than an account id. */
export function namesPlatformAccount(posting: Posting | PlatformPosting): posting is PlatformPosting {
  return (posting as { platform?: unknown }).platform !== undefined;
}

/**
 * The platform account a transfer's posting `postings[index]` names: refuses (VALIDATION_FAILED, listing each
 * failing field) a kind not of the platform's, an unknown currency, or an account_id beside the name.
 */
export function platformPostingOf(index: number, posting: { [K in keyof PlatformPosting]?: unknown }): Pick<PlatformPosting, 'platform' | 'currency'> {
  const fields: Record<string, string[]> = {};
  if (!PLATFORM_ACCOUNT_KINDS.includes(posting.platform as PlatformAccountKind)) {
    fields[`postings[${index}].platform`] = [`must be one of ${PLATFORM_ACCOUNT_KINDS.join(', ')}`];
  }
  if (!isCurrency(posting.currency)) fields[`postings[${index}].currency`] = [`must be one of ${CURRENCIES.join(', ')}`];
  if (posting.account_id !== undefined) fields[`postings[${index}].account_id`] = ['must be absent when the posting names a platform account'];
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
  return { platform: posting.platform as PlatformAccountKind, currency: posting.currency as PlatformPosting['currency'] };
}

/** Minor units of one amount: a bigint, `positive` (> 0) or `non_zero` (either sign), at most 10^15 either way. */
export function amountUnitsOf(field: string, value: unknown, sign: 'positive' | 'non_zero'): bigint {
  if (typeof value !== 'bigint') throw invalidAmount(field, 'must be an integer of minor units');
  if (sign === 'positive' && value <= 0n) throw invalidAmount(field, 'must be greater than 0');
  if (value === 0n) throw invalidAmount(field, 'must not be 0');
  if (value > MAX_AMOUNT_UNITS || -value > MAX_AMOUNT_UNITS) throw invalidAmount(field, 'is too large');
  return value;
}

/** The posting count a transaction may have; UNBALANCED_POSTINGS otherwise (too few postings cannot balance). */
export function validatePostingCount(postings: unknown): void {
  if (!Array.isArray(postings) || postings.length < 2 || postings.length > MAX_POSTINGS_PER_TRANSACTION) {
    throw unbalancedPostings(
      `a transaction needs 2 to ${MAX_POSTINGS_PER_TRANSACTION} postings`,
      `must have 2 to ${MAX_POSTINGS_PER_TRANSACTION} entries`,
    );
  }
}

/** A seconds count: a positive whole number, or undefined (no timeout). */
export function validateTimeoutSeconds(timeout_seconds: unknown): number | undefined {
  if (timeout_seconds === undefined) return undefined;
  if (typeof timeout_seconds !== 'number' || !Number.isSafeInteger(timeout_seconds) || timeout_seconds <= 0) {
    throw invalidFields({ timeout_seconds: ['must be a positive whole number of seconds'] });
  }
  return timeout_seconds;
}

/** An account id as the ledger compares it (lower case); ACCOUNT_NOT_FOUND when it is not a string. */
export function accountIdOf(value: unknown): string {
  if (typeof value !== 'string') throw accountNotFound([String(value)]);
  return value.toLowerCase();
}

/**
 * A pending transfer id as the ledger compares it (lower case); PENDING_TRANSFER_NOT_FOUND when it is not a string.
 * (One that is not a uuid is refused where the transfer is looked up, so that a replay of its key answers first.)
 */
export function pendingIdOf(value: unknown): string {
  if (typeof value !== 'string') throw pendingNotFound(String(value));
  return value.toLowerCase();
}
