/**
 * Ledger.postPendingTransfer: the held amount moves from the debit to the credit account in one transaction and
 * the hold is released, exactly once. The contract and its
 * errors are in types.ts; the shared lock and refusals in resolve-pending.ts.
 */
import { randomUUID } from 'node:crypto';
import { postingChanges } from './kernel';
import { pendingExpired } from './refusals';
import { resolver, type OpenPending, type ResolvePlan } from './resolve-pending';

/** PENDING_TRANSFER_EXPIRED past its expiry; else the transaction debit → credit and the hold released. */
function planPost({ pending, locked }: OpenPending): ResolvePlan {
  if (pending.expired) throw pendingExpired(pending);
  const amount_units = BigInt(pending.amount_units);
  const transaction = {
    id: randomUUID(),
    description: pending.description,
    metadata: { ...pending.metadata, pending_transfer_id: pending.id },
    postings: [
      { account_id: pending.debit_account_id, amount_units: -amount_units, currency: pending.currency },
      { account_id: pending.credit_account_id, amount_units, currency: pending.currency },
    ],
  };
  const changes = postingChanges(transaction.postings).map((change) =>
    change.account_id === pending.debit_account_id ? { ...change, held_units: -amount_units } : change,
  );
  return { locked, changes, transaction };
}

export const postPendingTransfer = resolver({ operation: 'post_pending', state: 'posted', plan: planPost });
