/**
 * Ledger.postPendingTransfer: the held amount moves from the debit to the credit account in one transaction (each
 * posting recording its account's balance after it) and the hold is released, exactly once. The contract and its
 * errors are in types.ts; the shared lock and refusals in resolve-pending.ts.
 */
import { randomUUID } from 'node:crypto';
import { postingChanges, recordBalances } from './kernel';
import { pendingExpired } from './refusals';
import { resolver, type OpenPending, type ResolvePlan } from './resolve-pending';

/** PENDING_TRANSFER_EXPIRED past its expiry; else the transaction debit → credit and the hold released. */
function planPost({ pending, locked }: OpenPending): ResolvePlan {
  if (pending.expired) throw pendingExpired(pending);
  const amount_units = BigInt(pending.amount_units);
  const postings = [
    { account_id: pending.debit_account_id, amount_units: -amount_units, currency: pending.currency },
    { account_id: pending.credit_account_id, amount_units, currency: pending.currency },
  ];
  const recorded = recordBalances(postings, locked);
  const changes = postingChanges(postings).map((change) =>
    change.account_id === pending.debit_account_id ? { ...change, held_units: -amount_units } : change,
  );
  const metadata = { ...pending.metadata, pending_transfer_id: pending.id };
  return { locked, changes, recorded, transaction: { id: randomUUID(), description: pending.description, metadata, postings: recorded } };
}

export const postPendingTransfer = resolver({ operation: 'post_pending', state: 'posted', plan: planPost });
