/**
 * Ledger accounts: open (once per owner, currency and kind), find, read. The contract and each method's errors are
 * in types.ts.
 */
import { assert } from '../errors';
import type { Currency } from '../money';
import { accountNotFound } from './refusals';
import { toAccount } from './rows';
import type { LedgerStore } from './store';
import type { Account, AccountAddress, AccountKind, AccountOwnerType, PlatformAccountKind } from './types';
import { isUuid, validateAddress } from './validate';

/** Kinds that stand for money outside the platform and may go below zero. */
export const NEGATIVE_ALLOWED_KINDS: readonly AccountKind[] = ['settlement'];
/** Owner id of the platform's own accounts. */
export const PLATFORM_OWNER_ID = 'platform';

export async function openAccount(store: LedgerStore, address: AccountAddress): Promise<Account> {
  validateAddress(address);
  const inserted = await store.insertAccount({ ...address, allows_negative: NEGATIVE_ALLOWED_KINDS.includes(address.kind) });
  if (inserted) return toAccount(inserted);
  // Accounts are never deleted: the one that conflicted is there.
  const existing = await store.findAccount(address);
  assert(existing, 'ledger account vanished after a conflicting insert');
  return toAccount(existing);
}

export async function findAccount(store: LedgerStore, address: AccountAddress): Promise<Account | undefined> {
  validateAddress(address);
  const row = await store.findAccount(address);
  return row ? toAccount(row) : undefined;
}

export async function getAccount(store: LedgerStore, account_id: string): Promise<Account> {
  if (!isUuid(account_id)) throw accountNotFound([String(account_id)]);
  const row = await store.readAccount(account_id);
  if (!row) throw accountNotFound([account_id]);
  return toAccount(row);
}

export async function accountsOf(store: LedgerStore, owner_type: AccountOwnerType, owner_id: string): Promise<Account[]> {
  return (await store.accountsOf(owner_type, owner_id)).map(toAccount);
}

/**
 * The platform's account of a kind and currency: found by one SELECT, opened only when missing (first use). Found
 * first because a transfer resolves its platform postings here, possibly while its caller holds row locks: a read
 * there is cheaper than an insert that conflicts.
 */
export async function platformAccount(store: LedgerStore, kind: PlatformAccountKind, currency: Currency): Promise<Account> {
  const address = platformAddress(kind, currency);
  return (await findAccount(store, address)) ?? openAccount(store, address);
}

/** The address of the platform's own account of a kind and currency. */
export function platformAddress(kind: PlatformAccountKind, currency: Currency): AccountAddress {
  return { owner_type: 'platform', owner_id: PLATFORM_OWNER_ID, currency, kind };
}
