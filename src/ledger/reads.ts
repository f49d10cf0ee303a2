/**
 * The ledger's reads besides accounts: a pending transfer, an account's entries (each with the balance after it),
 * and the result a replayed key holds. The contract and each method's errors are in types.ts.
 */
import { assert, invalidFields } from '../errors';
import { getAccount } from './accounts';
import { resultOf } from './kernel';
import { pendingNotFound } from './refusals';
import { toPending, type KeyRow } from './rows';
import type { LedgerStore } from './store';
import type { LedgerEntry, PendingTransfer } from './types';
import { isUuid, pendingIdOf } from './validate';

export const MAX_ENTRIES_LIMIT = 500;
export const DEFAULT_ENTRIES_LIMIT = 100;

/** The pending transfer a key holds: the first result of its request. */
export async function loadPending(store: LedgerStore, key: KeyRow): Promise<PendingTransfer> {
  const row = await store.readPending(resultOf(key, 'pending_transfer_id'));
  assert(row, `pending transfer of key ${key.idempotency_key} vanished`);
  return toPending(row);
}

export async function getPendingTransfer(store: LedgerStore, pending_transfer_id: string): Promise<PendingTransfer> {
  const id = pendingIdOf(pending_transfer_id);
  const row = isUuid(id) ? await store.readPending(id) : undefined;
  if (!row) throw pendingNotFound(id);
  return toPending(row);
}

export async function entriesOf(
  store: LedgerStore,
  account_id: string,
  options: { limit?: number; before_transaction_id?: string } = {},
): Promise<LedgerEntry[]> {
  const limit = options.limit ?? DEFAULT_ENTRIES_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1) throw invalidFields({ limit: [`must be 1 to ${MAX_ENTRIES_LIMIT}`] });
  const account = await getAccount(store, account_id);
  let before_posting_id: bigint | undefined;
  if (options.before_transaction_id) {
    const before = options.before_transaction_id;
    before_posting_id = isUuid(before) ? await store.firstPostingOf(account.id, before) : undefined;
    if (before_posting_id === undefined) throw invalidFields({ before_transaction_id: ['must be a transaction of this account'] });
  }
  return store.entries(account.id, { before_posting_id, limit: Math.min(limit, MAX_ENTRIES_LIMIT) });
}
