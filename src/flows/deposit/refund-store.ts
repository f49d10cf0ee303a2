/**
 * The `deposit_refunds` table (migration 036; docs/refunds.md "Area C"). The deposit's capture state, where a capture
 * and a reversal meet, is the deposit's own column and moves in ./store.ts (`moveCaptureState`).
 */
import type { Knex } from 'knex';
import type { Currency } from '../../money';
import type { DepositRefundMethod, DepositRefundStatus } from './contract';

type Db = Knex | Knex.Transaction;

/** One refund of a deposit. Amounts in minor units of `currency`. */
export interface DepositRefundRow {
  /** `DRF` + 18 uppercase letters/digits; also the DepositRefundWorkflow's id. */
  refund_reference: string;
  merchant_id: string;
  deposit_reference: string;
  method: DepositRefundMethod;
  status: DepositRefundStatus;
  amount_units: bigint;
  /** A preorder's refund: the commission returned from fee_revenue (the seller is debited the rest); else 0. */
  commission_units: bigint;
  currency: Currency;
  reason: string;
  /** The pending transfer on the credited account (the seller's part for a preorder). */
  hold_transfer_id: string | null;
  /** The pending transfer on fee_revenue (a preorder's commission), if any. */
  commission_hold_transfer_id: string | null;
  /** The webhook of the decision (a preorder's call_back_url), if one was produced. */
  webhook_id: string | null;
  acquirer_refund_id: string | null;
  failure_reason: string | null;
  created_at: Date;
  decided_at: Date | null;
}

type Row = Omit<DepositRefundRow, 'amount_units' | 'commission_units'> & { amount_units: string | bigint; commission_units: string | bigint };

function toRefund(row: Row): DepositRefundRow {
  return { ...row, amount_units: BigInt(row.amount_units), commission_units: BigInt(row.commission_units) };
}

export async function insertDepositRefund(trx: Knex.Transaction, row: Pick<DepositRefundRow, 'refund_reference' | 'merchant_id' | 'deposit_reference' | 'method' | 'amount_units' | 'commission_units' | 'currency' | 'reason'>): Promise<void> {
  await trx('deposit_refunds').insert({ ...row, status: 'held' });
}

/** The refund with this reference (`forUpdate` locks its row inside a transaction). */
export async function findDepositRefund(db: Db, refund_reference: string, options: { forUpdate?: boolean } = {}): Promise<DepositRefundRow | undefined> {
  const query = db('deposit_refunds').where({ refund_reference }).first();
  const row = (await (options.forUpdate ? query.forUpdate() : query)) as Row | undefined;
  return row ? toRefund(row) : undefined;
}

export async function updateDepositRefund(trx: Knex.Transaction, refund_reference: string, change: Partial<Omit<DepositRefundRow, 'refund_reference'>>): Promise<void> {
  await trx('deposit_refunds').where({ refund_reference }).update(change);
}

/** A deposit's refunds, newest first. */
export async function refundsOfDeposit(db: Db, deposit_reference: string): Promise<DepositRefundRow[]> {
  const rows = (await db('deposit_refunds').where({ deposit_reference }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'refund_reference', order: 'desc' }])) as Row[];
  return rows.map(toRefund);
}

/** Deposit refunds, newest first: of one merchant, or every one (operators' `payments admin deposit-refunds list`). */
export async function listDepositRefunds(db: Db, options: { merchant_id?: string; limit: number }): Promise<DepositRefundRow[]> {
  const query = db('deposit_refunds').orderBy([{ column: 'created_at', order: 'desc' }, { column: 'refund_reference', order: 'desc' }]).limit(options.limit);
  if (options.merchant_id) query.where({ merchant_id: options.merchant_id });
  return ((await query) as Row[]).map(toRefund);
}

/** What a deposit's refunds took: the sum of those succeeded or still held (minor units). */
export async function committedRefundUnits(db: Db, deposit_reference: string): Promise<bigint> {
  const row = (await db('deposit_refunds').where({ deposit_reference }).whereIn('status', ['held', 'succeeded']).sum({ total: 'amount_units' }).first()) as
    | { total: string | null }
    | undefined;
  return BigInt(row?.total ?? 0);
}

/** The authorization id the approved card-form confirmation of a deposit recorded, else undefined. */
export async function approvedAuthorization(db: Db, deposit_reference: string): Promise<string | undefined> {
  const row = (await db('deposit_confirmations').where({ deposit_reference, outcome: 'approved' }).whereNotNull('authorization_id').first('authorization_id')) as
    | { authorization_id: string }
    | undefined;
  return row?.authorization_id;
}
