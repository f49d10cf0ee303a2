/**
 * The ledger's store on PostgreSQL: every SQL statement of the ledger (store.ts is the port it implements; the rules
 * live in kernel.ts and the operations).
 *
 * - Locks: accounts with `SELECT … ORDER BY id FOR UPDATE` (one fixed order), a pending transfer before its
 *   accounts, so concurrent writers to one hot account queue up instead of deadlocking or losing updates.
 * - A write is one statement of common table expressions: `k` inserts the idempotency key (`ON CONFLICT DO
 *   NOTHING`) and every other part runs only `WHERE EXISTS (SELECT 1 FROM k)`; `b` applies the balance changes and
 *   returns the balances it left; `t` and `p` write a transaction and its postings, each posting with its account's
 *   posted balance after it (the kernel computes it from the locked balance and asserts that `b` left the same);
 *   `r` writes a pending transfer. The statement answers one row: whether it
 *   claimed the key, its result and the balances `b` left.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Currency } from '../money';
import type { AccountRow, Balances, KeyRow, PendingRow } from './rows';
import type {
  BalanceChange,
  CheckFindings,
  KeyClaim,
  LedgerStore,
  LockedBalances,
  LockedPending,
  NewPending,
  NewTransaction,
  WriteOutcome,
} from './store';
import type { AccountAddress, AccountOwnerType, LedgerAlso, LedgerEntry, LedgerJoin, LedgerTransaction } from './types';

type Conn = Knex | Knex.Transaction;

/** One common table expression of a write: its SQL (with `?` placeholders) and their values, joined by `write`. */
interface Part {
  sql: string;
  bindings: unknown[];
}

function part(sql: string, bindings: unknown[]): Part {
  return { sql, bindings };
}

/** A PostgreSQL array literal of simple tokens (uuids, integers, currency codes). */
function pgArray(values: readonly string[]): string {
  return `{${values.join(',')}}`;
}

/** A PostgreSQL text[] literal of any strings: each element quoted, its quotes and backslashes escaped. */
function pgTextArray(values: readonly string[]): string {
  return `{${values.map((value) => `"${value.replace(/[\\"]/g, (character) => `\\${character}`)}"`).join(',')}}`;
}

/** JSON for a jsonb column; bigints become strings. */
function jsonb(value: Record<string, unknown>): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
}

/** Accounts' balances aggregated as JSON, amounts as text (int8 beyond 2^53 would not survive a JSON number). */
function balancesJson(alias: string): string {
  return `json_agg(json_build_object('id', ${alias}.id, 'posted_units', ${alias}.posted_units::text,
    'held_units', ${alias}.held_units::text, 'allows_negative', ${alias}.allows_negative))`;
}

interface BalancesJson {
  id: string;
  posted_units: string;
  held_units: string;
  allows_negative: boolean;
}

function balancesOf(json: BalancesJson[] | null): Balances[] {
  return (json ?? []).map((row) => ({
    id: row.id,
    posted_units: BigInt(row.posted_units),
    held_units: BigInt(row.held_units),
    allows_negative: row.allows_negative,
  }));
}

/** One pending transfer by id, with `expired` by the database's clock. */
const PENDING_SELECT = `SELECT *, (expires_at IS NOT NULL AND expires_at <= clock_timestamp()) AS expired
  FROM ledger_pending_transfers WHERE id = ?`;

