/**
 * What posting and voiding a pending transfer share: the request (its key and the transfer's id), the lock of the
 * transfer and its two accounts, the refusal of one no longer pending, and the postcondition that it left `pending`
 * exactly once. post-pending.ts and void-pending.ts say what each changes.
 */
import { assert } from '../errors';
import { claimOf, mapOutcome, runWrite, type Plan, type WriteTarget } from './kernel';
import { loadPending } from './reads';
import { pendingNotFound, pendingResolved } from './refusals';
import { toPending, type Balances } from './rows';
import type { KeyClaim, LedgerStore, LockedPending, NewTransaction } from './store';
import type { PendingTransfer } from './types';
import { isUuid, pendingIdOf, validateKey } from './validate';

/** An open pending transfer under its lock, with its accounts as the lock read them. */
export interface OpenPending {
  pending: LockedPending;
  locked: Map<string, Balances>;
}

/** What resolving changes: balances, and for a post the transaction it writes. */
export interface ResolvePlan extends Plan {
  transaction?: NewTransaction;
}

export interface Resolution {
  operation: 'post_pending' | 'void_pending';
  state: 'posted' | 'voided';
  /** Refuses what only this resolution refuses (DomainError), else plans it. */
  plan(open: OpenPending): ResolvePlan;
}

/** Checks a post's or void's input and fingerprints it; the id compares in lower case. */
export function resolveRequest(
  operation: Resolution['operation'],
  input: { pending_transfer_id: string; idempotency_key: string },
): { claim: KeyClaim; pending_transfer_id: string } {
  const idempotency_key = validateKey(input.idempotency_key);
  const pending_transfer_id = pendingIdOf(input.pending_transfer_id);
  // `pendingId` is the name in the fingerprints already stored: renaming it would turn their replays into conflicts.
  return { claim: claimOf(operation, idempotency_key, { pendingId: pending_transfer_id }), pending_transfer_id };
}

/** The Ledger operation of one resolution (post or void): its input checked, then written through the kernel. */
export function resolver(
  resolution: Resolution,
): (store: LedgerStore, input: { pending_transfer_id: string; idempotency_key: string }, target: WriteTarget) => Promise<PendingTransfer> {
  return (store, input, target) => resolvePending(store, input, target, resolution);
}

async function resolvePending(
  store: LedgerStore,
  input: { pending_transfer_id: string; idempotency_key: string },
  target: WriteTarget,
  resolution: Resolution,
): Promise<PendingTransfer> {
  const { claim, pending_transfer_id } = resolveRequest(resolution.operation, input);
  return runWrite(store, target, {
    claim,
    prepare: async (tx) => resolution.plan(await lockOpen(tx, pending_transfer_id)),
    write: async (tx, plan) => {
      const { state } = resolution;
      const outcome = await tx.writeResolvePending(claim, { pending_transfer_id, state, transaction: plan.transaction }, plan.changes);
      assert(!outcome.result || outcome.result.state === state, `pending transfer ${pending_transfer_id} left pending as ${outcome.result?.state}, not ${state}`);
      return mapOutcome(outcome, toPending);
    },
    replay: (tx, key) => loadPending(tx, key),
  });
}

/** Locks the transfer and its accounts; PENDING_TRANSFER_NOT_FOUND, or ALREADY_POSTED / ALREADY_VOIDED once resolved. */
async function lockOpen(store: LedgerStore, id: string): Promise<OpenPending> {
  const found = isUuid(id) ? await store.lockPending(id) : undefined;
  if (!found) throw pendingNotFound(id);
  if (found.pending.state !== 'pending') throw pendingResolved(found.pending);
  assert(found.accounts.length === 2, `open pending transfer ${id} has ${found.accounts.length} of its 2 accounts locked`);
  return { pending: found.pending, locked: new Map(found.accounts.map((account) => [account.id, account])) };
}
