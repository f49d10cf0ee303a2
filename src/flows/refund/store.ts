/**
 * The refund flow's SQL: `refunds` and `refund_notifications` (migration 035), and the reads of a payin a refund
 * needs (`payins`; the ledger transactions its payments were credited by, through the ledger's reads). One copy of
 * each query and lock.
 */
import type { Knex } from '../../db/knex';
import type { Ledger } from '../../ledger/types';
import type { RefundFeeSetting, RefundFields, RefundStatus } from './contract';

type Conn = Knex | Knex.Transaction;

/** A row of `refunds`: what it was made with (RefundFields), then its state. Amounts in minor units of `currency`. */
export interface RefundRow extends RefundFields {
  status: RefundStatus;
  /** The fee share's hold on fee_revenue (`<ref>:hold-fee`); null when the refund returns no fee. */
  fee_pending_transfer_id: string | null;
  /** The payin fee's share the refund returns (from fee_revenue), minor units; 0 under `kept`. */
  fee_units: bigint;
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
  | 'refund_fee'
  | 'fee_units'
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
  /**
   * The ledger accounts the payin's settlement posted to (migration 038): the merchant's wallet, the platform's
   * settlement and fee_revenue accounts; null for a payin from before them (the refund then finds them).
   */
  wallet_account_id: string | null;
  settlement_account_id: string | null;
  fee_revenue_account_id: string | null;
}

const PAYIN_COLUMNS = [
  'invoice_reference',
  'merchant_id',
  'out_trade_no',
  'status',
  'paid_amount_units',
  'currency',
  'trx_ref',
  'wallet_account_id',
  'settlement_account_id',
  'fee_revenue_account_id',
];

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

/** The statuses of refunds that count against what their payin credited: succeeded, or held (held and pending). */
const COMMITTED_STATUSES = ['held', 'pending', 'succeeded'] as const;

/**
 * What a payin's refunds are measured against, minor units: what its payments paid and the fees taken from them
 * (its ledger transactions `<ref>:settle` and `<ref>:additional:…`), its refunds succeeded or held, and of those the
 * ones that returned the fee (`refund_fee` `returned`): their amounts and the fee shares they returned.
 */
export interface RefundBasis {
  paid: bigint;
  fee: bigint;
  committed: bigint;
  returned_amount: bigint;
  returned_fee: bigint;
}

/**
 * The payin's RefundBasis (a refund's request reads it under the payin's lock): what its payments paid and the fees
 * taken from them, from the metadata of its ledger transactions (`paid_units`, `fee_units`), read through the ledger;
 * its refunds from `refunds`. Read in `conn`'s transaction when it is one.
 */
export async function refundBasis(ledger: Pick<Ledger, 'transactionsByKey'>, conn: Conn, invoice_reference: string): Promise<RefundBasis> {
  const trx = conn.isTransaction ? (conn as Knex.Transaction) : undefined;
  const payments = await ledger.transactionsByKey({ keys: [`${invoice_reference}:settle`], prefixes: [`${invoice_reference}:additional:`] }, {}, trx);
  const metadataUnits = (value: unknown) => (typeof value === 'string' || typeof value === 'number' ? BigInt(value) : 0n);
  const paid = payments.reduce((sum, payment) => sum + metadataUnits(payment.metadata.paid_units), 0n);
  const fee = payments.reduce((sum, payment) => sum + metadataUnits(payment.metadata.fee_units), 0n);
  const result = await conn.raw(
    `SELECT coalesce(sum(amount_units), 0)::text AS committed,
            coalesce(sum(amount_units) FILTER (WHERE refund_fee = 'returned'), 0)::text AS returned_amount,
            coalesce(sum(fee_units), 0)::text AS returned_fee
       FROM refunds
      WHERE invoice_reference = ? AND status = ANY(?::text[])`,
    [invoice_reference, [...COMMITTED_STATUSES]],
  );
  const row = (result.rows as Array<Record<'committed' | 'returned_amount' | 'returned_fee', string>>)[0];
  const value = (key: 'committed' | 'returned_amount' | 'returned_fee') => BigInt(row?.[key] ?? '0');
  return { paid, fee, committed: value('committed'), returned_amount: value('returned_amount'), returned_fee: value('returned_fee') };
}

/**
 * What is still refundable of the payin under `setting`, minor units: `kept`, what it credited (paid − fee) less its
 * refunds succeeded or held; `returned`, what was paid less those refunds. Negative when refunds exceed it: callers
 * clamp.
 */
export function refundableOf(basis: RefundBasis, setting: RefundFeeSetting): bigint {
  return (setting === 'returned' ? basis.paid : basis.paid - basis.fee) - basis.committed;
}

/**
 * The payin fee's share a refund of `amount_units` returns under `returned` (0 under `kept`), minor units: cumulative
 * and proportional, floor(fee × (A + amount) / paid) − F, where A and F are the amounts and fee shares of the payin's
 * refunds that returned the fee (succeeded or held). So successive partial refunds return exactly, in total,
 * floor(fee × their total / paid) — all of the fee when everything paid was refunded, never more — whatever their
 * split. Never all of the refund: at least one minor unit comes from the wallet (the hold on it carries the refund).
 */
export function feeShareOf(basis: RefundBasis, setting: RefundFeeSetting, amount_units: bigint): bigint {
  if (setting !== 'returned' || basis.paid <= 0n || basis.fee <= 0n) return 0n;
  const share = (basis.fee * (basis.returned_amount + amount_units)) / basis.paid - basis.returned_fee;
  const bounded = share < amount_units - 1n ? share : amount_units - 1n;
  return bounded > 0n ? bounded : 0n;
}

/** The merchant's refund fee setting (its outcome policy's `refund_fee`; `kept` without a policy). */
export async function merchantRefundFee(conn: Conn, merchant_id: string): Promise<RefundFeeSetting> {
  const row = (await conn('merchant_outcome_policies').where({ merchant_id }).first('refund_fee')) as { refund_fee: RefundFeeSetting } | undefined;
  return row?.refund_fee ?? 'kept';
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
  fields: Partial<Pick<RefundRow, 'status' | 'pending_transfer_id' | 'fee_pending_transfer_id' | 'ledger_transaction_id' | 'refund_trx_ref' | 'failure_reason' | 'decided_at'>>,
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
