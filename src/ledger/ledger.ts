/**
 * The PostgreSQL ledger (platform decisions §3). See types.ts for the contract.
 *
 * How it stays right under concurrency:
 * - Every write runs in one database transaction (its own, or a savepoint inside the caller's `trx`), so an
 *   error changes nothing — not even inside a caller's transaction.
 * - Accounts are locked with `SELECT … ORDER BY id FOR UPDATE` (a fixed order), pending transfers before accounts,
 *   so concurrent writers to one hot account queue up instead of deadlocking or losing updates.
 * - Idempotency: `ledger_idempotency_keys` holds one row per key for every write operation. The row is inserted
 *   (`ON CONFLICT DO NOTHING`) in the same statement that writes the result; when it already exists — or a
 *   concurrent writer inserted it first — the stored request fingerprint decides: same request → the first
 *   result, other request → IDEMPOTENCY_CONFLICT.
 *
 * Error kinds: ACCOUNT_NOT_FOUND, PENDING_TRANSFER_NOT_FOUND → not_found; INVALID_AMOUNT, UNBALANCED_POSTINGS,
 * CURRENCY_MISMATCH, VALIDATION_FAILED → invalid_argument; INSUFFICIENT_FUNDS, PENDING_TRANSFER_ALREADY_POSTED,
 * PENDING_TRANSFER_ALREADY_VOIDED, PENDING_TRANSFER_EXPIRED → failed_precondition; IDEMPOTENCY_CONFLICT →
 * already_exists.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { DomainError, invalidFields } from '../errors';
import { CURRENCIES, isCurrency, MAX_AMOUNT_UNITS, type Currency } from '../money';
import type {
  Account,
  AccountKind,
  AccountOwnerType,
  Ledger,
  LedgerCheck,
  LedgerEntry,
  LedgerJoin,
  LedgerTransaction,
  PendingTransfer,
  PendingTransferState,
} from './types';

export const OWNER_TYPES: readonly AccountOwnerType[] = ['platform', 'partner', 'merchant', 'user'];
export const ACCOUNT_KINDS: readonly AccountKind[] = ['wallet', 'partner_float', 'fee_revenue', 'settlement', 'holds'];
/** Kinds that stand for money outside the platform and may go below zero. */
export const NEGATIVE_ALLOWED_KINDS: readonly AccountKind[] = ['settlement'];
/** Owner id of the platform's own accounts. */
export const PLATFORM_OWNER_ID = 'platform';
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;
export const MAX_POSTINGS_PER_TRANSACTION = 50;
export const MAX_ENTRIES_LIMIT = 500;
export const DEFAULT_ENTRIES_LIMIT = 100;

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Conn = Knex | Knex.Transaction;
type Operation = 'transfer' | 'create_pending' | 'post_pending' | 'void_pending';

interface AccountRow {
  id: string;
  owner_type: AccountOwnerType;
  owner_id: string;
  currency: Currency;
  kind: AccountKind;
  allows_negative: boolean;
  posted_units: bigint;
  held_units: bigint;
  created_at: Date;
}

interface PendingRow {
  id: string;
  idempotency_key: string;
  debit_account_id: string;
  credit_account_id: string;
  currency: Currency;
  amount_units: bigint;
  state: PendingTransferState;
  expires_at: Date | null;
  posted_transaction_id: string | null;
  description: string;
  metadata: Record<string, unknown>;
  created_at: Date;
  expired?: boolean;
}

interface KeyRow {
  idempotency_key: string;
  operation: Operation;
  request_fingerprint: string;
  transaction_id: string | null;
  pending_transfer_id: string | null;
}

/** A Ledger method's input, as the contract (types.ts) declares it. */
type InputOf<K extends keyof Ledger> = Parameters<Ledger[K]>[0];

function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    owner_type: row.owner_type,
    owner_id: row.owner_id,
    currency: row.currency,
    kind: row.kind,
    allows_negative: row.allows_negative,
    posted_units: BigInt(row.posted_units),
    held_units: BigInt(row.held_units),
    available_units: BigInt(row.posted_units) - BigInt(row.held_units),
    created_at: row.created_at,
  };
}

function toPending(row: PendingRow): PendingTransfer {
  return {
    id: row.id,
    idempotency_key: row.idempotency_key,
    debit_account_id: row.debit_account_id,
    credit_account_id: row.credit_account_id,
    currency: row.currency,
    amount_units: BigInt(row.amount_units),
    state: row.state,
    expires_at: row.expires_at,
    posted_transaction_id: row.posted_transaction_id,
    metadata: row.metadata ?? {},
    created_at: row.created_at,
  };
}

