/**
 * Ledger.voidPendingTransfer: the hold is released without moving money, exactly once (also after its expiry). The
 * contract and its errors are in types.ts; the shared lock and refusals in resolve-pending.ts.
 */
import { resolver, type OpenPending, type ResolvePlan } from './resolve-pending';

/** The debit account's hold released. */
function planVoid({ pending, locked }: OpenPending): ResolvePlan {
  return { locked, changes: [{ account_id: pending.debit_account_id, posted_units: 0n, held_units: -BigInt(pending.amount_units) }] };
}

export const voidPendingTransfer = resolver({ operation: 'void_pending', state: 'voided', plan: planVoid });
