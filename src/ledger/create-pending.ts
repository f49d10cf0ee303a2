/**
 * Ledger.createPendingTransfer: a hold of `amount_units` on the debit account (its held balance grows, its available
 * balance shrinks), to be posted or voided exactly once. The contract and its errors are in types.ts; the
 * lock/replay steps in kernel.ts.
 */
import { randomUUID } from 'node:crypto';
import { invalidFields } from '../errors';
import { openAccount, platformAddress } from './accounts';
import { claimOf, lockAccounts, mapOutcome, runWrite, type Plan, type WriteTarget } from './kernel';
import { loadPending } from './reads';
import { currencyMismatch, insufficientFunds } from './refusals';
import { toPending, type AccountRow } from './rows';
import type { KeyClaim, LedgerStore, NewPending } from './store';
import type { AccountAddress, Ledger, PendingTransfer, PlatformAccountName } from './types';
import { accountIdOf, amountUnitsOf, isUuid, PLATFORM_ACCOUNT_KINDS, validateAddress, validateDescription, validateKey, validateMetadata, validateTimeoutSeconds } from './validate';

type CreatePendingInput = Parameters<Ledger['createPendingTransfer']>[0];

/** A hold's input once checked (before any lock), with the key it claims. */
interface CreatePendingRequest extends Omit<NewPending, 'id' | 'currency'> {
  claim: KeyClaim;
  /** The caller's id for the hold (lower case), if it chose one. */
  id?: string;
}

interface CreatePendingPlan extends Plan {
  debit: AccountRow;
}

/** Checks a hold's fields other than its accounts (before any account is resolved or locked). */
function holdFieldsOf(input: CreatePendingInput) {
  const idempotency_key = validateKey(input.idempotency_key);
  const description = validateDescription(input.description);
  const metadata = validateMetadata(input.metadata);
  const amount_units = amountUnitsOf('amount_units', input.amount_units, 'positive');
  const timeout_seconds = validateTimeoutSeconds(input.timeout_seconds) ?? null;
  if (input.id !== undefined && !isUuid(input.id)) throw invalidFields({ id: ['must be a uuid'] });
  return { idempotency_key, description, metadata, amount_units, timeout_seconds };
}

/** Checks a hold's input and fingerprints it; account ids compare in lower case. */
export function createPendingRequest(input: CreatePendingInput): CreatePendingRequest {
  const { idempotency_key, description, metadata, amount_units, timeout_seconds } = holdFieldsOf(input);
  const debit_account_id = accountIdOf(input.debit_account_id);
  const credit_account_id = accountIdOf(input.credit_account_id);
  if (debit_account_id === credit_account_id) throw invalidFields({ credit_account_id: ['must differ from debit_account_id'] });
  // The fingerprint's names are those of the keys already stored: renaming one would turn their replays into
  // conflicts.
  const request = { debitId: debit_account_id, creditId: credit_account_id, amount: amount_units, timeout: timeout_seconds, description, metadata };
  return {
    claim: claimOf('create_pending', idempotency_key, request),
    debit_account_id,
    credit_account_id,
    amount_units,
    timeout_seconds,
    description,
    metadata,
    ...(input.id !== undefined ? { id: input.id.toLowerCase() } : {}),
  };
}

/**
 * The input with each account named by address resolved to its id through `store` (the caller's transaction): found,
 * or opened on first use. `lock` (inside the caller's transaction, both accounts named, both found): the statement
 * that finds them also locks them in id order, and their rows as locked are returned for the hold's checks, one
 * round trip fewer than finding them and locking them apart.
 * @throws DomainError VALIDATION_FAILED an account named both ways, or an address refused
 */