/** The check's queries, each listing at most 20 problems of one kind. */
const CHECK_QUERIES: { [K in Exclude<keyof CheckFindings, 'accounts' | 'entries'>]: string } = {
  currency_sums: `SELECT currency, sum(posted_units)::text AS total FROM ledger_accounts
    GROUP BY currency HAVING sum(posted_units) <> 0`,
  unbalanced_transactions: `SELECT transaction_id, currency, sum(amount_units)::text AS total FROM ledger_postings
    GROUP BY transaction_id, currency HAVING sum(amount_units) <> 0 LIMIT 20`,
  posted_mismatches: `SELECT a.id, a.posted_units::text AS posted, coalesce(s.total, 0)::text AS summed
    FROM ledger_accounts a
    LEFT JOIN (SELECT account_id, sum(amount_units) AS total FROM ledger_postings GROUP BY account_id) s ON s.account_id = a.id
    WHERE a.posted_units <> coalesce(s.total, 0) LIMIT 20`,
  below_zero: `SELECT id, currency, (posted_units - held_units)::text AS available FROM ledger_accounts
    WHERE NOT allows_negative AND posted_units - held_units < 0 LIMIT 20`,
  held_mismatches: `SELECT a.id, a.held_units::text AS held, coalesce(h.total, 0)::text AS open
    FROM ledger_accounts a
    LEFT JOIN (SELECT debit_account_id, sum(amount_units) AS total FROM ledger_pending_transfers
                WHERE state = 'pending' GROUP BY debit_account_id) h ON h.debit_account_id = a.id
    WHERE a.held_units <> coalesce(h.total, 0) LIMIT 20`,
  // Posting ids grow in the order an account's postings were applied: each writer holds the account's lock from
  // before it inserts until it commits.
  balance_after_mismatches: `SELECT posting_id, account_id, recorded::text, running::text FROM (
      SELECT id::text AS posting_id, account_id, balance_after_units AS recorded,
             sum(amount_units) OVER (PARTITION BY account_id ORDER BY id) AS running
        FROM ledger_postings) s
    WHERE recorded IS NOT NULL AND recorded <> running LIMIT 20`,
};

/** Statement text → its prepared statement's name (bounded: texts vary only with a write's parts). */
const preparedNames = new Map<string, string>();
const PREPARED_LIMIT = 256;

/** The ledger's store over a knex instance (its pool). */
export function createPostgresLedgerStore(database: Knex): LedgerStore {
  return new PostgresLedgerStore(database, database);
}

class PostgresLedgerStore implements LedgerStore {
  constructor(
    private readonly database: Knex,
    private readonly conn: Conn,
  ) {}

  atomically<T>(trx: Knex.Transaction | undefined, join: LedgerJoin, work: (store: LedgerStore) => Promise<T>): Promise<T> {
    const bound = (tx: Knex.Transaction) => work(new PostgresLedgerStore(this.database, tx));
    if (!trx) return this.database.transaction(bound);
    return join === 'direct' ? bound(trx) : trx.transaction(bound);
  }

  within(trx: Knex.Transaction | undefined): LedgerStore {
    return trx ? new PostgresLedgerStore(this.database, trx) : this;
  }

  private async rows<T>(sql: string, bindings: readonly unknown[] = []): Promise<T[]> {
    return ((await this.conn.raw(sql, bindings as Knex.RawBinding[])) as { rows: T[] }).rows;
  }

