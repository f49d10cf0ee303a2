/**
 * The `deposits` table (migration 009; docs/area-c.md "Deposits and confirmations") and the values a
 * deposit shows: its reference (`DEP` + 18 uppercase letters/digits, also the DepositWorkflow id and the ledger
 * idempotency key), its token (`dtk_` + 32 base64url characters, stored as SHA-256 hex only) and the result of a
 * Visa/Master confirmation.
 */
import type { Knex } from 'knex';
import { randomToken, sha256Hex } from '../../crypto/secrets';
import { recordEvent } from '../../events';
import type { InstrumentKind } from '../../instruments/store';
import type { Currency } from '../../money';
import { getUser } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { sellerAccountId } from '../../preorders';
import { newReference } from '../../idempotency';
import { problem } from '../../field-problems';
import type { ConfirmationOutcome } from './contract';

/** pending → completed | declined | failed | cancelled | expired (every end state is final). */
export type DepositState = 'pending' | 'completed' | 'declined' | 'failed' | 'cancelled' | 'expired';

/**
 * Where a Visa/Master deposit's capture and a refund's reversal meet, under the deposit's row lock (migration 036):
 * `authorized` (completed, not captured yet) → `capturing` → `captured`, or `authorized` → `reversing` → `reversed`
 * (a refund before capture: the capture never happens). Null for OTP deposits and deposits not completed.
 */
export type CaptureState = 'authorized' | 'capturing' | 'captured' | 'reversing' | 'reversed';

/** Moves the deposit's capture state to `to` when it is one of `from` (see CaptureState). @returns true when moved */
export async function moveCaptureState(db: Knex | Knex.Transaction, reference: string, from: Array<CaptureState | null>, to: CaptureState): Promise<boolean> {
  const states = from.filter((state): state is CaptureState => state !== null);
  const moved = await db('deposits')
    .where({ reference })
    .andWhere((query) => {
      if (states.length > 0) void query.whereIn('capture_state', states);
      if (from.includes(null)) void query.orWhereNull('capture_state');
    })
    .update({ capture_state: to });
  return moved > 0;
}

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
  /** Wrong passwords allowed, fixed at creation; null on deposits created before it was recorded. */
  max_password_attempts: number | null;
  /** Visa/Master deposits once completed (see CaptureState); null otherwise. */
  capture_state: CaptureState | null;
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

/** Runs `work` in `db` when it is a transaction, else in a transaction of its own. */
function inTransaction<T>(db: Knex | Knex.Transaction, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  return 'isTransaction' in db && db.isTransaction ? work(db as Knex.Transaction) : db.transaction(work);
}

/** What every event of a deposit says of it (docs/events.md "Area C"); amounts as decimal strings of minor units. */
function depositEventData(deposit: Deposit): Record<string, unknown> {
  return {
    reference: deposit.reference,
    state: deposit.state,
    user_id: deposit.user_id,
    instrument_kind: deposit.instrument_kind,
    amount_units: deposit.amount_units.toString(),
    currency: deposit.currency,
    pre_order_token: deposit.pre_order_token,
  };
}

/**
 * Inserts a pending deposit with its merchant's `deposit.created` event, in one transaction (the caller's, or its
 * own); `token` is stored as its SHA-256 hex. @returns the deposit as inserted
 */
