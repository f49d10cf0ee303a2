/**
 * The ledger's storage port, as Formance's ledger controller speaks to its store: every read, lock and write the
 * operations need, in the ledger's words. postgres-store.ts implements it and holds every SQL statement of the
 * ledger; the kernel (kernel.ts) and the operations hold the rules and speak only to this interface.
 *
 * Each write is one statement that claims the idempotency key and, only when it did, writes the result and updates
 * the balances; it reports what it did as a `WriteOutcome`. Amounts are minor units.
 */
import type { Knex } from 'knex';
import type { Currency } from '../money';
import type { AccountRow, Balances, KeyRow, Operation, PendingRow } from './rows';
import type { AccountAddress, AccountOwnerType, LedgerAlso, LedgerEntry, LedgerJoin, LedgerTransaction } from './types';

/** The idempotency key a write claims, with the fingerprint of its request. */
export interface KeyClaim {
  idempotency_key: string;
  operation: Operation;
  request_fingerprint: string;
}

/** A change of one locked account's balances, in minor units (either part may be 0). */
export interface BalanceChange {
  account_id: string;
  posted_units: bigint;
  held_units: bigint;
}

/** A posting to write, with its account's currency. */
export interface NewPosting {
  account_id: string;
  amount_units: bigint;
  currency: Currency;
}

/** A posting with its account's posted balance right after it (minor units), as the store records it. */
export interface RecordedPosting extends NewPosting {
  balance_after_units: bigint;
}

/** An account's balances as a lock read them, with its currency. */
export type LockedBalances = Balances & { currency: Currency };

export interface NewTransaction {
  id: string;
  description: string;
  metadata: Record<string, unknown>;
  postings: RecordedPosting[];
}

export interface NewPending {
  id: string;
  debit_account_id: string;
  credit_account_id: string;
  currency: Currency;
  amount_units: bigint;
  /** expires_at = the database's now() plus this; null: never expires. */
  timeout_seconds: number | null;
  description: string;
  metadata: Record<string, unknown>;
}

/**
 * What a write statement did. `claimed` false: another request holds the key (nothing was written). Claimed: the
 * result it wrote (undefined only if the statement is broken) and every account balance its update left.
 */
export interface WriteOutcome<R> {
  claimed: boolean;
  result: R | undefined;
  balances: Balances[];
}

/** A pending transfer as its lock read it: `expired` by the database's clock. */
export type LockedPending = PendingRow & { expired: boolean };

/** What the ledger check found wrong, at most 20 of each; amounts as decimal text. */
export interface CheckFindings {
  accounts: number;
  entries: number;
  currency_sums: Array<{ currency: string; total: string }>;
  unbalanced_transactions: Array<{ transaction_id: string; currency: string; total: string }>;
  posted_mismatches: Array<{ id: string; posted: string; summed: string }>;
  below_zero: Array<{ id: string; currency: string; available: string }>;
  held_mismatches: Array<{ id: string; held: string; open: string }>;
  balance_after_mismatches: Array<{ posting_id: string; account_id: string; recorded: string; running: string }>;
}

export interface LedgerStore {
  /**
   * Runs `work` atomically on a store bound to its transaction: a new one, or the caller's `trx` joined in a
   * savepoint (a failure leaves it usable and unchanged) or directly (`direct`: the caller rolls back on failure).
   */
  atomically<T>(trx: Knex.Transaction | undefined, join: LedgerJoin, work: (store: LedgerStore) => Promise<T>): Promise<T>;
  /** This store on the caller's transaction (or on the pool without one), for reads and single statements. */
  within(trx: Knex.Transaction | undefined): LedgerStore;

  /** Inserts the account; undefined when one exists at its address. */
  insertAccount(address: AccountAddress & { allows_negative: boolean }): Promise<AccountRow | undefined>;
  findAccount(address: AccountAddress): Promise<AccountRow | undefined>;
  /**
   * The accounts at `addresses` that exist, in one statement (in no particular order); `lock`: each row locked FOR
   * UPDATE in id order, as lockAccounts locks them (only inside a transaction).
   */
  findAccounts(addresses: readonly AccountAddress[], lock?: boolean): Promise<AccountRow[]>;
  readAccount(id: string): Promise<AccountRow | undefined>;
  accountsOf(owner_type: AccountOwnerType, owner_id: string): Promise<AccountRow[]>;
  /** Locks the accounts with these ids (uuids) in id order, the one order every writer locks in; those found. */
  lockAccounts(ids: readonly string[]): Promise<AccountRow[]>;
  /** Locks a pending transfer and, while it is pending, both its accounts in id order, in one statement. */
  lockPending(id: string): Promise<{ pending: LockedPending; accounts: Balances[] } | undefined>;

  readKey(idempotency_key: string): Promise<KeyRow | undefined>;
  readTransaction(id: string): Promise<LedgerTransaction | undefined>;
  readPending(id: string): Promise<PendingRow | undefined>;

  /**
   * A transfer locked, checked and written in one statement, when it can be: locks the accounts of `postings` in id
   * order, and only when every one exists, the postings sum to zero per currency and no account that may not go
   * negative would go below zero, claims the key and writes the transaction, its postings (each with its account's
   * posted balance after it, computed from the locked balance) and the balance changes. `locked`: the accounts as
   * the lock read them (all of them, written or not). Not claimed: nothing was written, and the caller decides why
   * (refusal, replay or conflict) with the separate steps; the locks stay held until its transaction ends.
   * `also`: the caller's rows (LedgerAlso's parts) in the same statement; with them, a statement that does not claim
   * the key raises SQLSTATE `PD001` (DECLINED_STATEMENT), so that none of them is written either (a caller's row
   * refused by a unique index raises its own error, as always). For a statement run on its own, outside a transaction.
   */
  tryTransfer(
    claim: KeyClaim,
    transaction: Omit<NewTransaction, 'postings'>,
    postings: ReadonlyArray<{ account_id: string; amount_units: bigint }>,
    also?: ReadonlyArray<{ sql: string; bindings: unknown[] }>,
  ): Promise<{ locked: LockedBalances[]; outcome: WriteOutcome<{ id: string; created_at: Date }> }>;
  /** With `also`: the caller's rows in the same statement (LedgerAlso), marked written when it ran. */
  writeTransfer(claim: KeyClaim, transaction: NewTransaction, changes: BalanceChange[], also?: LedgerAlso): Promise<WriteOutcome<{ id: string; created_at: Date }>>;
  writeCreatePending(claim: KeyClaim, pending: NewPending, changes: BalanceChange[]): Promise<WriteOutcome<PendingRow>>;
  /** Moves a pending transfer to `posted` (with its transaction) or `voided`, only from `pending`. */
  writeResolvePending(
    claim: KeyClaim,
    resolution: { pending_transfer_id: string; state: 'posted' | 'voided'; transaction?: NewTransaction },
    changes: BalanceChange[],
  ): Promise<WriteOutcome<PendingRow>>;

  /** The id of the account's first posting in this transaction; undefined when it has none there. */
  firstPostingOf(account_id: string, transaction_id: string): Promise<bigint | undefined>;
  /** The account's entries newest first, those before a posting id when given. */
  entries(account_id: string, page: { before_posting_id?: bigint; limit: number }): Promise<LedgerEntry[]>;
  checkFindings(): Promise<CheckFindings>;
}

/** The SQLSTATE a one-statement write with the caller's rows raises when it wrote nothing (migration 073). */
export const DECLINED_STATEMENT = 'PD001';

