/**
 * The pre-transfer flow's SQL: the `pre_transfers` table (migration 004), one copy of each query and lock.
 */
import type { Knex } from '../../db/knex';
import { recordEvent, type EventType } from '../../events';
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
  /** The merchant that created the receiving user (null: none), read with the row where its events are written. */
  receiver_merchant_id?: string | null;
}

/** The receiving user's merchant, as a column of a read of `pre_transfers` aliased `alias`. */
function receiverMerchant(trx: Knex | Knex.Transaction, alias: string): Knex.Raw {
  return trx.raw(`(SELECT u.merchant_id FROM users u WHERE u.id = ${alias}.receiver_user_id::bigint) AS receiver_merchant_id`);
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

/**
 * Inserts a pending pre-transfer expiring `ttl_seconds` from the database's clock, with its `pre_transfer.created`
 * events (`recordPreTransferEvents`): the last writes of the create's transaction.
 */
export async function insertPreTransfer(trx: Knex.Transaction, row: NewPreTransferRow): Promise<PreTransferRow> {
  const [inserted] = await trx<PreTransferRow>('pre_transfers')
    .insert({
      ...row,
      amount_units: row.amount_units.toString(),
      state: 'pending',
      expires_at: trx.raw(`now() + make_interval(secs => ?)`, [row.ttl_seconds]) as unknown as Date,
    })
    .returning(['*', receiverMerchant(trx, 'pre_transfers')]);
  await recordPreTransferEvents(trx, inserted as PreTransferRow, 'pre_transfer.created');
  return inserted as PreTransferRow;
}

/** The pre-transfer events, in the order of the pre-transfer's life (docs/events.md "Area A"). */
export type PreTransferEventType = Extract<EventType, `pre_transfer.${string}`>;

/**
 * Records a pre-transfer's event (subject: its id) for its partner and, when the receiver is a user a merchant
 * created, for that merchant too, so the merchant's stream shows money arriving for its users from Area A. The
 * merchant's copy leaves out what only the partner knows (its out_trade_no and partner_transaction_id). Called
 * inside the transaction that commits the change, as its last writes (numbered after the commit, docs/events.md:
 * partner's first, then merchant's). The merchant is the row's `receiver_merchant_id` when the read that
 * locked it carried it, else looked up.
 */
export async function recordPreTransferEvents(
  trx: Knex.Transaction,
  row: PreTransferRow,
  type: PreTransferEventType,
  change: { state?: PreTransferRow['state'] | 'released'; fund_transfer_id?: string | null; ledger_transaction_id?: string | null } = {},
): Promise<void> {
  const shared = {
    pre_transfer_id: row.id,
    state: change.state ?? row.state,
    receiver_user_id: String(row.receiver_user_id),
    amount_units: String(row.amount_units),
    currency: row.currency,
    expires_at: new Date(row.expires_at).toISOString(),
    ...(change.fund_transfer_id ? { fund_transfer_id: change.fund_transfer_id } : {}),
  };
  const ledger_transaction_id = change.ledger_transaction_id ?? null;
  await recordEvent(trx, {
    owner: { type: 'partner', id: row.partner_id },
    subject: row.id,
    type,
    data: { ...shared, out_trade_no: row.out_trade_no, ...(row.partner_transaction_id ? { partner_transaction_id: row.partner_transaction_id } : {}) },
    ledger_transaction_id,
  });
  const merchant_id =
    row.receiver_merchant_id !== undefined
      ? row.receiver_merchant_id
      : (((await trx('users').where({ id: row.receiver_user_id }).first('merchant_id')) as { merchant_id: string | null } | undefined)?.merchant_id ?? null);
  if (merchant_id) {
    await recordEvent(trx, { owner: { type: 'merchant', id: merchant_id }, subject: row.id, type, data: shared, ledger_transaction_id });
  }
}

/** Locks the pre-transfer's row for the rest of `trx` (the post and void activities serialise on it). */
export function lockPreTransfer(trx: Knex.Transaction, id: string): Promise<PreTransferRow | undefined> {
  return trx('pre_transfers as pt').select('pt.*', receiverMerchant(trx, 'pt')).where('pt.id', id).forUpdate('pt').first();
}

/**
 * Locks the pre-transfer's row, as `lockPreTransfer`, and tells in the same statement whether a verified confirm
 * request of its partner with `partner_transaction_id` was recorded (`recordConfirmRequest`).
 */
export async function lockPreTransferToPost(
  trx: Knex.Transaction,
  id: string,
  partner_transaction_id: string,
): Promise<(PreTransferRow & { confirm_recorded: boolean }) | undefined> {
  return trx('pre_transfers as pt')
    .select(
      'pt.*',
      receiverMerchant(trx, 'pt'),
      trx.raw(
        `EXISTS (SELECT 1 FROM pre_transfer_confirmations c
           WHERE c.pre_transfer_id = pt.id AND c.partner_id = pt.partner_id AND c.partner_transaction_id = ?) AS confirm_recorded`,
        [partner_transaction_id],
      ),
    )
    .where('pt.id', id)
    .forUpdate('pt')
    .first();
}

/** What the api verified of a confirm request: the partner's signed body (its digest), or a bound credential's call. */
export interface ConfirmRequest {
  id: string;
  partner_id: string;
  partner_transaction_id: string;
  /** Hex SHA-256 of the signed body as received (or of the typed request a bound credential sent). */
  body_sha256: string;
  /** The service credential bound to the partner that sent it, when it came through the typed RPC. */
  credential_id?: string;
}

/**
 * Reads the partner's pre-transfer and, when it is pending and unexpired, records the verified confirm request in
 * the same statement (a repeat of the same partner_transaction_id keeps the first record).
 * @returns the row as it was before the confirm, or undefined when the partner has no such pre-transfer
 */
export async function recordConfirmRequest(database: Knex, request: ConfirmRequest): Promise<PreTransferRow | undefined> {
  const result = await database.raw(
    `WITH found AS (SELECT * FROM pre_transfers WHERE id = ? AND partner_id = ?),
     recorded AS (
       INSERT INTO pre_transfer_confirmations (pre_transfer_id, partner_transaction_id, partner_id, body_sha256, credential_id)
       SELECT id, ?, partner_id, ?, ? FROM found WHERE state = 'pending' AND expires_at > now()
       ON CONFLICT DO NOTHING
     )
     SELECT * FROM found`,
    [request.id, request.partner_id, request.partner_transaction_id, request.body_sha256, request.credential_id ?? null],
  );
  return (result as { rows: PreTransferRow[] }).rows[0];
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
