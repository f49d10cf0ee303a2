/**
 * The wallet flow's SQL: the parties of a transfer (`users`) and `blocked_money` (migration 006). One copy of each
 * query and lock. A blocked-money record's lifecycle word is `state` (blocked → cancelled).
 */
import type { Knex } from '../../db/knex';
import type { Currency } from '../../money';
import type { User } from '../../onboarding';

/** What a transfer needs of each party. */
export type TransferParty = Pick<User, 'id' | 'merchant_id' | 'status' | 'currency' | 'wallet_account_id'>;

/** Users ids are 1 to 18 decimal digits (the same ids `getUser` accepts). */
export const USER_ID = /^\d{1,18}$/;

/** The users of `ids` that exist, in one query (one round trip for both parties of a transfer). */
export async function findTransferParties(database: Knex, ids: string[]): Promise<TransferParty[]> {
  const valid = ids.filter((id) => USER_ID.test(id));
  if (valid.length === 0) return [];
  return (await database('users')
    .whereIn('id', valid)
    .select(database.raw('id::text as id'), 'merchant_id', 'status', 'currency', 'wallet_account_id')) as TransferParty[];
}

export interface BlockedMoneyRow {
  transaction_ref: string;
  merchant_id: string;
  pending_transfer_id: string;
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