export async function insertDeposit(
  db: Knex | Knex.Transaction,
  input: Omit<Deposit, 'state' | 'failure_message' | 'ledger_transaction_id' | 'expires_at' | 'capture_state'> & { token: string; ttl_seconds: number },
): Promise<Deposit> {
  const { token, ttl_seconds, ...fields } = input;
  return inTransaction(db, async (trx) => {
    const [row] = (await trx('deposits')
      .insert({
        ...fields,
        token_sha256: sha256Hex(token),
        expires_at: trx.raw('now() + make_interval(secs => ?)', [ttl_seconds]),
      })
      .returning('*')) as DepositRow[];
    const deposit = toDeposit(row!);
    await recordEvent(trx, {
      owner: { type: 'merchant', id: deposit.merchant_id },
      subject: deposit.reference,
      type: 'deposit.created',
      data: { ...depositEventData(deposit), expires_at: deposit.expires_at.toISOString() },
    });
    return deposit;
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

/**
 * Moves a pending deposit to an end state with its merchant's `deposit.<state>` event, in one transaction (the
 * caller's, as its last write, or its own); a deposit already final is left as it is and announced nothing.
 * @returns true when moved.
 */
export async function finishDeposit(
  db: Knex | Knex.Transaction,
  reference: string,
  change: { state: Exclude<DepositState, 'pending'>; failure_message?: string | null; ledger_transaction_id?: string | null },
): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const [row] = (await trx('deposits')
      .where({ reference, state: 'pending' })
      .update({ ...change, finished_at: trx.fn.now() })
      .returning('*')) as DepositRow[];
    if (!row) return false;
    const deposit = toDeposit(row);
    const problem = endStateProblem(deposit);
    await recordEvent(trx, {
      owner: { type: 'merchant', id: deposit.merchant_id },
      subject: deposit.reference,
      type: `deposit.${change.state}`,
      data: { ...depositEventData(deposit), ...(problem ? { problem } : {}) },
      ledger_transaction_id: change.ledger_transaction_id ?? null,
    });
    return true;
  });
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

/** How a deposit's confirmation reached the platform (`deposit_confirmations.method`). */
export type ConfirmationMethod = 'card_form' | 'password';

/**
 * A confirmation of a deposit as the authenticated request path recorded it (`deposit_confirmations`, migration
 * 026): who confirmed (`actor`: the payer holding the deposit's page token, or the merchant whose confirm_payments
 * verified; `merchant_id` and `user_id` of the latter), from where, when; which activity took it and what was
 * decided. Kept for the deposit's timeline.
 */
export interface DepositConfirmationRecord {
  id: string;
  deposit_reference: string;
  method: ConfirmationMethod;
  actor: 'payer' | 'merchant';
  merchant_id: string | null;
  user_id: string | null;
  client_address: string | null;
  recorded_at: Date;
  used_by: string | null;
  used_at: Date | null;
  outcome: ConfirmationOutcome | null;
  authorization_id: string | null;
  decided_at: Date | null;
}

const CONFIRMATION_ID_PATTERN = /^dcf_[A-Za-z0-9_-]{32}$/;

function toConfirmation(row: DepositConfirmationRecord & { user_id: string | bigint | null }): DepositConfirmationRecord {
  return { ...row, user_id: row.user_id === null ? null : String(row.user_id) };
}

/**
 * Records a confirmation of `deposit_reference` received by the authenticated request path, before its Update is
 * sent. @returns its id (`dcf_` + 32 base64url characters), which the Update names
 */
export async function recordConfirmation(
  db: Knex | Knex.Transaction,
  input: Pick<DepositConfirmationRecord, 'deposit_reference' | 'method' | 'actor'> & Partial<Pick<DepositConfirmationRecord, 'merchant_id' | 'user_id' | 'client_address'>>,
): Promise<string> {
  const id = `dcf_${randomToken(24)}`;
  await db('deposit_confirmations').insert({
    id,
    deposit_reference: input.deposit_reference,
    method: input.method,
    actor: input.actor,
    merchant_id: input.merchant_id ?? null,
    user_id: input.user_id ?? null,
    client_address: input.client_address ?? null,
  });
  return id;
}

/**
 * Takes the recorded confirmation `id` of this deposit and method for the activity `taker`: one nobody took yet, or
 * one this same activity took before (its retry). @returns the record, or undefined when there is none to take
 */
export async function takeConfirmation(
  db: Knex | Knex.Transaction,
  input: { id: string; deposit_reference: string; method: ConfirmationMethod; taker: string },
): Promise<DepositConfirmationRecord | undefined> {
  if (typeof input.id !== 'string' || !CONFIRMATION_ID_PATTERN.test(input.id)) return undefined;
  const [row] = await db('deposit_confirmations')
    .where({ id: input.id, deposit_reference: input.deposit_reference, method: input.method })
    .andWhere((query) => void query.whereNull('used_by').orWhere({ used_by: input.taker }))
    .update({ used_by: input.taker, used_at: db.raw('coalesce(used_at, now())') })
    .returning('*');
  return row ? toConfirmation(row) : undefined;
}

/** Records what was decided on a taken confirmation (and the acquirer's authorization id, if any). */
export async function decideConfirmation(
  db: Knex | Knex.Transaction,
  id: string,
  decision: { outcome: ConfirmationOutcome; authorization_id?: string | null },
): Promise<void> {
  await db('deposit_confirmations')
    .where({ id })
    .update({ outcome: decision.outcome, authorization_id: decision.authorization_id ?? null, decided_at: db.fn.now() });
}

/** The confirmation `id` of this deposit, else undefined. */
export async function findConfirmation(db: Knex | Knex.Transaction, id: string, deposit_reference: string): Promise<DepositConfirmationRecord | undefined> {
  if (typeof id !== 'string' || !CONFIRMATION_ID_PATTERN.test(id)) return undefined;
  const row = await db('deposit_confirmations').where({ id, deposit_reference }).first();
  return row ? toConfirmation(row) : undefined;
}

/** How many confirmations of the deposit were decided `outcome`. */
export async function countConfirmations(db: Knex | Knex.Transaction, deposit_reference: string, outcome: ConfirmationOutcome): Promise<number> {
  const row = (await db('deposit_confirmations').where({ deposit_reference, outcome }).count({ n: '*' }).first()) as { n: string | number } | undefined;
  return Number(row?.n ?? 0);
}

/**
 * The ledger account a completed deposit credited (or credits): the preorder's seller (`sellerAccountId`), else the
 * depositing user's wallet; undefined when that user is gone. The completion and a refund of the deposit read the
 * same account.
 * @throws DomainError SELLER_NOT_FOUND when the preorder's seller no longer resolves
 */
export async function creditedAccountId(
  deps: PlatformDeps,
  deposit: Pick<Deposit, 'user_id' | 'currency'>,
  preorder: { merchant_id: string; seller_code: string } | undefined,
): Promise<string | undefined> {
  if (preorder) return sellerAccountId(deps, preorder.merchant_id, preorder.seller_code, deposit.currency);
  const user = deposit.user_id ? await getUser(deps.database, deposit.user_id) : undefined;
  return user?.wallet_account_id;
}
