/**
 * The pre-transfer flow's SQL: the `pre_transfers` table (migration 004), one copy of each query and lock.
 */
import type { Knex } from '../../db/knex';
import type { Currency } from '../../money';

/** A row of `pre_transfers`. `state` is the record's only lifecycle word. */
export interface PreTransferRow {
  id: string;
  partner_id: string;
  out_trade_no: string;
  /** Hex SHA-256 of the create request's fields: a repeat with other fields is a DUPLICATE_OUT_TRADE_NO. */
  request_fingerprint: string;
  receiver_id: string;
  receiver_user_id: string;
  receiver_name: string;
  sender_name: string;
  amount_units: string | bigint;
  currency: Currency;
  pending_transfer_id: string;
  state: 'pending' | 'confirmed' | 'expired';
  ttl_seconds: number;
  expires_at: Date;
  partner_transaction_id: string | null;
  fund_transfer_id: string | null;
  confirmed_at: Date | null;
  created_at: Date;
  /** Set once the PreTransferWorkflow is known to run; until then a failed start may release the pre-transfer. */
  workflow_started_at?: Date | null;
}

export type NewPreTransferRow = Pick<
  PreTransferRow,
  | 'id'
  | 'partner_id'
  | 'out_trade_no'
  | 'request_fingerprint'
  | 'receiver_id'
  | 'receiver_user_id'
  | 'receiver_name'
  | 'sender_name'
  | 'currency'
  | 'pending_transfer_id'
  | 'ttl_seconds'
> & { amount_units: bigint };

/** True when the pre-transfer is past its lifetime or voided. */
export function isExpired(row: Pick<PreTransferRow, 'state' | 'expires_at'>, now = new Date()): boolean {
  return row.state === 'expired' || (row.state === 'pending' && row.expires_at.getTime() <= now.getTime());
}

export function findPreTransfer(database: Knex, where: Partial<PreTransferRow>): Promise<PreTransferRow | undefined> {
  return database<PreTransferRow>('pre_transfers').where(where).first();
}

/** Inserts a pending pre-transfer expiring `ttl_seconds` from the database's clock. */
export async function insertPreTransfer(trx: Knex.Transaction, row: NewPreTransferRow): Promise<PreTransferRow> {
  const [inserted] = await trx<PreTransferRow>('pre_transfers')
    .insert({
      ...row,
      amount_units: row.amount_units.toString(),
      state: 'pending',
      expires_at: trx.raw(`now() + make_interval(secs => ?)`, [row.ttl_seconds]) as unknown as Date,
    })
    .returning('*');
  return inserted as PreTransferRow;
}

/** Locks the pre-transfer's row for the rest of `trx` (the post and void activities serialise on it). */
export function lockPreTransfer(trx: Knex.Transaction, id: string): Promise<PreTransferRow | undefined> {
  return trx<PreTransferRow>('pre_transfers').where({ id }).forUpdate().first();
}

export async function markConfirmed(
  trx: Knex.Transaction,
  id: string,
  fields: { partner_transaction_id: string; fund_transfer_id: string },
): Promise<void> {
  await trx('pre_transfers').where({ id }).update({ state: 'confirmed', ...fields, confirmed_at: trx.fn.now() });
}

export async function markExpired(trx: Knex.Transaction, id: string): Promise<void> {
  await trx('pre_transfers').where({ id }).update({ state: 'expired', expired_at: trx.fn.now() });
}

/** Removes a pre-transfer that never started its workflow (its hold was voided in the same transaction). */
export async function deletePreTransfer(trx: Knex.Transaction, id: string): Promise<void> {
  await trx('pre_transfers').where({ id, state: 'pending' }).whereNull('workflow_started_at').delete();
}

/** Records that the workflow runs. @returns false when the row is gone (a failed start released it meanwhile) */
export async function markWorkflowStarted(database: Knex, id: string): Promise<boolean> {
  const updated = await database('pre_transfers').where({ id }).update({ workflow_started_at: database.fn.now() });
  return updated === 1;
}
