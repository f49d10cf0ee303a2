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
 * Errors: each `Ledger` method lists with `@throws` every DomainError reason it fails with (the reasons of
 * `LEDGER_REASONS` in reasons.ts, and VALIDATION_FAILED of `COMMON_REASONS` for a malformed field);
 * test/integration/ledger.test.ts drives each listed one and fails when a list and its drivers differ. A failure
 * that is not a DomainError is a broken invariant (an assertion) or an outside fault (the database), never the
 * caller's input.
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

/** The kinds of the platform's own accounts: one account of each per currency, owned by "platform". */
export type PlatformAccountKind = Extract<AccountKind, 'fee_revenue' | 'settlement' | 'holds'>;

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

/**
 * A posting to the platform's own account of a kind and currency, named instead of its id: the ledger resolves it
 * (opening the account on first use, as `platformAccount` does) and posts to the id. Never both a name and an id.
 */
export interface PlatformPosting {
  platform: PlatformAccountKind;
  currency: Currency;
  /** Signed minor units: + credits the account, − debits it. Never 0. */
  amount_units: bigint;
  account_id?: never;
}

/** The platform's own account of a kind and currency, named instead of its id (opened on first use). */
export interface PlatformAccountName {
  platform: PlatformAccountKind;
  currency: Currency;
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
  /**
   * The account's posted balance right after this posting, in minor units: what a payment's timeline shows beside
   * it. Null for postings written before the ledger recorded it.
   */
  balance_after_units: bigint | null;
  currency: Currency;
  description: string;
  /** Its transaction's idempotency key: the flows key theirs `<payment reference>:<step>`. */
  idempotency_key: string;
  created_at: Date;
}

export interface LedgerCheck {
  ok: boolean;
  accounts: number;
  entries: number;
  /**
   * Human-readable problems: a currency or transaction not summing to zero, a balance differing from its postings,
   * a wallet below zero, a hold mismatch, a recorded balance after a posting differing from the running sum.
   */
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
 * Rows of the caller's to write in the same statement as a transfer's postings (one round trip fewer each): common
 * table expressions (`name AS (INSERT … | UPDATE …)`, their `?` bindings in order) that read nothing of the
 * ledger's. Only with the caller's transaction joined `direct`. The ledger sets `written` when the statement that
 * included them ran; a transfer answered from its key (a replay) or refused does not write them, and the caller
 * then writes them itself.
 */
export interface LedgerAlso {
  /** The id (a uuid) the transfer's transaction is written with, so the caller's rows can name it. */
  transaction_id: string;
  parts: Array<{ sql: string; bindings: unknown[] }>;
  written: boolean;
}


/** What identifies an account: one per owner, currency and kind. */
export interface AccountAddress {
  owner_type: AccountOwnerType;
  owner_id: string;
  currency: Currency;
  kind: AccountKind;
}

/**
 * `trx` lets a capability write its own rows in the same database transaction as the posting; `join` says how
 * (default `savepoint`). The errors each method lists are DomainErrors; a refused write changes nothing.
 */
export interface Ledger extends LedgerKeyReads {
  /**
   * Opens the account, or returns the existing one for the same (owner_type, owner_id, currency, kind).
   * @throws {DomainError} VALIDATION_FAILED an unknown owner_type, currency or kind, or an owner_id not of 1 to 200 characters.
   */
  openAccount(input: AccountAddress, trx?: Knex.Transaction): Promise<Account>;
  /**
   * One account by id, with its balances.
   * @throws {DomainError} ACCOUNT_NOT_FOUND no account has this id (or it is not a uuid).
   */
  getAccount(account_id: string, trx?: Knex.Transaction): Promise<Account>;
  /**
   * The account at this address, or undefined when none is open.
   * @throws {DomainError} VALIDATION_FAILED as openAccount.
   */
  findAccount(input: AccountAddress, trx?: Knex.Transaction): Promise<Account | undefined>;
  /** Accounts of one owner (every currency and kind); none for an unknown owner. Fails with no DomainError. */
  accountsOf(owner_type: AccountOwnerType, owner_id: string, trx?: Knex.Transaction): Promise<Account[]>;
  /**
   * The platform's account of a kind and currency (fee_revenue, settlement, holds), opened on first use.
   * @throws {DomainError} VALIDATION_FAILED an unknown kind or currency.
   */
  platformAccount(kind: PlatformAccountKind, currency: Currency, trx?: Knex.Transaction): Promise<Account>;