/** JSON with sorted object keys and bigints as strings: the basis of request fingerprints. */
function canonicalJson(value: unknown): string {
  if (typeof value === 'bigint') return JSON.stringify(value.toString());
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
}

function fingerprint(operation: Operation, request: unknown): string {
  return createHash('sha256').update(`${operation}\n${canonicalJson(request)}`).digest('hex');
}

/** JSON for a jsonb column; bigints become strings. */
function jsonb(value: Record<string, unknown>): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
}

/** A PostgreSQL array literal of simple tokens (uuids, integers). */
function pgArray(values: readonly string[]): string {
  return `{${values.join(',')}}`;
}

function validateKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw invalidFields({ idempotency_key: [`must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`] });
  }
  return key;
}

function validateMetadata(metadata: unknown): Record<string, unknown> {
  if (metadata === undefined) return {};
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) {
    throw invalidFields({ metadata: ['must be an object'] });
  }
  return metadata as Record<string, unknown>;
}

function validateDescription(description: unknown): string {
  if (typeof description !== 'string' || description.length > 500) {
    throw invalidFields({ description: ['must be a string of at most 500 characters'] });
  }
  return description;
}

function invalidAmount(field: string, message: string): DomainError {
  return new DomainError('invalid_argument', 'INVALID_AMOUNT', `${field} ${message}`, { [field]: [message] });
}

function accountNotFound(ids: string[]): DomainError {
  return new DomainError('not_found', 'ACCOUNT_NOT_FOUND', `account not found: ${ids.join(', ')}`, {
    account_id: ids.map((id) => `no account ${id}`),
  });
}

function pendingNotFound(id: string): DomainError {
  return new DomainError('not_found', 'PENDING_TRANSFER_NOT_FOUND', `pending transfer not found: ${id}`);
}

function conflict(key: string): DomainError {
  return new DomainError(
    'already_exists',
    'IDEMPOTENCY_CONFLICT',
    `idempotency key ${key} was already used for a different request`,
    { idempotency_key: ['was already used for a different request'] },
  );
}

function insufficientFunds(account: AccountRow, needed: bigint): DomainError {
  const available = BigInt(account.posted_units) - BigInt(account.held_units);
  return new DomainError(
    'failed_precondition',
    'INSUFFICIENT_FUNDS',
    `account ${account.id} has ${available} ${account.currency} units available, ${needed} needed`,
  );
}

function stateError(row: PendingRow): DomainError {
  return row.state === 'posted'
    ? new DomainError('failed_precondition', 'PENDING_TRANSFER_ALREADY_POSTED', `pending transfer ${row.id} was already posted`)
    : new DomainError('failed_precondition', 'PENDING_TRANSFER_ALREADY_VOIDED', `pending transfer ${row.id} was already voided`);
}

