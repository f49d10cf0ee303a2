/**
 * The payout flow's tables (migration 065_payouts): `payouts`, `payout_notifications`, `payout_approvals`,
 * `merchant_payout_settings`, and the fee schedule's `fee_payout`. Amounts in minor units.
 */
import type { Knex } from '../../db/knex';
import type { Currency } from '../../money';
import type { PayoutStatus } from './contract';

type Conn = Knex | Knex.Transaction;

/** One payout as stored. */
export interface PayoutRow {
  payout_reference: string;
  merchant_id: string;
  kind: 'crypto' | 'bank';
  source: 'api' | 'schedule' | 'dashboard' | 'area_c';
  out_trade_no: string | null;
  amount_units: bigint;
  fee_units: bigint;
  /** USDT (crypto), the user's wallet currency (bank). */
  currency: Currency;
  /** A bank payout's user (users.id) and bank account token; null for a crypto payout. */
  user_id: string | null;
  instrument_token: string | null;
  /** The fee schedule's channel the fee was taken from (`USDT_TRC20`). */
  channel: string;
  address: string;
  memo: string;
  status: PayoutStatus;
  request_key: string | null;
  request_fingerprint: string | null;
  pending_transfer_id: string | null;
  fee_pending_transfer_id: string | null;
  ledger_transaction_id: string | null;
  provider_reference: string | null;
  failure_reason: string | null;
  approval_due_at: Date | null;
  decision_due_at: Date;
  decided_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewPayoutRow = Pick<
  PayoutRow,
  | 'payout_reference'
  | 'merchant_id'
  | 'kind'
  | 'source'
  | 'out_trade_no'
  | 'amount_units'
  | 'fee_units'
  | 'currency'
  | 'channel'
  | 'user_id'
  | 'instrument_token'
  | 'address'
  | 'memo'
  | 'status'
  | 'request_key'
  | 'request_fingerprint'
  | 'approval_due_at'
  | 'decision_due_at'
>;

/** Records a new payout (with its holds' ids when chosen beforehand). @returns the row as stored */
export async function insertPayout(trx: Knex.Transaction, row: NewPayoutRow & Partial<Pick<PayoutRow, 'pending_transfer_id' | 'fee_pending_transfer_id'>>): Promise<PayoutRow> {
  const [stored] = (await trx('payouts').insert(row).returning('*')) as PayoutRow[];
  return stored!;
}

export function findPayout(conn: Conn, payout_reference: string): Promise<PayoutRow | undefined> {
  return conn<PayoutRow>('payouts').where({ payout_reference }).first();
}

export function findPayoutByKey(conn: Conn, merchant_id: string, request_key: string): Promise<PayoutRow | undefined> {
  return conn<PayoutRow>('payouts').where({ merchant_id, request_key }).first();
}

export function findPayoutByOutTradeNo(conn: Conn, merchant_id: string, out_trade_no: string): Promise<PayoutRow | undefined> {
  return conn<PayoutRow>('payouts').where({ merchant_id, out_trade_no }).first();
}

/** Locks the payout's row for the rest of `trx`: its decisions serialise on it. */
export function lockPayout(trx: Knex.Transaction, payout_reference: string): Promise<PayoutRow | undefined> {
  return trx<PayoutRow>('payouts').where({ payout_reference }).forUpdate().first();
}

export async function updatePayout(
  trx: Knex.Transaction,
  payout_reference: string,
  fields: Partial<Pick<PayoutRow, 'status' | 'pending_transfer_id' | 'fee_pending_transfer_id' | 'ledger_transaction_id' | 'provider_reference' | 'failure_reason' | 'decided_at'>>,
): Promise<void> {
  await trx('payouts')
    .where({ payout_reference })
    .update({ ...fields, updated_at: trx.fn.now() });
}

/** Serialises the merchant's payout requests for the rest of `trx` (its daily limit is read and spent under it). */
export async function lockMerchantPayouts(trx: Knex.Transaction, merchant_id: string): Promise<void> {
  await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 65))', [`payouts:${merchant_id}`]);
}

/**
 * What the merchant's payouts in `currency` since `since` (not failed) amount to, fees excluded: its crypto payouts'
 * in USDT, its users' bank payouts' in USD. Minor units of `currency`.
 */
export async function payoutsSince(conn: Conn, merchant_id: string, currency: Currency, since: Date): Promise<bigint> {
  const row = (await conn('payouts').where({ merchant_id, currency }).whereNot({ status: 'failed' }).where('created_at', '>=', since).first(conn.raw('coalesce(sum(amount_units), 0)::text AS total'))) as
    | { total: string }
    | undefined;
  return BigInt(row?.total ?? '0');
}

/** A merchant's payout limits in one currency (null: none). Minor units of that currency. */
export interface PayoutSettings {
  min_units: bigint | null;
  per_payout_max_units: bigint | null;
  daily_max_units: bigint | null;
  approval_threshold_units: bigint | null;
}

export const NO_PAYOUT_SETTINGS: PayoutSettings = { min_units: null, per_payout_max_units: null, daily_max_units: null, approval_threshold_units: null };

/** The currencies payout limits are set in: crypto payouts' (USDT) and bank payouts' (USD). */
export const PAYOUT_LIMIT_CURRENCIES = ['USDT', 'USD'] as const satisfies readonly Currency[];
export type PayoutLimitCurrency = (typeof PAYOUT_LIMIT_CURRENCIES)[number];

