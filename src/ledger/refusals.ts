/**
 * The ledger's refusals: each a DomainError of one reason of `LEDGER_REASONS` (reasons.ts), with a short internal
 * detail and, where a field is at fault, its field problem.
 */
import { reasonError, type DomainError } from '../errors';
import type { Currency } from '../money';
import { LEDGER_REASONS, type LedgerReason } from './reasons';
import type { Balances, PendingRow } from './rows';

export function invalidAmount(field: string, problem: string): DomainError<LedgerReason> {
  return reasonError(LEDGER_REASONS, 'INVALID_AMOUNT', `${field} ${problem}`, { [field]: [problem] });
}

export function unbalancedPostings(detail: string, problem: string): DomainError<LedgerReason> {
  return reasonError(LEDGER_REASONS, 'UNBALANCED_POSTINGS', detail, { postings: [problem] });
}

export function accountNotFound(ids: readonly string[]): DomainError<LedgerReason> {
  return reasonError(LEDGER_REASONS, 'ACCOUNT_NOT_FOUND', `account not found: ${ids.join(', ')}`, {
    account_id: ids.map((id) => `no account ${id}`),
  });
}

export function currencyMismatch(debit: Currency, credit: Currency): DomainError<LedgerReason> {
  return reasonError(LEDGER_REASONS, 'CURRENCY_MISMATCH', `debit account is ${debit}, credit account is ${credit}`, {
    credit_account_id: [`must be a ${debit} account`],
  });
}

export function insufficientFunds(account: Balances & { currency: Currency }, needed_units: bigint): DomainError<LedgerReason> {
  const available_units = BigInt(account.posted_units) - BigInt(account.held_units);
  return reasonError(
    LEDGER_REASONS,
    'INSUFFICIENT_FUNDS',
    `account ${account.id} has ${available_units} ${account.currency} units available, ${needed_units} needed`,
  );
}

export function idempotencyConflict(idempotency_key: string): DomainError<LedgerReason> {
  return reasonError(LEDGER_REASONS, 'IDEMPOTENCY_CONFLICT', `idempotency key ${idempotency_key} was already used for a different request`, {
    idempotency_key: ['was already used for a different request'],
  });
}

export function pendingNotFound(id: string): DomainError<LedgerReason> {
  return reasonError(LEDGER_REASONS, 'PENDING_TRANSFER_NOT_FOUND', `pending transfer not found: ${id}`);
}

/** The refusal of a pending transfer that is no longer pending. */
export function pendingResolved(row: Pick<PendingRow, 'id' | 'state'>): DomainError<LedgerReason> {
  return row.state === 'posted'
    ? reasonError(LEDGER_REASONS, 'PENDING_TRANSFER_ALREADY_POSTED', `pending transfer ${row.id} was already posted`)
    : reasonError(LEDGER_REASONS, 'PENDING_TRANSFER_ALREADY_VOIDED', `pending transfer ${row.id} was already voided`);
}

export function pendingExpired(row: Pick<PendingRow, 'id' | 'expires_at'>): DomainError<LedgerReason> {
  return reasonError(LEDGER_REASONS, 'PENDING_TRANSFER_EXPIRED', `pending transfer ${row.id} expired at ${row.expires_at?.toISOString()}`);
}