  /**
   * Posts a balanced set of postings atomically; each posting records its account's posted balance after it. A
   * posting names its account by id (`Posting`) or, for one of the platform's, by kind and currency
   * (`PlatformPosting`): once the input passes its checks, each such name is resolved to its account's id (found, or
   * opened on first use in the caller's transaction when one is given, as `platformAccount` opens it) before the
   * request is fingerprinted, so a request naming an account and one giving its id are the same request for the
   * idempotency key. The transaction returned lists every posting by account id. (A platform account opened for a
   * transfer refused under its locks stays open, empty.)
   * @throws {DomainError} VALIDATION_FAILED idempotency_key not of 1 to 200 characters, description over 500, metadata not an object; a platform posting's kind not fee_revenue, settlement or holds, its currency unknown, or an account_id beside it.
   * @throws {DomainError} UNBALANCED_POSTINGS fewer than 2 or more than 50 postings, or postings not summing to zero per currency.
   * @throws {DomainError} INVALID_AMOUNT a posting's amount_units not a bigint, 0, or beyond ±10^15.
   * @throws {DomainError} ACCOUNT_NOT_FOUND a posting's account does not exist (every missing one is named).
   * @throws {DomainError} INSUFFICIENT_FUNDS a non-negative account's available balance would drop below zero.
   * @throws {DomainError} IDEMPOTENCY_CONFLICT the key was used for another request (of any write).
   */
  transfer(
    input: { idempotency_key: string; description: string; postings: Array<Posting | PlatformPosting>; metadata?: Record<string, unknown> },
    trx?: Knex.Transaction,
    join?: LedgerJoin,
    also?: LedgerAlso,
  ): Promise<LedgerTransaction>;

  /**
   * `transfer` in one statement, its own implicit transaction on the pool (one round trip), with the caller's rows
   * `also` (LedgerAlso's common table expressions, naming the transaction by `also.transaction_id`) written in that
   * statement. It writes only what `transfer` would write at once, and only all of it: when the postings would be
   * refused (a missing account, unbalanced, insufficient funds), the key was used before (a replay or a conflict), or
   * a caller's row is refused (a unique key already held), nothing at all is written and it answers undefined; the
   * caller then makes the request the usual way (`transfer` in its transaction), which gives the answer.
   * @returns the transaction, or undefined when nothing was written.
   * @throws {DomainError} VALIDATION_FAILED as transfer (checked before anything is written).
   * @throws {DomainError} UNBALANCED_POSTINGS fewer than 2 or more than 50 postings (the sums are checked under the locks: undefined).
   * @throws {DomainError} INVALID_AMOUNT as transfer.
   */
  transferAtOnce(
    input: { idempotency_key: string; description: string; postings: Array<Posting | PlatformPosting>; metadata?: Record<string, unknown> },
    also?: Pick<LedgerAlso, 'transaction_id' | 'parts'>,
  ): Promise<LedgerTransaction | undefined>;

