/**
 * The `deposits` table (migration 009; docs/area-c.md "Deposits and confirmations") and the values a
 * deposit shows: its reference (`DEP` + 18 uppercase letters/digits, also the DepositWorkflow id and the ledger
 * idempotency key), its token (`dtk_` + 32 base64url characters, stored as SHA-256 hex only) and the result of a
 * Visa/Master confirmation.
 */
import type { Knex } from 'knex';
import { randomToken, sha256Hex } from '../../crypto/secrets';
import type { InstrumentKind } from '../../instruments/store';
import type { Currency } from '../../money';
import { newReference } from '../wallet/activities';
import { problem } from '../../field-problems';

/** pending → completed | declined | failed | cancelled | expired (every end state is final). */
export type DepositState = 'pending' | 'completed' | 'declined' | 'failed' | 'cancelled' | 'expired';

/** token_type of the interface: 1 = OTP, 2 = card confirmation form (html_confirm_payment). */
export const TOKEN_TYPE = { otp: 1, cardForm: 2 } as const;

export interface Deposit {
  reference: string;
  merchant_id: string;
  /** Decimal users.id; null for a guest card deposit (hosted preorder page). */
  user_id: string | null;
  instrument_token: string;
  instrument_kind: InstrumentKind;
  pre_order_token: string | null;
  amount_units: bigint;
  currency: Currency;
  token_type: number;
  state: DepositState;
  failure_message: string | null;
  ledger_transaction_id: string | null;
  expires_at: Date;
}

interface DepositRow extends Omit<Deposit, 'user_id' | 'amount_units'> {
  user_id: string | bigint | null;
  amount_units: string | bigint;
}

function toDeposit(row: DepositRow): Deposit {
  return { ...row, user_id: row.user_id === null ? null : String(row.user_id), amount_units: BigInt(row.amount_units) };
}

const DEPOSIT_TOKEN_PATTERN = /^dtk_[A-Za-z0-9_-]{32}$/;

/** A fresh deposit reference and token. */
export function newDepositIdentity(): { reference: string; token: string } {
  return { reference: newReference('DEP'), token: `dtk_${randomToken(24)}` };
}

/** Inserts a pending deposit; `token` is stored as its SHA-256 hex. */
export async function insertDeposit(
  db: Knex | Knex.Transaction,
  input: Omit<Deposit, 'state' | 'failure_message' | 'ledger_transaction_id' | 'expires_at'> & { token: string; ttl_seconds: number },
): Promise<void> {
  const { token, ttl_seconds, ...fields } = input;
  await db('deposits').insert({
    ...fields,
    token_sha256: sha256Hex(token),
    expires_at: db.raw('now() + make_interval(secs => ?)', [ttl_seconds]),
  });
}

/** The deposit with this reference (`forUpdate` locks the row inside a transaction). */
export async function getDeposit(db: Knex | Knex.Transaction, reference: string, options: { forUpdate?: boolean } = {}): Promise<Deposit | undefined> {
  const query = db('deposits').where({ reference }).first();
  const row = (await (options.forUpdate ? query.forUpdate() : query)) as DepositRow | undefined;
  return row ? toDeposit(row) : undefined;
}

/** The deposit this token opens, else undefined (unknown or malformed). Callers check the merchant. */
export async function findDepositByToken(db: Knex | Knex.Transaction, token: string): Promise<Deposit | undefined> {
  if (typeof token !== 'string' || !DEPOSIT_TOKEN_PATTERN.test(token)) return undefined;
  const row = (await db('deposits').where({ token_sha256: sha256Hex(token) }).first()) as DepositRow | undefined;
  return row ? toDeposit(row) : undefined;
}

/** Moves a pending deposit to an end state; a deposit already final is left as it is. @returns true when moved. */
export async function finishDeposit(
  db: Knex | Knex.Transaction,
  reference: string,
  change: { state: Exclude<DepositState, 'pending'>; failure_message?: string | null; ledger_transaction_id?: string | null },
): Promise<boolean> {
  const updated = await db('deposits')
    .where({ reference, state: 'pending' })
    .update({ ...change, finished_at: db.fn.now() });
  return updated === 1;
}

/** True while a pending deposit's lifetime has run out (the workflow expires it at its timer). */
export function lifetimeOver(deposit: Deposit, now = new Date()): boolean {
  return deposit.state === 'pending' && deposit.expires_at.getTime() <= now.getTime();
}

/**
 * The field problem of a deposit's end state (empty for completed). `failure_message` holds the problem recorded
 * at the end (rows written before problems were codes hold the English text, which the façade passes through).
 */
export function endStateProblem(deposit: Deposit): string {
  switch (deposit.state) {
    case 'completed':
      return '';
    case 'declined':
    case 'failed':
      return deposit.failure_message ?? problem('payment_failed');
    case 'cancelled':
      return problem('payment_cancelled');
    case 'expired':
      return problem('payment_expired');
    default:
      return problem(lifetimeOver(deposit) ? 'payment_expired' : 'payment_pending');
  }
}

/** The result of a Visa/Master confirmation (the façade builds the interface's result object from it). */
export function depositResult(deposit: Deposit): { reference: string; success: boolean; problem: string } {
  return { reference: deposit.reference, success: deposit.state === 'completed', problem: endStateProblem(deposit) };
}

/** The fields of a preorder a deposit needs. */
export interface PreorderForDeposit {
  token: string;
  merchant_id: string;
  out_trade_no: string;
  seller_code: string;
  description: string;
  amount_units: bigint;
  currency: Currency;
  commission_rate: string | null;
  redirect_url: string | null;
  status: 'pending' | 'paid';
}

/** The preorder with this token (any merchant; callers check tenancy). */
export async function findPreorder(db: Knex | Knex.Transaction, token: string): Promise<PreorderForDeposit | undefined> {
  if (typeof token !== 'string' || token.length === 0 || token.length > 128) return undefined;
  const row = (await db('preorders').where({ token }).first()) as (Omit<PreorderForDeposit, 'amount_units'> & { amount_units: string | bigint }) | undefined;
  return row ? { ...row, amount_units: BigInt(row.amount_units) } : undefined;
}