  /**
   * `rows` as a named prepared statement: each pool connection parses and plans the statement once, not on every
   * transfer (the write's five common table expressions cost PostgreSQL more to parse and plan than to run). The
   * name is a digest of the text, so that each distinct text (the write varies with its parts) has its own.
   */
  private async preparedRows<T>(sql: string, bindings: readonly unknown[]): Promise<T[]> {
    const name = preparedNames.get(sql) ?? `ledger_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
    if (preparedNames.size < PREPARED_LIMIT) preparedNames.set(sql, name);
    return ((await this.conn.raw(sql, bindings as Knex.RawBinding[]).options({ name })) as { rows: T[] }).rows;
  }

  async insertAccount(address: AccountAddress & { allows_negative: boolean }): Promise<AccountRow | undefined> {
    const [row] = await this.rows<AccountRow>(
      `INSERT INTO ledger_accounts (id, owner_type, owner_id, currency, kind, allows_negative)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (owner_type, owner_id, currency, kind) DO NOTHING
       RETURNING *`,
      [randomUUID(), address.owner_type, address.owner_id, address.currency, address.kind, address.allows_negative],
    );
    return row;
  }

  async findAccount(address: AccountAddress): Promise<AccountRow | undefined> {
    const [row] = await this.rows<AccountRow>(
      'SELECT * FROM ledger_accounts WHERE owner_type = ? AND owner_id = ? AND currency = ? AND kind = ?',
      [address.owner_type, address.owner_id, address.currency, address.kind],
    );
    return row;
  }

  findAccounts(addresses: readonly AccountAddress[], lock = false): Promise<AccountRow[]> {
    return this.rows<AccountRow>(
      `SELECT a.* FROM ledger_accounts a
         JOIN unnest(?::text[], ?::text[], ?::text[], ?::text[]) AS w(owner_type, owner_id, currency, kind)
           ON a.owner_type = w.owner_type AND a.owner_id = w.owner_id AND a.currency = w.currency AND a.kind = w.kind
        ${lock ? 'ORDER BY a.id FOR UPDATE OF a' : ''}`,
      [
        pgTextArray(addresses.map((address) => address.owner_type)),
        pgTextArray(addresses.map((address) => address.owner_id)),
        pgTextArray(addresses.map((address) => address.currency)),
        pgTextArray(addresses.map((address) => address.kind)),
      ],
    );
  }

  async readAccount(id: string): Promise<AccountRow | undefined> {
    const [row] = await this.rows<AccountRow>('SELECT * FROM ledger_accounts WHERE id = ?', [id]);
    return row;
  }

  accountsOf(owner_type: AccountOwnerType, owner_id: string): Promise<AccountRow[]> {
    return this.rows<AccountRow>('SELECT * FROM ledger_accounts WHERE owner_type = ? AND owner_id = ? ORDER BY currency, kind', [
      owner_type,
      owner_id,
    ]);
  }

  lockAccounts(ids: readonly string[]): Promise<AccountRow[]> {
    return this.preparedRows<AccountRow>('SELECT * FROM ledger_accounts WHERE id = ANY(?::uuid[]) ORDER BY id FOR UPDATE', [pgArray(ids)]);
  }

  /** `a` is read for its balances, which also makes PostgreSQL run it (it skips a CTE that nothing reads). */
  async lockPending(id: string): Promise<{ pending: LockedPending; accounts: Balances[] } | undefined> {
    const [row] = await this.rows<LockedPending & { accounts: BalancesJson[] | null }>(
      `WITH p AS (${PENDING_SELECT} FOR UPDATE), a AS (
         SELECT ledger_accounts.* FROM ledger_accounts, p
          WHERE ledger_accounts.id IN (p.debit_account_id, p.credit_account_id) AND p.state = 'pending'
          ORDER BY ledger_accounts.id FOR UPDATE OF ledger_accounts
       )
       SELECT p.*, (SELECT ${balancesJson('a')} FROM a) AS accounts FROM p`,
      [id],
    );
    if (!row) return undefined;
    const { accounts, ...pending } = row;
    return { pending, accounts: balancesOf(accounts) };
  }

  async readKey(idempotency_key: string): Promise<KeyRow | undefined> {
    const [row] = await this.rows<KeyRow>('SELECT * FROM ledger_idempotency_keys WHERE idempotency_key = ?', [idempotency_key]);
    return row;
  }

  async readTransaction(id: string): Promise<LedgerTransaction | undefined> {
    const [transaction] = await this.rows<Omit<LedgerTransaction, 'postings'>>(
      'SELECT id, idempotency_key, description, metadata, created_at FROM ledger_transactions WHERE id = ?',
      [id],
    );
    if (!transaction) return undefined;
    const postings = await this.rows<LedgerTransaction['postings'][number]>(
      'SELECT account_id, amount_units, currency FROM ledger_postings WHERE transaction_id = ? ORDER BY id',
      [id],
    );
    return {
      ...transaction,
      metadata: transaction.metadata ?? {},
      postings: postings.map((posting) => ({ ...posting, amount_units: BigInt(posting.amount_units) })),
    };
  }

  async readPending(id: string): Promise<PendingRow | undefined> {
    const [row] = await this.rows<PendingRow>('SELECT * FROM ledger_pending_transfers WHERE id = ?', [id]);
    return row;
  }

  async writeTransfer(claim: KeyClaim, transaction: NewTransaction, changes: BalanceChange[], also?: LedgerAlso): Promise<WriteOutcome<{ id: string; created_at: Date }>> {
    const outcome = await this.write<{ id: string; created_at: Date }>(
      [this.claimKey(claim, { transaction_id: transaction.id }), this.updateBalances(changes), ...this.insertTransaction(claim, transaction), ...(also?.parts ?? [])],
      't',
    );
    if (also) also.written = true;
    return outcome;
  }

  async tryTransfer(
    claim: KeyClaim,
    transaction: Omit<NewTransaction, 'postings'>,
    postings: ReadonlyArray<{ account_id: string; amount_units: bigint }>,
    also: ReadonlyArray<Part> = [],
  ): Promise<{ locked: LockedBalances[]; outcome: WriteOutcome<{ id: string; created_at: Date }> }> {
    const ids = [...new Set(postings.map((posting) => posting.account_id))].sort();
    // `l` locks in id order (LockRows above the sort); `ok` reads all of `l`, and `k` runs only after `ok`, so every
    // lock is taken before anything is written. `b` sets both balances from `l`, not from its own row: the statement's
    // snapshot predates the locks, and PostgreSQL checks the row's CHECK constraint on the version the snapshot sees
    // before it moves to the newest one, so a hold voided while this waited failed as a below-zero balance. `v`: each posting with its account's currency and the posted
    // balance after it (the locked balance plus the account's postings up to it, in the request's order).
    const [row] = await this.preparedRows<{
      claimed: number;
      balances: BalancesJson[] | null;
      id: string | null;
      created_at: Date | null;
      locked: Array<BalancesJson & { currency: Currency }> | null;
    }>(
      `WITH l AS (
         SELECT id, currency, posted_units, held_units, allows_negative FROM ledger_accounts
          WHERE id = ANY(?::uuid[]) ORDER BY id FOR UPDATE),
       v AS (
         SELECT v.a, v.u, v.n, l.currency AS c, (l.posted_units + sum(v.u) OVER (PARTITION BY v.a ORDER BY v.n))::bigint AS r
           FROM unnest(?::uuid[], ?::bigint[]) WITH ORDINALITY AS v(a, u, n) JOIN l ON l.id = v.a),
       ch AS (SELECT a, sum(u)::bigint AS p FROM v GROUP BY a),
       ok AS (
         SELECT 1 WHERE (SELECT count(*) FROM l) = ?
            AND NOT EXISTS (SELECT 1 FROM v GROUP BY c HAVING sum(u) <> 0)
            AND NOT EXISTS (SELECT 1 FROM ch JOIN l ON l.id = ch.a
                             WHERE ch.p < 0 AND NOT l.allows_negative AND l.posted_units - l.held_units + ch.p < 0)),
       k AS (
         INSERT INTO ledger_idempotency_keys (idempotency_key, operation, request_fingerprint, transaction_id)
         SELECT ?, ?, ?, ?::uuid WHERE EXISTS (SELECT 1 FROM ok) ON CONFLICT DO NOTHING RETURNING 1),
       b AS (
         UPDATE ledger_accounts AS a SET posted_units = l.posted_units + ch.p, held_units = l.held_units FROM ch JOIN l ON l.id = ch.a
          WHERE a.id = ch.a AND EXISTS (SELECT 1 FROM k)
         RETURNING a.id, a.posted_units, a.held_units, a.allows_negative),
       t AS (
         INSERT INTO ledger_transactions (id, idempotency_key, request_fingerprint, description, metadata)
         SELECT ?, ?, ?, ?, ?::jsonb WHERE EXISTS (SELECT 1 FROM k) RETURNING id, created_at),
       p AS (
         INSERT INTO ledger_postings (transaction_id, account_id, amount_units, currency, balance_after_units)
         SELECT ?, a, u, c, r FROM v WHERE EXISTS (SELECT 1 FROM k) ORDER BY n)${also.map((each) => `,
       ${each.sql}`).join('')}
       SELECT (SELECT count(*) FROM k)::int AS claimed, (SELECT ${balancesJson('b')} FROM b) AS balances,${
         // The caller's rows cannot all wait for `k` (a unique index claims some of them): unclaimed, the statement
         // raises (migration 073), so that they are not written without the ledger's.
         also.length > 0 ? ' written_or_declined((SELECT count(*) FROM k) = 1) AS written,' : ''
       }
              (SELECT id FROM t) AS id, (SELECT created_at FROM t) AS created_at,
              (SELECT json_agg(json_build_object('id', l.id, 'currency', l.currency, 'posted_units', l.posted_units::text,
                 'held_units', l.held_units::text, 'allows_negative', l.allows_negative)) FROM l) AS locked`,
      [
        pgArray(ids),
        pgArray(postings.map((posting) => posting.account_id)),
        pgArray(postings.map((posting) => posting.amount_units.toString())),
        ids.length,
        claim.idempotency_key,
        claim.operation,
        claim.request_fingerprint,
        transaction.id,
        transaction.id,
        claim.idempotency_key,
        claim.request_fingerprint,
        transaction.description,
        jsonb(transaction.metadata),
        transaction.id,
        ...also.flatMap((each) => each.bindings),
      ],
    );
    const { claimed, balances, id, created_at, locked } = row!;
    return {
      locked: (locked ?? []).map((account) => ({ ...balancesOf([account])[0]!, currency: account.currency })),
      outcome: {
        claimed: claimed === 1,
        result: id === null || created_at === null ? undefined : { id, created_at },
        balances: balancesOf(balances),
      },
    };
  }

  writeCreatePending(claim: KeyClaim, pending: NewPending, changes: BalanceChange[]): Promise<WriteOutcome<PendingRow>> {
    const insert = part(
      `r AS (
         INSERT INTO ledger_pending_transfers
           (id, idempotency_key, debit_account_id, credit_account_id, currency, amount_units, expires_at, description, metadata)
         SELECT ?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?::int), ?, ?::jsonb WHERE EXISTS (SELECT 1 FROM k)
         RETURNING *)`,
      [
        pending.id,
        claim.idempotency_key,
        pending.debit_account_id,
        pending.credit_account_id,
        pending.currency,
        pending.amount_units.toString(),
        pending.timeout_seconds,
        pending.description,
        jsonb(pending.metadata),
      ],
    );
    return this.write([this.claimKey(claim, { pending_transfer_id: pending.id }), this.updateBalances(changes), insert], 'r');
  }

  writeResolvePending(
    claim: KeyClaim,
    resolution: { pending_transfer_id: string; state: 'posted' | 'voided'; transaction?: NewTransaction },
    changes: BalanceChange[],
  ): Promise<WriteOutcome<PendingRow>> {
    const { pending_transfer_id, transaction } = resolution;
    const update = part(
      `r AS (
         UPDATE ledger_pending_transfers SET state = ?, posted_transaction_id = ?::uuid, resolved_at = now()
          WHERE id = ? AND state = 'pending' AND EXISTS (SELECT 1 FROM k)
         RETURNING *)`,
      [resolution.state, transaction?.id ?? null, pending_transfer_id],
    );
    return this.write(
      [
        this.claimKey(claim, { pending_transfer_id, transaction_id: transaction?.id }),
        this.updateBalances(changes),
        ...(transaction ? this.insertTransaction(claim, transaction) : []),
        update,
      ],
      'r',
    );
  }

  /** `k`: claims the key for this request and names the result it writes. */
  private claimKey(claim: KeyClaim, result: { transaction_id?: string; pending_transfer_id?: string }): Part {
    return part(
      `k AS (
         INSERT INTO ledger_idempotency_keys (idempotency_key, operation, request_fingerprint, transaction_id, pending_transfer_id)
         VALUES (?, ?, ?, ?::uuid, ?::uuid) ON CONFLICT DO NOTHING RETURNING 1)`,
      [claim.idempotency_key, claim.operation, claim.request_fingerprint, result.transaction_id ?? null, result.pending_transfer_id ?? null],
    );
  }

  /**
   * `b`: adds each change to its (locked) account and returns the balances it left (for the kernel's
   * postconditions). It sets only the balance columns the write changes: a `held_units + 0` on every transfer
   * measurably cost PostgreSQL CPU.
   */
  private updateBalances(changes: BalanceChange[]): Part {
    const held = changes.some((change) => change.held_units !== 0n);
    const posted = !held || changes.some((change) => change.posted_units !== 0n);
    const sets = [...(posted ? ['posted_units = a.posted_units + v.p'] : []), ...(held ? ['held_units = a.held_units + v.h'] : [])];
    return part(
      `b AS (
         UPDATE ledger_accounts AS a SET ${sets.join(', ')}
           FROM unnest(?::uuid[], ?::bigint[], ?::bigint[]) AS v(i, p, h)
          WHERE a.id = v.i AND EXISTS (SELECT 1 FROM k)
         RETURNING a.id, a.posted_units, a.held_units, a.allows_negative)`,
      [
        pgArray(changes.map((change) => change.account_id)),
        pgArray(changes.map((change) => change.posted_units.toString())),
        pgArray(changes.map((change) => change.held_units.toString())),
      ],
    );
  }

  /** `t` and `p`: the transaction and its postings in their order, each with its account's balance after it. */
  private insertTransaction(claim: KeyClaim, transaction: NewTransaction): Part[] {
    const { postings } = transaction;
    return [
      part(
        `t AS (
           INSERT INTO ledger_transactions (id, idempotency_key, request_fingerprint, description, metadata)
           SELECT ?, ?, ?, ?, ?::jsonb WHERE EXISTS (SELECT 1 FROM k) RETURNING id, created_at)`,
        [transaction.id, claim.idempotency_key, claim.request_fingerprint, transaction.description, jsonb(transaction.metadata)],
      ),
      part(
        `p AS (
           INSERT INTO ledger_postings (transaction_id, account_id, amount_units, currency, balance_after_units)
           SELECT ?, a, u, c, r FROM unnest(?::uuid[], ?::bigint[], ?::text[], ?::bigint[]) WITH ORDINALITY AS v(a, u, c, r, n)
            WHERE EXISTS (SELECT 1 FROM k) ORDER BY n)`,
        [
          transaction.id,
          pgArray(postings.map((posting) => posting.account_id)),
          pgArray(postings.map((posting) => posting.amount_units.toString())),
          pgArray(postings.map((posting) => posting.currency)),
          pgArray(postings.map((posting) => posting.balance_after_units.toString())),
        ],
      ),
    ];
  }

  /**
   * Runs a write's parts as one statement; `result` names the part whose row is the result: a transaction (`t`,
   * its id and time as columns) or a pending transfer (`r`, joined whole).
   */
  private async write<R>(parts: Part[], result: 't' | 'r'): Promise<WriteOutcome<R>> {
    const written = result === 't' ? '(SELECT id FROM t) AS id, (SELECT created_at FROM t) AS created_at' : 'written.*';
    const [row] = await this.preparedRows<{ claimed: number; balances: BalancesJson[] | null; id: string | null }>(
      `WITH ${parts.map((each) => each.sql).join(', ')}
       SELECT (SELECT count(*) FROM k)::int AS claimed, (SELECT ${balancesJson('b')} FROM b) AS balances, ${written}
         ${result === 'r' ? 'FROM (SELECT 1) AS one LEFT JOIN r AS written ON true' : ''}`,
      parts.flatMap((each) => each.bindings),
    );
    const { claimed, balances, ...rest } = row!;
    return { claimed: claimed === 1, result: rest.id === null ? undefined : (rest as R), balances: balancesOf(balances) };
  }

  async firstPostingOf(account_id: string, transaction_id: string): Promise<bigint | undefined> {
    const [row] = await this.rows<{ id: bigint | null }>(
      'SELECT min(id) AS id FROM ledger_postings WHERE account_id = ? AND transaction_id = ?',
      [account_id, transaction_id],
    );
    return row?.id === null || row?.id === undefined ? undefined : BigInt(row.id);
  }

  async entries(account_id: string, page: { before_posting_id?: bigint; limit: number }): Promise<LedgerEntry[]> {
    const before = page.before_posting_id;
    const found = await this.rows<LedgerEntry>(
      `SELECT p.transaction_id, p.account_id, p.amount_units, p.balance_after_units, p.currency, t.description, t.idempotency_key, t.created_at
         FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id
        WHERE p.account_id = ?${before === undefined ? '' : ' AND p.id < ?'}
        ORDER BY p.id DESC LIMIT ?`,
      before === undefined ? [account_id, page.limit] : [account_id, before.toString(), page.limit],
    );
    return found.map((entry) => ({
      ...entry,
      amount_units: BigInt(entry.amount_units),
      balance_after_units: entry.balance_after_units === null ? null : BigInt(entry.balance_after_units),
    }));
  }

  async checkFindings(): Promise<CheckFindings> {
    const [counts] = await this.rows<{ accounts: bigint; entries: bigint }>(
      'SELECT (SELECT count(*) FROM ledger_accounts) AS accounts, (SELECT count(*) FROM ledger_postings) AS entries',
    );
    const findings: Record<string, unknown[]> = {};
    for (const [name, sql] of Object.entries(CHECK_QUERIES)) findings[name] = await this.rows(sql);
    return { ...(findings as Omit<CheckFindings, 'accounts' | 'entries'>), accounts: Number(counts?.accounts ?? 0), entries: Number(counts?.entries ?? 0) };
  }
}