  /**
   * Places a hold of `amount_units` on the debit account (reduces its available balance); `timeout_seconds` sets
   * `expires_at`. Each account is named by id or by address (`debit_account`, `credit_account`; the platform's by kind
   * and currency): an address is resolved to its account's id (found, or opened on first use in the caller's
   * transaction when one is given) before the request is fingerprinted, so naming an account and giving its id are
   * the same request for the idempotency key. Both named inside the caller's transaction, the statement that finds
   * them also locks them (in id order), one round trip fewer. `id`: the pending transfer's id, chosen by a caller that records it in its own row before the hold
   * (so that nothing is left to write while the accounts are locked); absent, the ledger picks one. A repeat of the
   * key answers the first hold, whatever id it names (the id is not part of the request's fingerprint).
   * @throws {DomainError} VALIDATION_FAILED idempotency_key, description or metadata as transfer; timeout_seconds not a positive whole number; the credit account the debit account; id not a uuid; an account named both by id and by address; an address as openAccount refuses it, a platform account's kind not fee_revenue, settlement or holds.
   * @throws {DomainError} INVALID_AMOUNT amount_units not a bigint, not above 0, or above 10^15.
   * @throws {DomainError} ACCOUNT_NOT_FOUND the debit or credit account does not exist.
   * @throws {DomainError} CURRENCY_MISMATCH the two accounts hold different currencies.
   * @throws {DomainError} INSUFFICIENT_FUNDS a non-negative debit account has less than amount_units available.
   * @throws {DomainError} IDEMPOTENCY_CONFLICT the key was used for another request.
   */
  createPendingTransfer(
    input: {
      idempotency_key: string;
      /** The debit account by id; or `debit_account`, by its address. */
      debit_account_id?: string;
      debit_account?: AccountAddress;
      /** The credit account by id; or `credit_account`, by its address or as the platform's account of a kind. */
      credit_account_id?: string;
      credit_account?: AccountAddress | PlatformAccountName;
      amount_units: bigint;
      timeout_seconds?: number;
      description: string;
      metadata?: Record<string, unknown>;
      id?: string;
    },
    trx?: Knex.Transaction,
    join?: LedgerJoin,
  ): Promise<PendingTransfer>;
  /**
   * Posts the full held amount: debit → credit, hold released. Exactly once; repeats with the same key return it.
   * @throws {DomainError} VALIDATION_FAILED idempotency_key not of 1 to 200 characters.
   * @throws {DomainError} PENDING_TRANSFER_NOT_FOUND no pending transfer has this id.
   * @throws {DomainError} PENDING_TRANSFER_ALREADY_POSTED it was posted (under another key).
   * @throws {DomainError} PENDING_TRANSFER_ALREADY_VOIDED it was voided.
   * @throws {DomainError} PENDING_TRANSFER_EXPIRED its expires_at has passed (by the database's clock); voiding stays allowed.
   * @throws {DomainError} IDEMPOTENCY_CONFLICT the key was used for another request.
   */
  postPendingTransfer(
    input: { pending_transfer_id: string; idempotency_key: string },
    trx?: Knex.Transaction,
    join?: LedgerJoin,
  ): Promise<PendingTransfer>;
  /**
   * Releases the hold without moving money. Exactly once; repeats with the same key return it.
   * @throws {DomainError} VALIDATION_FAILED idempotency_key not of 1 to 200 characters.
   * @throws {DomainError} PENDING_TRANSFER_NOT_FOUND no pending transfer has this id.
   * @throws {DomainError} PENDING_TRANSFER_ALREADY_POSTED it was posted.
   * @throws {DomainError} PENDING_TRANSFER_ALREADY_VOIDED it was voided (under another key).
   * @throws {DomainError} IDEMPOTENCY_CONFLICT the key was used for another request.
   */
  voidPendingTransfer(
    input: { pending_transfer_id: string; idempotency_key: string },
    trx?: Knex.Transaction,
    join?: LedgerJoin,
  ): Promise<PendingTransfer>;
  /**
   * One pending transfer by id, in whatever state.
   * @throws {DomainError} PENDING_TRANSFER_NOT_FOUND no pending transfer has this id.
   */
  getPendingTransfer(pending_transfer_id: string, trx?: Knex.Transaction): Promise<PendingTransfer>;

