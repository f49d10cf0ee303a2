/**
 * The wallet flow's SQL: `blocked_money` (migration 006; the parties of a transfer are read by src/onboarding/users.ts).
 * One copy of each query and lock. A blocked-money record's lifecycle word is `state` (blocked → cancelled).
 */
import type { Knex } from '../../db/knex';
import type { Currency } from '../../money';

export interface BlockedMoneyRow {
  transaction_ref: string;
  merchant_id: string;
  user_id: string | bigint;
  pending_transfer_id: string;
  amount_units: string | bigint;
  currency: Currency;
  state: 'blocked' | 'cancelled';
}

export async function insertBlockedMoney(
  trx: Knex.Transaction,
  row: { transaction_ref: string; merchant_id: string; user_id: string; pending_transfer_id: string; amount_units: bigint; currency: Currency; reference: string },
): Promise<void> {
  await trx('blocked_money').insert(row);
}

/** Locks the blocked money's row for the rest of `trx` (a cancel voids the hold exactly once). */
export function lockBlockedMoney(trx: Knex.Transaction, transaction_ref: string): Promise<BlockedMoneyRow | undefined> {
  return trx<BlockedMoneyRow>('blocked_money').where({ transaction_ref }).forUpdate().first();
}

export async function markBlockedMoneyCancelled(trx: Knex.Transaction, transaction_ref: string): Promise<void> {
  await trx('blocked_money').where({ transaction_ref }).update({ state: 'cancelled', cancelled_at: trx.fn.now() });
}
