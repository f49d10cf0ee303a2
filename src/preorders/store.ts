/**
 * The `preorders` table (migration 006): the one copy of each of its queries and its lock. Every path that reads a
 * preorder (pay_by_token, deposits, the hosted page) reads it here, as one row type.
 */
import type { Knex } from '../db/knex';
import type { Currency } from '../money';

/** A preorder as recorded. Its lifecycle word is `status` (pending → paid). */
export interface Preorder {
  token: string;
  merchant_id: string;
  out_trade_no: string;
  seller_code: string;
  description: string;
  /** Minor units of `currency`. */
  amount_units: bigint;
  currency: Currency;
  /** Percent as decimal text ("1.5"), null without a commission. */
  commission_rate: string | null;
  redirect_url: string | null;
  call_back_url: string | null;
  status: 'pending' | 'paid';
  payment_reference: string | null;
}

type PreorderRow = Omit<Preorder, 'amount_units'> & { amount_units: string | bigint };

function toPreorder(row: PreorderRow): Preorder {
  return { ...row, amount_units: BigInt(row.amount_units) };
}

/** The preorder with this token (any merchant; callers check tenancy), else undefined (unknown or malformed). */
export async function findPreorder(db: Knex | Knex.Transaction, token: string): Promise<Preorder | undefined> {
  if (typeof token !== 'string' || token.length === 0 || token.length > 128) return undefined;
  const row = (await db('preorders').where({ token }).first()) as PreorderRow | undefined;
  return row ? toPreorder(row) : undefined;
}

/** Locks the preorder's row for the rest of `trx` (it is paid exactly once); the token must exist. */
export async function lockPreorder(trx: Knex.Transaction, token: string): Promise<Preorder> {
  return toPreorder((await trx('preorders').where({ token }).forUpdate().first()) as PreorderRow);
}

/** Records a pending preorder. @returns false when the merchant already has one with this out_trade_no */
export async function insertPreorder(
  database: Knex,
  row: Pick<Preorder, 'token' | 'merchant_id' | 'out_trade_no' | 'seller_code' | 'description' | 'amount_units' | 'currency' | 'commission_rate' | 'redirect_url' | 'call_back_url'>,
): Promise<boolean> {
  const inserted = await database('preorders').insert(row).onConflict(['merchant_id', 'out_trade_no']).ignore().returning('token');
  return inserted.length > 0;
}

/** Marks a locked pending preorder paid by the ledger transaction `paid_transaction_id`. */
export async function markPreorderPaid(
  trx: Knex.Transaction,
  token: string,
  payment: { paid_transaction_id: string; paid_by_user_id: string | null; payment_reference: string },
): Promise<void> {
  await trx('preorders').where({ token }).update({ status: 'paid', ...payment, paid_at: trx.fn.now() });
}