  /**
   * An account's entries, newest first; `limit` (default 100) at most 500, `before_transaction_id` pages on.
   * @throws {DomainError} ACCOUNT_NOT_FOUND no account has this id.
   * @throws {DomainError} VALIDATION_FAILED limit not a whole number from 1, or before_transaction_id not a transaction of this account.
   */
  entriesOf(account_id: string, options?: { limit?: number; before_transaction_id?: string }): Promise<LedgerEntry[]>;
  /**
   * Every currency and transaction sums to zero, every balance equals its postings, no non-negative account below
   * zero, held amounts match open pending transfers, every recorded balance after a posting matches the running
   * sum. Fails with no DomainError.
   */
  check(): Promise<LedgerCheck>;
}

/**
 * Which ledger records a read by business key finds: those whose idempotency key is one of `keys`, or starts with one
 * of `prefixes` (taken literally: `%` and `_` match only themselves). Every flow keys its ledger writes
 * `<reference>:<step>` (docs/architecture.md "One business key"), so `{ keys: [ref], prefixes: [`${ref}:`] }` finds
 * all of a payment's.
 */
export interface LedgerKeyMatch {
  keys?: readonly string[];
  prefixes?: readonly string[];
}

/** A ledger transaction found by its key, without its postings (`postingsOf` reads them). */
export interface KeyedTransaction {
  transaction_id: string;
  idempotency_key: string;
  description: string;
  metadata: Record<string, unknown>;
  created_at: Date;
}

/** A posting with its account's owner and kind, and the account's posted balance right after it (minor units). */
export interface OwnedPosting {
  transaction_id: string;
  account_id: string;
  owner_type: AccountOwnerType;
  owner_id: string;
  kind: AccountKind;
  /** Signed minor units: + credits the account, − debits it. */
  amount_units: bigint;
  currency: Currency;
  /** Null for postings written before the ledger recorded it. */
  balance_after_units: bigint | null;
}

/** A hold (pending transfer) found by its key, with when it was posted or voided. */
export interface KeyedHold {
  pending_transfer_id: string;
  idempotency_key: string;
  /** Minor units, > 0. */
  amount_units: bigint;
  currency: Currency;
  state: PendingTransferState;
  description: string;
  created_at: Date;
  /** When it left `pending`; null while it is pending. */
  resolved_at: Date | null;
}

/**
 * The ledger's reads by business key and by id, for the flows, reconciliation and a payment's timeline: the only way
 * a module outside src/ledger reads what the ledger recorded (test/unit/ledger-tables.test.ts holds every other
 * module to it). Each takes the caller's transaction `trx` to read inside it. None fails with a DomainError: an
 * empty match, an over-long key or prefix (over 200 characters, longer than any key) and an id that is not a uuid
 * find nothing.
 */
export interface LedgerKeyReads {
  /** The transactions the match finds, oldest first (then by key); at most `limit` (default and most 1000). */
  transactionsByKey(match: LedgerKeyMatch, options?: { limit?: number }, trx?: Knex.Transaction): Promise<KeyedTransaction[]>;
  /** Every posting of these transactions, in the order they were written. */
  postingsOf(transaction_ids: readonly string[], trx?: Knex.Transaction): Promise<OwnedPosting[]>;
  /** The holds the match finds, oldest first; at most `limit` (default and most 1000). */
  holdsByKey(match: LedgerKeyMatch, options?: { limit?: number }, trx?: Knex.Transaction): Promise<KeyedHold[]>;
  /** The idempotency keys among `keys` that a ledger write (of any kind) has claimed. */
  usedKeys(keys: readonly string[], trx?: Knex.Transaction): Promise<Set<string>>;
  /** The ids among `transaction_ids` that name no ledger transaction (a string that is not a uuid names none). */
  missingTransactions(transaction_ids: readonly string[], trx?: Knex.Transaction): Promise<Set<string>>;
}
