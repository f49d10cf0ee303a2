/**
 * The ledger contract every capability posts to (platform decisions §3). Double-entry, in PostgreSQL,
 * modelled on TigerBeetle's two-phase transfers: pending (a hold) → posted or voided, exactly once.
 *
 * Sign convention: a posting's `amount_units` is signed from the account holder's view: positive credits the
 * account (its balance grows), negative debits it. The postings of one transaction sum to zero per currency.
 *
 * Balances: `posted_units` = sum of posted postings; `held_units` = sum of open pending transfers debiting the
 * account; `available_units` = posted − held. Accounts with `allows_negative` false (wallets, partner floats)
 * never reach available < 0; accounts that stand for outside money (settlement) may go negative.
 *
 * Every write takes an `idempotency_key`: the same key with the same request returns the first result; the same
 * key with a different request throws DomainError reason IDEMPOTENCY_CONFLICT.
 *
 * Errors (DomainError reasons): ACCOUNT_NOT_FOUND, CURRENCY_MISMATCH, INSUFFICIENT_FUNDS, UNBALANCED_POSTINGS,
 * INVALID_AMOUNT, IDEMPOTENCY_CONFLICT, PENDING_TRANSFER_NOT_FOUND, PENDING_TRANSFER_ALREADY_POSTED,
 * PENDING_TRANSFER_ALREADY_VOIDED, PENDING_TRANSFER_EXPIRED.
 */
import type { Knex } from 'knex';
import type { Currency } from '../money';

export type AccountOwnerType = 'platform' | 'partner' | 'merchant' | 'user';

/**
 * wallet: a user's or merchant's money (never negative). partner_float: a partner's prefunded float (never
 * negative). fee_revenue: the platform's fees and commissions. settlement: money outside the platform (an
 * upstream provider, an acquirer, a bank) — may go negative. holds: the platform's escrow for blocked money.
 */
export type AccountKind = 'wallet' | 'partner_float' | 'fee_revenue' | 'settlement' | 'holds';

export interface Account {
  id: string; // uuid
  owner_type: AccountOwnerType;
  owner_id: string; // the owner's id (user id, merchant id, partner id; "platform" for the platform)
  currency: Currency;
  kind: AccountKind;
  allows_negative: boolean;
  posted_units: bigint;
  held_units: bigint;
  available_units: bigint;
  created_at: Date;
}

export interface Posting {
  account_id: string;
  /** Signed minor units: + credits the account, − debits it. Never 0. */
  amount_units: bigint;
}

export interface LedgerTransaction {
  id: string; // uuid
  idempotency_key: string;
  description: string;
  postings: Array<Posting & { currency: Currency }>;
  metadata: Record<string, unknown>;
  created_at: Date;
}

export type PendingTransferState = 'pending' | 'posted' | 'voided';

export interface PendingTransfer {
  id: string; // uuid
  idempotency_key: string;
  debit_account_id: string;
  credit_account_id: string;
  currency: Currency;
  amount_units: bigint; // > 0
  state: PendingTransferState;
  /** When set, posting after this instant throws PENDING_TRANSFER_EXPIRED (voiding stays allowed). */
  expires_at: Date | null;
  /** The transaction written when the transfer was posted. */
  posted_transaction_id: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
}

export interface LedgerEntry {
  transaction_id: string;
  account_id: string;
  amount_units: bigint;
  currency: Currency;
  description: string;
  created_at: Date;
}

export interface LedgerCheck {
  ok: boolean;
  accounts: number;
  entries: number;
  /** Human-readable problems: a currency not summing to zero, a wallet below zero, a hold mismatch. */
  imbalances: string[];
}

/**
 * How a write given the caller's transaction `trx` joins it. `savepoint` (the default): inside a savepoint, so a
 * failure leaves the caller's transaction usable and unchanged. `direct`: in the caller's transaction itself, two
 * statements (SAVEPOINT, RELEASE) fewer, for a caller that rolls its whole transaction back on any failure of the
 * write.
 */
export type LedgerJoin = 'savepoint' | 'direct';

/**
 * `trx` lets a capability write its own rows in the same database transaction as the posting; `join` says how
 * (default `savepoint`).
 */
export interface Ledger {
  /** Opens the account, or returns the existing one for the same (owner_type, owner_id, currency, kind). */
  openAccount(
    input: { owner_type: AccountOwnerType; owner_id: string; currency: Currency; kind: AccountKind },
    trx?: Knex.Transaction,
  ): Promise<Account>;
  getAccount(account_id: string, trx?: Knex.Transaction): Promise<Account>;
  findAccount(
    input: { owner_type: AccountOwnerType; owner_id: string; currency: Currency; kind: AccountKind },
    trx?: Knex.Transaction,
  ): Promise<Account | undefined>;
  /** Accounts of one owner (every currency and kind). */
  accountsOf(owner_type: AccountOwnerType, owner_id: string, trx?: Knex.Transaction): Promise<Account[]>;
  /** The platform's account of a kind and currency (fee_revenue, settlement, holds), opened on first use. */
  platformAccount(kind: 'fee_revenue' | 'settlement' | 'holds', currency: Currency, trx?: Knex.Transaction): Promise<Account>;

  /** Posts a balanced set of postings atomically. */
  transfer(
    input: { idempotency_key: string; description: string; postings: Posting[]; metadata?: Record<string, unknown> },
    trx?: Knex.Transaction,
    join?: LedgerJoin,
  ): Promise<LedgerTransaction>;

  /** Places a hold of `amount_units` on the debit account (reduces its available balance). */
  createPendingTransfer(
    input: {
      idempotency_key: string;
      debit_account_id: string;
      credit_account_id: string;
      amount_units: bigint;
      timeout_seconds?: number;
      description: string;
      metadata?: Record<string, unknown>;
    },
    trx?: Knex.Transaction,
    join?: LedgerJoin,
  ): Promise<PendingTransfer>;
  /** Posts the full held amount: debit → credit, hold released. Exactly once; repeats with the same key return it. */
  postPendingTransfer(
    input: { pending_transfer_id: string; idempotency_key: string },
    trx?: Knex.Transaction,
    join?: LedgerJoin,
  ): Promise<PendingTransfer>;
  /** Releases the hold without moving money. Exactly once. */
  voidPendingTransfer(
    input: { pending_transfer_id: string; idempotency_key: string },
    trx?: Knex.Transaction,
    join?: LedgerJoin,
  ): Promise<PendingTransfer>;
  getPendingTransfer(pending_transfer_id: string, trx?: Knex.Transaction): Promise<PendingTransfer>;

  /** Newest first; `limit` at most 500. */
  entriesOf(account_id: string, options?: { limit?: number; before_transaction_id?: string }): Promise<LedgerEntry[]>;
  /** Every currency sums to zero, no non-negative account below zero, held amounts match open pending transfers. */
  check(): Promise<LedgerCheck>;
}
