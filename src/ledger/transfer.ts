/**
 * Ledger.transfer: a balanced set of postings posted atomically, each posting recording its account's posted
 * balance after it. The contract and its errors are in types.ts; the lock/replay steps in kernel.ts.
 */
import { randomUUID } from 'node:crypto';
import { assert } from '../errors';
import { claimOf, lockAccounts, mapOutcome, postingChanges, recordBalances, resultOf, runWrite, sumsByCurrency, type Plan, type WriteTarget } from './kernel';
import { insufficientFunds, unbalancedPostings } from './refusals';
import type { KeyClaim, LedgerStore, NewPosting, RecordedPosting } from './store';
import type { Ledger, LedgerTransaction, Posting } from './types';
import { accountIdOf, amountUnitsOf, validateDescription, validateKey, validateMetadata, validatePostingCount } from './validate';

/** A transfer's input once checked (before any lock), with the key it claims. */
interface TransferRequest {
  claim: KeyClaim;
  description: string;
  metadata: Record<string, unknown>;
  postings: Posting[];
}

interface TransferPlan extends Plan {
  postings: NewPosting[];
  recorded: RecordedPosting[];
}

/** Checks a transfer's input and fingerprints it; account ids compare in lower case. */
export function transferRequest(input: Parameters<Ledger['transfer']>[0]): TransferRequest {
  const idempotency_key = validateKey(input.idempotency_key);
  const description = validateDescription(input.description);
  const metadata = validateMetadata(input.metadata);
  validatePostingCount(input.postings);
  const postings = input.postings.map((posting, index) => {
    const amount_units = amountUnitsOf(`postings[${index}].amount_units`, posting.amount_units, 'non_zero');
    return { account_id: accountIdOf(posting.account_id), amount_units };
  });
  return { claim: claimOf('transfer', idempotency_key, { description, postings, metadata }), description, metadata, postings };
}

export async function transfer(store: LedgerStore, input: Parameters<Ledger['transfer']>[0], target: WriteTarget): Promise<LedgerTransaction> {
  const request = transferRequest(input);
  const { claim, description, metadata } = request;
  return runWrite(store, target, {
    claim,
    prepare: (tx) => prepareTransfer(tx, request),
    write: async (tx, plan) => {
      const transaction = { id: randomUUID(), description, metadata, postings: plan.recorded };
      const outcome = await tx.writeTransfer(claim, transaction, plan.changes);
      return mapOutcome(outcome, ({ id, created_at }) => ({ id, idempotency_key: claim.idempotency_key, description, postings: plan.postings, metadata, created_at }));
    },
    replay: async (tx, key) => {
      const found = await tx.readTransaction(resultOf(key, 'transaction_id'));
      assert(found, `ledger transaction of key ${key.idempotency_key} vanished`);
      return found;
    },
  });
}

/** Locks the accounts; refuses postings not summing to zero per currency, or a non-negative account going below zero. */
async function prepareTransfer(store: LedgerStore, request: TransferRequest): Promise<TransferPlan> {
  const locked = await lockAccounts(store, request.postings.map((posting) => posting.account_id));
  const postings = request.postings.map((posting) => ({ ...posting, currency: locked.get(posting.account_id)!.currency }));
  const unbalanced = [...sumsByCurrency(postings)].filter(([, sum_units]) => sum_units !== 0n);
  if (unbalanced.length > 0) {
    const sums = unbalanced.map(([currency, sum_units]) => `${currency} ${sum_units}`).join(', ');
    throw unbalancedPostings(`postings do not sum to zero: ${sums}`, 'must sum to zero per currency');
  }
  const changes = postingChanges(postings);
  for (const change of changes) {
    const account = locked.get(change.account_id)!;
    const available_units = account.posted_units - account.held_units;
    if (change.posted_units < 0n && !account.allows_negative && available_units + change.posted_units < 0n) {
      throw insufficientFunds(account, -change.posted_units);
    }
  }
  return { locked, changes, postings, recorded: recordBalances(postings, locked) };
}
