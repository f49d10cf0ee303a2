/**
 * The refund flow's SQL: `refunds` and `refund_notifications` (migration 035), and the reads of a payin a refund
 * needs (`payins`, the ledger transactions its payments were credited by). One copy of each query and lock.
 */
import type { Knex } from '../../db/knex';
import type { RefundFields, RefundStatus } from './contract';

type Conn = Knex | Knex.Transaction;

/** A row of `refunds`: what it was made with (RefundFields), then its state. Amounts in minor units of `currency`. */
export interface RefundRow extends RefundFields {
  status: RefundStatus;
  request_key: string | null;
  request_fingerprint: string | null;
  pending_transfer_id: string | null;
  ledger_transaction_id: string | null;
  refund_trx_ref: string | null;
  failure_reason: string | null;
  decision_due_at: Date;
  decided_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewRefundRow = Pick<
  RefundRow,
  | 'refund_reference'
  | 'merchant_id'
  | 'invoice_reference'
  | 'out_trade_no'
  | 'trx_ref'
  | 'amount_units'
  | 'currency'
  | 'address'
  | 'reason'
  | 'request_key'
  | 'request_fingerprint'
  | 'pending_transfer_id'
  | 'decision_due_at'
>;

/** The payin fields a refund reads. */
export interface RefundablePayin {
  invoice_reference: string;
  merchant_id: string;
  out_trade_no: string;
  status: string;
  paid_amount_units: bigint | null;
  currency: 'USDT';
  trx_ref: string | null;
}

const PAYIN_COLUMNS = ['invoice_reference', 'merchant_id', 'out_trade_no', 'status', 'paid_amount_units', 'currency', 'trx_ref'];

/**
 * The caller's payin named by `invoice_reference`, else its latest live payin for `out_trade_no`, locked for the rest
 * of `trx` (the payin's own transitions and its refunds serialise on the row).
 */
export async function lockMerchantPayin(
  trx: Knex.Transaction,
  merchant_id: string,
  name: { invoice_reference?: string; out_trade_no?: string },
): Promise<RefundablePayin | undefined> {
  const query = trx<RefundablePayin>('payins').select(PAYIN_COLUMNS).where({ merchant_id }).whereNot({ status: 'failed' });
  // Named exactly: found and locked in one statement (a row that turns `failed` while we wait is not returned).
  if (name.invoice_reference) return query.where({ invoice_reference: name.invoice_reference }).forUpdate().first() as Promise<RefundablePayin | undefined>;
  // By out_trade_no, the latest first, then locked by its reference: `ORDER BY … LIMIT 1 FOR UPDATE` would answer
  // nothing, not the payin, when the row it picked changed while it waited for the lock.
  query.where({ out_trade_no: name.out_trade_no ?? '' }).orderBy('created_at', 'desc');
  const found = (await query.first()) as RefundablePayin | undefined;
  if (!found) return undefined;
  return trx<RefundablePayin>('payins').select(PAYIN_COLUMNS).where({ invoice_reference: found.invoice_reference }).forUpdate().first() as Promise<
    RefundablePayin | undefined
  >;
}

/** The SQL of what a payin credited (its `<ref>:settle` and `<ref>:additional:…` transactions) and its parameters. */
function creditedQuery(invoice_reference: string): { sql: string; bindings: string[] } {
  const escaped = invoice_reference.replace(/[\\%_]/g, (character) => `\\${character}`);
  return {
    sql: `SELECT coalesce(sum((metadata->>'paid_units')::numeric - coalesce((metadata->>'fee_units')::numeric, 0)), 0)
            FROM ledger_transactions
           WHERE idempotency_key = ? OR idempotency_key LIKE ? ESCAPE '\\'`,
    bindings: [`${invoice_reference}:settle`, `${escaped}:additional:%`],
  };
}

/** The statuses of refunds that count against what their payin credited: succeeded, or held (held and pending). */
const COMMITTED_STATUSES = ['held', 'pending', 'succeeded'] as const;

/**
 * What the payin credited to its merchant, minor units: its settlement and every additional payment, each its paid
 * amount less the payin fee taken from it (the ledger transactions `<ref>:settle` and `<ref>:additional:…`). The fee
 * is the platform's: a refund never returns it.
 */
export async function creditedUnits(conn: Conn, invoice_reference: string): Promise<bigint> {
  const credited = creditedQuery(invoice_reference);
  const result = await conn.raw(`SELECT (${credited.sql})::text AS credited`, credited.bindings);
  return BigInt((result.rows as Array<{ credited: string }>)[0]?.credited ?? '0');
}

/**
 * What is still refundable of the payin, minor units: creditedUnits less committedRefundUnits, in one statement (a
 * refund's request reads it under the payin's lock). Negative when refunds exceed what was credited: callers clamp.
 */
export async function refundableUnits(conn: Conn, invoice_reference: string): Promise<bigint> {
  const credited = creditedQuery(invoice_reference);
  const result = await conn.raw(
    `SELECT ((${credited.sql}) - (SELECT coalesce(sum(amount_units), 0) FROM refunds WHERE invoice_reference = ? AND status = ANY(?::text[])))::text AS refundable`,
    [...credited.bindings, invoice_reference, [...COMMITTED_STATUSES]],
  );
  return BigInt((result.rows as Array<{ refundable: string }>)[0]?.refundable ?? '0');
}

/** Refunds of the payin that count against what it credited: succeeded, or held (held and pending). */
export async function committedRefundUnits(conn: Conn, invoice_reference: string): Promise<bigint> {
  const row = (await conn('refunds')
    .where({ invoice_reference })
    .whereIn('status', [...COMMITTED_STATUSES])
    .sum({ total: 'amount_units' })
    .first()) as { total: string | bigint | null } | undefined;
  return BigInt(row?.total ?? 0);
}

/** Records a new refund (`held`). @returns the row as stored (its defaults filled in) */
export async function insertRefund(trx: Knex.Transaction, row: NewRefundRow): Promise<RefundRow> {
  const [stored] = (await trx('refunds')
    .insert({ ...row, status: 'held' })
    .returning('*')) as RefundRow[];
  return stored!;
}

export function findRefund(conn: Conn, refund_reference: string): Promise<RefundRow | undefined> {
  return conn<RefundRow>('refunds').where({ refund_reference }).first();
}

export function findRefundByKey(conn: Conn, merchant_id: string, request_key: string): Promise<RefundRow | undefined> {
  return conn<RefundRow>('refunds').where({ merchant_id, request_key }).first();
}

/** Locks the refund's row for the rest of `trx`: its decisions serialise on it. */
export function lockRefund(trx: Knex.Transaction, refund_reference: string): Promise<RefundRow | undefined> {
  return trx<RefundRow>('refunds').where({ refund_reference }).forUpdate().first();
}

export async function updateRefund(
  trx: Knex.Transaction,
  refund_reference: string,
  fields: Partial<Pick<RefundRow, 'status' | 'pending_transfer_id' | 'ledger_transaction_id' | 'refund_trx_ref' | 'failure_reason' | 'decided_at'>>,
): Promise<void> {
  await trx('refunds')
    .where({ refund_reference })
    .update({ ...fields, updated_at: trx.fn.now() });
}

/** A signed refund notification, as the notification route recorded it. */
export interface RefundNotificationRow {
  refund_reference: string;
  status: 'refund_succeeded' | 'refund_failed';
  amount_units: bigint;
  refund_trx_ref: string | null;
  failure_reason: string | null;
  raw_body: string;
  received_at: Date;
}

/** Records a notification once per refund and decision. @returns true when this call recorded it */
export async function insertRefundNotification(conn: Conn, row: Omit<RefundNotificationRow, 'received_at'>): Promise<boolean> {
  const inserted = await conn('refund_notifications').insert(row).onConflict(['refund_reference', 'status']).ignore().returning('id');
  return inserted.length > 0;
}

/** The first recorded notification of the refund (a provider decides once; the first decision recorded stands). */
export function firstRefundNotification(conn: Conn, refund_reference: string): Promise<RefundNotificationRow | undefined> {
  return conn<RefundNotificationRow>('refund_notifications').where({ refund_reference }).orderBy('id').first();
}

/** Refunds, newest first: of one merchant, or every one (operators). */
export function listRefunds(conn: Conn, options: { merchant_id?: string; invoice_reference?: string; limit: number }): Promise<RefundRow[]> {
  const query = conn<RefundRow>('refunds').orderBy('created_at', 'desc').limit(options.limit);
  if (options.merchant_id) query.where({ merchant_id: options.merchant_id });
  if (options.invoice_reference) query.where({ invoice_reference: options.invoice_reference });
  return query;
}

/** Refunds still undecided (held or pending) past their decision due time, oldest first. */
export function overdueRefunds(conn: Conn, now: Date, limit: number): Promise<RefundRow[]> {
  return conn<RefundRow>('refunds').whereIn('status', ['held', 'pending']).where('decision_due_at', '<', now).orderBy('decision_due_at').limit(limit);
}

/** Recorded provider decisions whose refund is unknown (a provider outcome with no refund). */
export async function orphanRefundNotifications(conn: Conn, limit: number): Promise<RefundNotificationRow[]> {
  return conn<RefundNotificationRow>('refund_notifications as n')
    .select('n.*')
    .leftJoin('refunds as r', 'r.refund_reference', 'n.refund_reference')
    .whereNull('r.refund_reference')
    .orderBy('n.id')
    .limit(limit);
}