async function withAccountIds(store: LedgerStore, input: CreatePendingInput, lock: boolean): Promise<{ input: CreatePendingInput; locked?: Map<string, AccountRow> }> {
  const { debit_account, credit_account, ...rest } = input;
  const fields: Record<string, string[]> = {};
  if (debit_account && input.debit_account_id !== undefined) fields.debit_account = ['must be absent beside debit_account_id'];
  if (credit_account && input.credit_account_id !== undefined) fields.credit_account = ['must be absent beside credit_account_id'];
  if (credit_account && 'platform' in credit_account && !PLATFORM_ACCOUNT_KINDS.includes(credit_account.platform)) {
    fields['credit_account.platform'] = [`must be one of ${PLATFORM_ACCOUNT_KINDS.join(', ')}`];
  }
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
  const named = [debit_account, credit_account].map((name) => (name ? addressOf(name) : undefined));
  for (const address of named) if (address) validateAddress(address);
  const both = named[0] !== undefined && named[1] !== undefined;
  // Both names in one statement; an account not opened yet (a wallet's first use) opened after it.
  const found = await store.findAccounts(
    named.filter((address): address is AccountAddress => address !== undefined),
    lock && both,
  );
  const rowAt = (address: AccountAddress) => found.find((candidate) => sameAddress(candidate, address));
  const idAt = async (address: AccountAddress) => rowAt(address)?.id ?? (await openAccount(store, address)).id;
  const resolved = { ...rest };
  if (named[0]) resolved.debit_account_id = await idAt(named[0]);
  if (named[1]) resolved.credit_account_id = await idAt(named[1]);
  const locked = lock && both && found.length === 2 ? new Map(found.map((row) => [row.id, row])) : undefined;
  return { input: resolved, ...(locked ? { locked } : {}) };
}

/** The address an account name stands for. */
function addressOf(name: AccountAddress | PlatformAccountName): AccountAddress {
  return 'platform' in name ? platformAddress(name.platform, name.currency) : name;
}

function sameAddress(row: AccountAddress, address: AccountAddress): boolean {
  return row.owner_type === address.owner_type && row.owner_id === address.owner_id && row.currency === address.currency && row.kind === address.kind;
}

export async function createPendingTransfer(store: LedgerStore, input: CreatePendingInput, target: WriteTarget): Promise<PendingTransfer> {
  const named = input.debit_account !== undefined || input.credit_account !== undefined;
  // Checked before any lock: a request refused for its fields locks nothing.
  if (named) holdFieldsOf(input);
  const resolved = named ? await withAccountIds(store.within(target.trx), input, target.trx !== undefined) : { input, locked: undefined };
  const { claim, id, ...request } = createPendingRequest(resolved.input);
  return runWrite(store, target, {
    claim,
    prepare: (tx) => prepareHold(tx, request, resolved.locked),
    write: async (tx, plan) => {
      const pending = { ...request, id: id ?? randomUUID(), currency: plan.debit.currency };
      return mapOutcome(await tx.writeCreatePending(claim, pending, plan.changes), toPending);
    },
    replay: (tx, key) => loadPending(tx, key),
  });
}

/**
 * Locks both accounts (unless `prelocked` holds both, locked in this transaction by the statement that resolved
 * their names); refuses two currencies, or a non-negative debit account without the amount available.
 */
async function prepareHold(store: LedgerStore, request: Omit<CreatePendingRequest, 'claim'>, prelocked?: Map<string, AccountRow>): Promise<CreatePendingPlan> {
  const ids = [request.debit_account_id, request.credit_account_id];
  const locked = prelocked && ids.every((id) => prelocked.has(id)) ? prelocked : await lockAccounts(store, ids);
  const debit = locked.get(request.debit_account_id)!;
  const credit = locked.get(request.credit_account_id)!;
  if (debit.currency !== credit.currency) throw currencyMismatch(debit.currency, credit.currency);
  if (!debit.allows_negative && debit.posted_units - debit.held_units < request.amount_units) {
    throw insufficientFunds(debit, request.amount_units);
  }
  return { locked, debit, changes: [{ account_id: debit.id, posted_units: 0n, held_units: request.amount_units }] };
}