/** Creates the ledger over a knex instance. One per process (it holds no state besides the pool). */
export function createLedger(database: Knex): Ledger {
  /**
   * Runs `work` atomically: in its own transaction, or in the caller's transaction: in a savepoint of it (so that a
   * failure leaves it usable and unchanged), or directly when the caller rolls it back on any failure (`direct`).
   */
  async function atomically<T>(
    trx: Knex.Transaction | undefined,
    join: LedgerJoin,
    work: (conn: Knex.Transaction) => Promise<T>,
  ): Promise<T> {
    if (!trx) return database.transaction(work);
    return join === 'direct' ? work(trx) : trx.transaction(work);
  }

  async function rows<T>(conn: Conn, sql: string, bindings: readonly unknown[] = []): Promise<T[]> {
    const result = (await conn.raw(sql, bindings as Knex.RawBinding[])) as { rows: T[] };
    return result.rows;
  }

  /** Locks the accounts in id order; throws ACCOUNT_NOT_FOUND naming every missing one. */
  async function lockAccounts(conn: Conn, ids: string[]): Promise<Map<string, AccountRow>> {
    const unique = [...new Set(ids)].sort();
    const malformed = unique.filter((id) => !UUID_PATTERN.test(id));
    if (malformed.length > 0) throw accountNotFound(malformed);
    const found = await rows<AccountRow>(
      conn,
      'SELECT * FROM ledger_accounts WHERE id = ANY(?::uuid[]) ORDER BY id FOR UPDATE',
      [pgArray(unique)],
    );
    const byId = new Map(found.map((row) => [row.id, row]));
    const missing = unique.filter((id) => !byId.has(id));
    if (missing.length > 0) throw accountNotFound(missing);
    return byId;
  }

  async function readKey(conn: Conn, key: string): Promise<KeyRow | undefined> {
    const [row] = await rows<KeyRow>(conn, 'SELECT * FROM ledger_idempotency_keys WHERE idempotency_key = ?', [key]);
    return row;
  }

  /** The stored key row when it matches this request; IDEMPOTENCY_CONFLICT when it belongs to another. */
  async function existingResult(conn: Conn, key: string, operation: Operation, requestFingerprint: string): Promise<KeyRow | undefined> {
    const row = await readKey(conn, key);
    if (!row) return undefined;
    if (row.operation !== operation || row.request_fingerprint !== requestFingerprint) throw conflict(key);
    return row;
  }

  /**
   * On a failure after locking: a replay of an applied request (or a conflicting key) wins over the failure,
   * e.g. a retried transfer whose first attempt already spent the funds returns its first result.
   */
  async function replayOr<T>(
    conn: Conn,
    key: string,
    operation: Operation,
    requestFingerprint: string,
    load: (row: KeyRow) => Promise<T>,
    error: unknown,
  ): Promise<T> {
    const existing = await existingResult(conn, key, operation, requestFingerprint);
    if (existing) return load(existing);
    throw error;
  }

  async function loadTransaction(conn: Conn, id: string): Promise<LedgerTransaction> {
    const [transaction] = await rows<{
      id: string;
      idempotency_key: string;
      description: string;
      metadata: Record<string, unknown>;
      created_at: Date;
    }>(conn, 'SELECT id, idempotency_key, description, metadata, created_at FROM ledger_transactions WHERE id = ?', [id]);
    if (!transaction) throw new Error(`ledger transaction ${id} vanished`);
    const postings = await rows<{ account_id: string; amount_units: bigint; currency: Currency }>(
      conn,
      'SELECT account_id, amount_units, currency FROM ledger_postings WHERE transaction_id = ? ORDER BY id',
      [id],
    );
    return {
      ...transaction,
      metadata: transaction.metadata ?? {},
      postings: postings.map((posting) => ({ ...posting, amount_units: BigInt(posting.amount_units) })),
    };
  }

  /** One pending transfer with `expired` (past its expiry by the database's clock); `sql` selects it by id. */
  async function pendingRow(conn: Conn, id: string, sql: (select: string) => string): Promise<PendingRow> {
    if (!UUID_PATTERN.test(id)) throw pendingNotFound(id);
    const select = `SELECT *, (expires_at IS NOT NULL AND expires_at <= clock_timestamp()) AS expired
         FROM ledger_pending_transfers WHERE id = ?`;
    const [row] = await rows<PendingRow>(conn, sql(select), [id]);
    if (!row) throw pendingNotFound(id);
    return row;
  }

  function loadPending(conn: Conn, id: string): Promise<PendingRow> {
    return pendingRow(conn, id, (select) => select);
  }

  /**
   * Locks a pending transfer and, while it is pending, both its accounts (in id order, as every writer locks
   * accounts), in one statement: the post or void that follows needs no other lock. The count of `a` is read only
   * because PostgreSQL does not run a CTE that nothing reads.
   */
  function lockPendingAndAccounts(conn: Conn, id: string): Promise<PendingRow> {
    return pendingRow(
      conn,
      id,
      (select) => `WITH p AS (${select} FOR UPDATE), a AS (
         SELECT ledger_accounts.id FROM ledger_accounts, p
          WHERE ledger_accounts.id IN (p.debit_account_id, p.credit_account_id) AND p.state = 'pending'
          ORDER BY ledger_accounts.id FOR UPDATE OF ledger_accounts
       )
       SELECT p.*, (SELECT count(*) FROM a)::int AS locked_accounts FROM p`,
    );
  }

  function validateAccountInput(input: { owner_type: unknown; owner_id: unknown; currency: unknown; kind: unknown }): void {
    const fields: Record<string, string[]> = {};
    if (!OWNER_TYPES.includes(input.owner_type as AccountOwnerType)) fields.owner_type = [`must be one of ${OWNER_TYPES.join(', ')}`];
    if (typeof input.owner_id !== 'string' || input.owner_id.length === 0 || input.owner_id.length > 200) {
      fields.owner_id = ['must be 1 to 200 characters'];
    }
    if (!isCurrency(input.currency)) fields.currency = [`must be one of ${CURRENCIES.join(', ')}`];
    if (!ACCOUNT_KINDS.includes(input.kind as AccountKind)) fields.kind = [`must be one of ${ACCOUNT_KINDS.join(', ')}`];
    if (Object.keys(fields).length > 0) throw invalidFields(fields);
  }

  async function findAccount(
    input: InputOf<'findAccount'>,
    trx?: Knex.Transaction,
  ): Promise<Account | undefined> {
    validateAccountInput(input);
    const [row] = await rows<AccountRow>(
      trx ?? database,
      'SELECT * FROM ledger_accounts WHERE owner_type = ? AND owner_id = ? AND currency = ? AND kind = ?',
      [input.owner_type, input.owner_id, input.currency, input.kind],
    );
    return row ? toAccount(row) : undefined;
  }

  async function openAccount(
    input: InputOf<'openAccount'>,
    trx?: Knex.Transaction,
  ): Promise<Account> {
    validateAccountInput(input);
    const conn = trx ?? database;
    const [inserted] = await rows<AccountRow>(
      conn,
      `INSERT INTO ledger_accounts (id, owner_type, owner_id, currency, kind, allows_negative)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (owner_type, owner_id, currency, kind) DO NOTHING
       RETURNING *`,
      [randomUUID(), input.owner_type, input.owner_id, input.currency, input.kind, NEGATIVE_ALLOWED_KINDS.includes(input.kind)],
    );
    if (inserted) return toAccount(inserted);
    const existing = await findAccount(input, trx);
    if (!existing) throw new Error('ledger account vanished after a conflicting insert');
    return existing;
  }

  async function getAccount(account_id: string, trx?: Knex.Transaction): Promise<Account> {
    if (typeof account_id !== 'string' || !UUID_PATTERN.test(account_id)) throw accountNotFound([String(account_id)]);
    const [row] = await rows<AccountRow>(trx ?? database, 'SELECT * FROM ledger_accounts WHERE id = ?', [account_id]);
    if (!row) throw accountNotFound([account_id]);
    return toAccount(row);
  }

  async function accountsOf(owner_type: AccountOwnerType, owner_id: string, trx?: Knex.Transaction): Promise<Account[]> {
    const found = await rows<AccountRow>(
      trx ?? database,
      'SELECT * FROM ledger_accounts WHERE owner_type = ? AND owner_id = ? ORDER BY currency, kind',
      [owner_type, owner_id],
    );
    return found.map(toAccount);
  }

  async function transfer(
    input: InputOf<'transfer'>,
    trx?: Knex.Transaction,
    join: LedgerJoin = 'savepoint',
  ): Promise<LedgerTransaction> {
    const key = validateKey(input.idempotency_key);
    const description = validateDescription(input.description);
    const metadata = validateMetadata(input.metadata);
    if (!Array.isArray(input.postings) || input.postings.length < 2 || input.postings.length > MAX_POSTINGS_PER_TRANSACTION) {
      throw new DomainError('invalid_argument', 'UNBALANCED_POSTINGS', `a transaction needs 2 to ${MAX_POSTINGS_PER_TRANSACTION} postings`, {
        postings: [`must have 2 to ${MAX_POSTINGS_PER_TRANSACTION} entries`],
      });
    }
    const postings = input.postings.map((posting, index) => {
      const amount = posting.amount_units;
      if (typeof amount !== 'bigint') throw invalidAmount(`postings[${index}].amount_units`, 'must be an integer of minor units');
      if (amount === 0n) throw invalidAmount(`postings[${index}].amount_units`, 'must not be 0');
      if (amount > MAX_AMOUNT_UNITS || -amount > MAX_AMOUNT_UNITS) throw invalidAmount(`postings[${index}].amount_units`, 'is too large');
      if (typeof posting.account_id !== 'string') throw accountNotFound([String(posting.account_id)]);
      return { account_id: posting.account_id.toLowerCase(), amount_units: amount };
    });
    const requestFingerprint = fingerprint('transfer', { description, postings, metadata });

    return atomically(trx, join, async (conn) => {
      const loadResult = (row: KeyRow) => loadTransaction(conn, row.transaction_id!);
      let accounts: Map<string, AccountRow>;
      try {
        accounts = await lockAccounts(conn, postings.map((posting) => posting.account_id));
      } catch (error) {
        return replayOr(conn, key, 'transfer', requestFingerprint, loadResult, error);
      }
      const withCurrency = postings.map((posting) => ({ ...posting, currency: accounts.get(posting.account_id)!.currency }));
      const sums = new Map<Currency, bigint>();
      const deltas = new Map<string, bigint>();
      for (const posting of withCurrency) {
        sums.set(posting.currency, (sums.get(posting.currency) ?? 0n) + posting.amount_units);
        deltas.set(posting.account_id, (deltas.get(posting.account_id) ?? 0n) + posting.amount_units);
      }
      const unbalanced = [...sums].filter(([, sum]) => sum !== 0n);
      if (unbalanced.length > 0) {
        const error = new DomainError(
          'invalid_argument',
          'UNBALANCED_POSTINGS',
          `postings do not sum to zero: ${unbalanced.map(([currency, sum]) => `${currency} ${sum}`).join(', ')}`,
          { postings: ['must sum to zero per currency'] },
        );
        return replayOr(conn, key, 'transfer', requestFingerprint, loadResult, error);
      }
      for (const [accountId, delta] of deltas) {
        const account = accounts.get(accountId)!;
        if (delta < 0n && !account.allows_negative && BigInt(account.posted_units) - BigInt(account.held_units) + delta < 0n) {
          return replayOr(conn, key, 'transfer', requestFingerprint, loadResult, insufficientFunds(account, -delta));
        }
      }
      const transactionId = randomUUID();
      const changed = [...deltas].filter(([, delta]) => delta !== 0n);
      const [written] = await rows<{ created_at: Date | null }>(
        conn,
        `WITH k AS (
           INSERT INTO ledger_idempotency_keys (idempotency_key, operation, request_fingerprint, transaction_id)
           VALUES (?, 'transfer', ?, ?) ON CONFLICT DO NOTHING RETURNING 1
         ), t AS (
           INSERT INTO ledger_transactions (id, idempotency_key, request_fingerprint, description, metadata)
           SELECT ?, ?, ?, ?, ?::jsonb WHERE EXISTS (SELECT 1 FROM k) RETURNING created_at
         ), p AS (
           INSERT INTO ledger_postings (transaction_id, account_id, amount_units, currency)
           SELECT ?, a, u, c FROM unnest(?::uuid[], ?::bigint[], ?::text[]) WITH ORDINALITY AS v(a, u, c, n)
            WHERE EXISTS (SELECT 1 FROM k) ORDER BY n
         ), b AS (
           UPDATE ledger_accounts SET posted_units = posted_units + v.d
             FROM unnest(?::uuid[], ?::bigint[]) AS v(i, d)
            WHERE ledger_accounts.id = v.i AND EXISTS (SELECT 1 FROM k)
         )
         SELECT (SELECT created_at FROM t) AS created_at`,
        [
          key,
          requestFingerprint,
          transactionId,
          transactionId,
          key,
          requestFingerprint,
          description,
          jsonb(metadata),
          transactionId,
          pgArray(withCurrency.map((posting) => posting.account_id)),
          pgArray(withCurrency.map((posting) => posting.amount_units.toString())),
          pgArray(withCurrency.map((posting) => posting.currency)),
          pgArray(changed.map(([id]) => id)),
          pgArray(changed.map(([, delta]) => delta.toString())),
        ],
      );
      if (!written?.created_at) {
        // A concurrent writer inserted this key first (and has committed): same request → its result.
        const existing = await existingResult(conn, key, 'transfer', requestFingerprint);
        if (!existing) throw new Error(`idempotency key ${key} neither inserted nor found`);
        return loadResult(existing);
      }
      return {
        id: transactionId,
        idempotency_key: key,
        description,
        postings: withCurrency,
        metadata,
        created_at: written.created_at,
      };
    });
  }
  async function createPendingTransfer(
    input: InputOf<'createPendingTransfer'>,
    trx?: Knex.Transaction,
    join: LedgerJoin = 'savepoint',
  ): Promise<PendingTransfer> {
    const key = validateKey(input.idempotency_key);
    const description = validateDescription(input.description);
    const metadata = validateMetadata(input.metadata);
    const amount = input.amount_units;
    if (typeof amount !== 'bigint') throw invalidAmount('amount_units', 'must be an integer of minor units');
    if (amount <= 0n) throw invalidAmount('amount_units', 'must be greater than 0');
    if (amount > MAX_AMOUNT_UNITS) throw invalidAmount('amount_units', 'is too large');
    const timeout = input.timeout_seconds;
    if (timeout !== undefined && (!Number.isSafeInteger(timeout) || timeout <= 0)) {
      throw invalidFields({ timeout_seconds: ['must be a positive whole number of seconds'] });
    }
    if (typeof input.debit_account_id !== 'string') throw accountNotFound([String(input.debit_account_id)]);
    if (typeof input.credit_account_id !== 'string') throw accountNotFound([String(input.credit_account_id)]);
    const debitId = input.debit_account_id.toLowerCase();
    const creditId = input.credit_account_id.toLowerCase();
    if (debitId === creditId) throw invalidFields({ credit_account_id: ['must differ from debit_account_id'] });
    const requestFingerprint = fingerprint('create_pending', {
      debitId,
      creditId,
      amount,
      timeout: timeout ?? null,
      description,
      metadata,
    });

    return atomically(trx, join, async (conn) => {
      const loadResult = async (row: KeyRow) => toPending(await loadPending(conn, row.pending_transfer_id!));
      let accounts: Map<string, AccountRow>;
      try {
        accounts = await lockAccounts(conn, [debitId, creditId]);
      } catch (error) {
        return replayOr(conn, key, 'create_pending', requestFingerprint, loadResult, error);
      }
      const debit = accounts.get(debitId)!;
      const credit = accounts.get(creditId)!;
      if (debit.currency !== credit.currency) {
        const error = new DomainError(
          'invalid_argument',
          'CURRENCY_MISMATCH',
          `debit account is ${debit.currency}, credit account is ${credit.currency}`,
          { credit_account_id: [`must be a ${debit.currency} account`] },
        );
        return replayOr(conn, key, 'create_pending', requestFingerprint, loadResult, error);
      }
      if (!debit.allows_negative && BigInt(debit.posted_units) - BigInt(debit.held_units) < amount) {
        return replayOr(conn, key, 'create_pending', requestFingerprint, loadResult, insufficientFunds(debit, amount));
      }
      const pendingId = randomUUID();
      const [written] = await rows<PendingRow>(
        conn,
        `WITH k AS (
           INSERT INTO ledger_idempotency_keys (idempotency_key, operation, request_fingerprint, pending_transfer_id)
           VALUES (?, 'create_pending', ?, ?) ON CONFLICT DO NOTHING RETURNING 1
         ), t AS (
           INSERT INTO ledger_pending_transfers
             (id, idempotency_key, debit_account_id, credit_account_id, currency, amount_units, expires_at, description, metadata)
           SELECT ?, ?, ?, ?, ?, ?, CASE WHEN ?::int IS NULL THEN NULL ELSE now() + make_interval(secs => ?::int) END, ?, ?::jsonb
            WHERE EXISTS (SELECT 1 FROM k)
           RETURNING *
         ), b AS (
           UPDATE ledger_accounts SET held_units = held_units + ?::bigint
            WHERE id = ? AND EXISTS (SELECT 1 FROM k)
         )
         SELECT * FROM t`,
        [
          key,
          requestFingerprint,
          pendingId,
          pendingId,
          key,
          debitId,
          creditId,
          debit.currency,
          amount.toString(),
          timeout ?? null,
          timeout ?? null,
          description,
          jsonb(metadata),
          amount.toString(),
          debitId,
        ],
      );
      if (!written) {
        const existing = await existingResult(conn, key, 'create_pending', requestFingerprint);
        if (!existing) throw new Error(`idempotency key ${key} neither inserted nor found`);
        return loadResult(existing);
      }
      return toPending(written);
    });
  }

  /** Shared by post and void: lock the transfer, replay or refuse by state, then `apply`. */
  async function resolvePending(
    operation: 'post_pending' | 'void_pending',
    input: InputOf<'postPendingTransfer'>,
    trx: Knex.Transaction | undefined,
    join: LedgerJoin,
  ): Promise<PendingTransfer> {
    const key = validateKey(input.idempotency_key);
    if (typeof input.pending_transfer_id !== 'string') throw pendingNotFound(String(input.pending_transfer_id));
    const pendingId = input.pending_transfer_id.toLowerCase();
    const requestFingerprint = fingerprint(operation, { pendingId });
    return atomically(trx, join, async (conn) => {
      const loadResult = async (row: KeyRow) => toPending(await loadPending(conn, row.pending_transfer_id!));
      let pending: PendingRow;
      try {
        pending = await lockPendingAndAccounts(conn, pendingId);
      } catch (error) {
        return replayOr(conn, key, operation, requestFingerprint, loadResult, error);
      }
      if (pending.state !== 'pending') {
        return replayOr(conn, key, operation, requestFingerprint, loadResult, stateError(pending));
      }
      if (operation === 'post_pending' && pending.expired) {
        const error = new DomainError(
          'failed_precondition',
          'PENDING_TRANSFER_EXPIRED',
          `pending transfer ${pending.id} expired at ${pending.expires_at?.toISOString()}`,
        );
        return replayOr(conn, key, operation, requestFingerprint, loadResult, error);
      }
      const amount = BigInt(pending.amount_units).toString();
      // The resolved transfer comes back from the statement itself (RETURNING *): no second read.
      let written: PendingRow[];
      if (operation === 'post_pending') {
        const transactionId = randomUUID();
        written = await rows<PendingRow>(
          conn,
          `WITH k AS (
             INSERT INTO ledger_idempotency_keys (idempotency_key, operation, request_fingerprint, pending_transfer_id, transaction_id)
             VALUES (?, 'post_pending', ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1
           ), t AS (
             INSERT INTO ledger_transactions (id, idempotency_key, request_fingerprint, description, metadata)
             SELECT ?, ?, ?, ?, ?::jsonb WHERE EXISTS (SELECT 1 FROM k) RETURNING id
           ), p AS (
             INSERT INTO ledger_postings (transaction_id, account_id, amount_units, currency)
             SELECT ?, v.a, v.u, ? FROM (VALUES (?::uuid, -(?::bigint), 1), (?::uuid, ?::bigint, 2)) AS v(a, u, n)
              WHERE EXISTS (SELECT 1 FROM k) ORDER BY v.n
           ), b AS (
             UPDATE ledger_accounts
                SET posted_units = posted_units + CASE WHEN id = ? THEN -(?::bigint) ELSE ?::bigint END,
                    held_units = held_units - CASE WHEN id = ? THEN ?::bigint ELSE 0 END
              WHERE id IN (?, ?) AND EXISTS (SELECT 1 FROM k)
           )
           UPDATE ledger_pending_transfers SET state = 'posted', posted_transaction_id = ?, resolved_at = now()
            WHERE id = ? AND EXISTS (SELECT 1 FROM k)
           RETURNING *`,
          [
            key,
            requestFingerprint,
            pending.id,
            transactionId,
            transactionId,
            key,
            requestFingerprint,
            pending.description,
            jsonb({ ...pending.metadata, pending_transfer_id: pending.id }),
            transactionId,
            pending.currency,
            pending.debit_account_id,
            amount,
            pending.credit_account_id,
            amount,
            pending.debit_account_id,
            amount,
            amount,
            pending.debit_account_id,
            amount,
            pending.debit_account_id,
            pending.credit_account_id,
            transactionId,
            pending.id,
          ],
        );
      } else {
        written = await rows<PendingRow>(
          conn,
          `WITH k AS (
             INSERT INTO ledger_idempotency_keys (idempotency_key, operation, request_fingerprint, pending_transfer_id)
             VALUES (?, 'void_pending', ?, ?) ON CONFLICT DO NOTHING RETURNING 1
           ), b AS (
             UPDATE ledger_accounts SET held_units = held_units - ?::bigint
              WHERE id = ? AND EXISTS (SELECT 1 FROM k)
           )
           UPDATE ledger_pending_transfers SET state = 'voided', resolved_at = now()
            WHERE id = ? AND EXISTS (SELECT 1 FROM k)
           RETURNING *`,
          [key, requestFingerprint, pending.id, amount, pending.debit_account_id, pending.id],
        );
      }
      if (written.length === 0) {
        const existing = await existingResult(conn, key, operation, requestFingerprint);
        if (!existing) throw new Error(`idempotency key ${key} neither inserted nor found`);
        return loadResult(existing);
      }
      return toPending(written[0]!);
    });
  }

  async function getPendingTransfer(pending_transfer_id: string, trx?: Knex.Transaction): Promise<PendingTransfer> {
    if (typeof pending_transfer_id !== 'string') throw pendingNotFound(String(pending_transfer_id));
    return toPending(await loadPending(trx ?? database, pending_transfer_id));
  }

  async function entriesOf(
    account_id: string,
    options: { limit?: number; before_transaction_id?: string } = {},
  ): Promise<LedgerEntry[]> {
    const limit = options.limit ?? DEFAULT_ENTRIES_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 1) throw invalidFields({ limit: [`must be 1 to ${MAX_ENTRIES_LIMIT}`] });
    const account = await getAccount(account_id);
    let beforeId: bigint | undefined;
    if (options.before_transaction_id) {
      const before = options.before_transaction_id;
      const [found] = UUID_PATTERN.test(before)
        ? await rows<{ id: bigint | null }>(
            database,
            'SELECT min(id) AS id FROM ledger_postings WHERE account_id = ? AND transaction_id = ?',
            [account.id, before],
          )
        : [];
      if (found?.id === undefined || found.id === null) {
        throw invalidFields({ before_transaction_id: ['must be a transaction of this account'] });
      }
      beforeId = BigInt(found.id);
    }
    const found = await rows<LedgerEntry>(
      database,
      `SELECT p.transaction_id, p.account_id, p.amount_units, p.currency, t.description, t.created_at
         FROM ledger_postings p JOIN ledger_transactions t ON t.id = p.transaction_id
        WHERE p.account_id = ?${beforeId === undefined ? '' : ' AND p.id < ?'}
        ORDER BY p.id DESC LIMIT ?`,
      beforeId === undefined
        ? [account.id, Math.min(limit, MAX_ENTRIES_LIMIT)]
        : [account.id, beforeId.toString(), Math.min(limit, MAX_ENTRIES_LIMIT)],
    );
    return found.map((entry) => ({ ...entry, amount_units: BigInt(entry.amount_units) }));
  }

  async function check(): Promise<LedgerCheck> {
    const imbalances: string[] = [];
    const [counts] = await rows<{ accounts: bigint; entries: bigint }>(
      database,
      'SELECT (SELECT count(*) FROM ledger_accounts) AS accounts, (SELECT count(*) FROM ledger_postings) AS entries',
    );
    for (const row of await rows<{ currency: string; total: string }>(
      database,
      'SELECT currency, sum(posted_units)::text AS total FROM ledger_accounts GROUP BY currency HAVING sum(posted_units) <> 0',
    )) {
      imbalances.push(`${row.currency} account balances sum to ${row.total}, not 0`);
    }
    for (const row of await rows<{ transaction_id: string; currency: string; total: string }>(
      database,
      `SELECT transaction_id, currency, sum(amount_units)::text AS total FROM ledger_postings
        GROUP BY transaction_id, currency HAVING sum(amount_units) <> 0 LIMIT 20`,
    )) {
      imbalances.push(`transaction ${row.transaction_id} ${row.currency} postings sum to ${row.total}, not 0`);
    }
    for (const row of await rows<{ id: string; posted: string; summed: string }>(
      database,
      `SELECT a.id, a.posted_units::text AS posted, coalesce(s.total, 0)::text AS summed
         FROM ledger_accounts a
         LEFT JOIN (SELECT account_id, sum(amount_units) AS total FROM ledger_postings GROUP BY account_id) s ON s.account_id = a.id
        WHERE a.posted_units <> coalesce(s.total, 0) LIMIT 20`,
    )) {
      imbalances.push(`account ${row.id} posted balance ${row.posted} differs from its postings ${row.summed}`);
    }
    for (const row of await rows<{ id: string; currency: string; available: string }>(
      database,
      `SELECT id, currency, (posted_units - held_units)::text AS available FROM ledger_accounts
        WHERE NOT allows_negative AND posted_units - held_units < 0 LIMIT 20`,
    )) {
      imbalances.push(`account ${row.id} is below zero: ${row.available} ${row.currency} units available`);
    }
    for (const row of await rows<{ id: string; held: string; open: string }>(
      database,
      `SELECT a.id, a.held_units::text AS held, coalesce(h.total, 0)::text AS open
         FROM ledger_accounts a
         LEFT JOIN (SELECT debit_account_id, sum(amount_units) AS total FROM ledger_pending_transfers
                     WHERE state = 'pending' GROUP BY debit_account_id) h ON h.debit_account_id = a.id
        WHERE a.held_units <> coalesce(h.total, 0) LIMIT 20`,
    )) {
      imbalances.push(`account ${row.id} holds ${row.held} but its open pending transfers total ${row.open}`);
    }
    return {
      ok: imbalances.length === 0,
      accounts: Number(counts?.accounts ?? 0),
      entries: Number(counts?.entries ?? 0),
      imbalances,
    };
  }

  return {
    openAccount,
    getAccount,
    findAccount,
    accountsOf,
    platformAccount: (kind, currency, trx) => openAccount({ owner_type: 'platform', owner_id: PLATFORM_OWNER_ID, currency, kind }, trx),
    transfer,
    createPendingTransfer,
    postPendingTransfer: (input, trx, join = 'savepoint') => resolvePending('post_pending', input, trx, join),
    voidPendingTransfer: (input, trx, join = 'savepoint') => resolvePending('void_pending', input, trx, join),
    getPendingTransfer,
    entriesOf,
    check,
  };
}