/** The merchant's payout limits in `currency` (none set: NO_PAYOUT_SETTINGS). */
export async function payoutSettingsOf(conn: Conn, merchant_id: string, currency: Currency): Promise<PayoutSettings> {
  const row = (await conn('merchant_payout_settings').where({ merchant_id, currency }).first()) as PayoutSettings | undefined;
  if (!row) return NO_PAYOUT_SETTINGS;
  const { min_units, per_payout_max_units, daily_max_units, approval_threshold_units } = row;
  return { min_units, per_payout_max_units, daily_max_units, approval_threshold_units };
}

/** Replaces the merchant's payout limits in `currency` (USDT: its crypto payouts; USD: its users' bank payouts). */
export async function setPayoutSettings(conn: Conn, merchant_id: string, settings: PayoutSettings, currency: PayoutLimitCurrency = 'USDT'): Promise<void> {
  await conn('merchant_payout_settings')
    .insert({ merchant_id, currency, ...settings, updated_at: conn.fn.now() })
    .onConflict(['merchant_id', 'currency'])
    .merge();
}

/** The fee schedule's `fee_payout` of a channel as its JSON number's text (`"1"`, `"0.5"`), or undefined. */
export async function feePayoutOf(conn: Conn, channel_code: string): Promise<{ amount: string; currency: string } | undefined> {
  const row = (await conn('fee_schedule').where({ channel_code }).first(conn.raw(`fee->'fee_payout'->>'amount' AS amount, fee->'fee_payout'->>'currency' AS currency`))) as
    | { amount: string | null; currency: string | null }
    | undefined;
  if (!row?.amount) return undefined;
  return { amount: row.amount, currency: row.currency ?? 'USDT' };
}

/** A signed payout notification, as the upstream's door recorded it. */
export interface PayoutNotificationRow {
  payout_reference: string;
  status: 'payout_succeeded' | 'payout_failed';
  amount_units: bigint;
  payout_trx_ref: string | null;
  failure_reason: string | null;
  raw_body: string;
  received_at: Date;
}

/** Records a notification once per payout and decision. @returns true when this call recorded it */
export async function insertPayoutNotification(conn: Conn, row: Omit<PayoutNotificationRow, 'received_at'>): Promise<boolean> {
  const inserted = await conn('payout_notifications').insert(row).onConflict(['payout_reference', 'status']).ignore().returning('id');
  return inserted.length > 0;
}

/** The first recorded notification of the payout (the first decision recorded stands). */
export function firstPayoutNotification(conn: Conn, payout_reference: string): Promise<PayoutNotificationRow | undefined> {
  return conn<PayoutNotificationRow>('payout_notifications').where({ payout_reference }).orderBy('id').first();
}

/** An approval or rejection of a payout, as the authenticated path recorded it. */
export interface PayoutApprovalRow {
  payout_reference: string;
  decision: 'approve' | 'reject';
  /** Who: `operator:<credential>` or `merchant:<merchant_id>`. */
  actor: string;
  note: string;
  decided_at: Date;
}

/** Records the payout's one approval or rejection. @returns true when this call recorded it (false: one exists) */
export async function insertPayoutApproval(conn: Conn, row: Omit<PayoutApprovalRow, 'decided_at'>): Promise<boolean> {
  const inserted = await conn('payout_approvals').insert(row).onConflict(['payout_reference']).ignore().returning('id');
  return inserted.length > 0;
}

export function payoutApprovalOf(conn: Conn, payout_reference: string): Promise<PayoutApprovalRow | undefined> {
  return conn<PayoutApprovalRow>('payout_approvals').where({ payout_reference }).first();
}

/** Payouts, newest first: of one merchant, or every one (operators), optionally of one status. */
export function listPayouts(conn: Conn, options: { merchant_id?: string; status?: string; limit: number }): Promise<PayoutRow[]> {
  const query = conn<PayoutRow>('payouts').orderBy('created_at', 'desc').limit(options.limit);
  if (options.merchant_id) query.where({ merchant_id: options.merchant_id });
  if (options.status) query.where({ status: options.status as PayoutRow['status'] });
  return query;
}

/** Payouts still undecided (held or requested) past their decision due time, oldest first. */
export function overduePayouts(conn: Conn, now: Date, limit: number): Promise<PayoutRow[]> {
  return conn<PayoutRow>('payouts').whereIn('status', ['held', 'requested']).where('decision_due_at', '<', now).orderBy('decision_due_at').limit(limit);
}

/** Payouts awaiting approval past their approval timeout (their run should have voided them), oldest first. */
export function staleApprovals(conn: Conn, now: Date, limit: number): Promise<PayoutRow[]> {
  return conn<PayoutRow>('payouts').where({ status: 'awaiting_approval' }).where('approval_due_at', '<', now).orderBy('approval_due_at').limit(limit);
}

/** Recorded provider decisions whose payout is unknown (a provider outcome with no payout). */
export function orphanPayoutNotifications(conn: Conn, limit: number): Promise<PayoutNotificationRow[]> {
  return conn<PayoutNotificationRow>('payout_notifications as n')
    .select('n.*')
    .leftJoin('payouts as p', 'p.payout_reference', 'n.payout_reference')
    .whereNull('p.payout_reference')
    .orderBy('n.id')
    .limit(limit);
}
