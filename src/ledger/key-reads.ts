/**
 * The ledger's reads by business key and by id (LedgerKeyReads in types.ts, where each method's shape is documented):
 * what the flows, reconciliation and a payment's timeline read of the ledger's records, so that no module outside
 * src/ledger names the ledger's tables. Read-only statements over the pool or the caller's transaction; the writes'
 * statements stay in postgres-store.ts. A transaction's key is found by a prefix scan over its index
 * `ledger_transactions_key_prefix_idx` (text_pattern_ops, migration 032).
 */
import type { Knex } from 'knex';
import type { Currency } from '../money';
import type { AccountKind, AccountOwnerType, KeyedHold, KeyedTransaction, LedgerKeyMatch, LedgerKeyReads, OwnedPosting, PendingTransferState } from './types';
import { isUuid, MAX_IDEMPOTENCY_KEY_LENGTH } from './validate';

type Conn = Knex | Knex.Transaction;

/** The most records one read by key answers. */
export const MAX_KEY_READ_LIMIT = 1000;

/** `text` with LIKE's wildcards and its escape character escaped (the pattern matches it literally). */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`);
}

/** The SQL condition on `idempotency_key` a match makes, or undefined when it can find nothing. */
function keyCondition(match: LedgerKeyMatch): { sql: string; bindings: Knex.RawBinding[] } | undefined {
  const fits = (text: string) => text.length > 0 && text.length <= MAX_IDEMPOTENCY_KEY_LENGTH;
  const keys = (match.keys ?? []).filter(fits);
  const prefixes = (match.prefixes ?? []).filter(fits);
  if (keys.length === 0 && prefixes.length === 0) return undefined;
  const parts: string[] = [];
  const bindings: Knex.RawBinding[] = [];
  if (keys.length > 0) {
    parts.push('idempotency_key = ANY(?::text[])');
    bindings.push(keys);
  }
  for (const prefix of prefixes) {
    parts.push(`idempotency_key LIKE ? ESCAPE '\\'`);
    bindings.push(`${likeLiteral(prefix)}%`);
  }
  return { sql: `(${parts.join(' OR ')})`, bindings };
}

function limitOf(options: { limit?: number } | undefined): number {
  const limit = options?.limit ?? MAX_KEY_READ_LIMIT;
  return Number.isSafeInteger(limit) && limit > 0 ? Math.min(limit, MAX_KEY_READ_LIMIT) : MAX_KEY_READ_LIMIT;
}

function units(value: unknown): bigint | null {
  return value === null || value === undefined ? null : BigInt(String(value));
}

/** The reads over `database`, each on the caller's transaction when one is given. */
export function createKeyReads(database: Knex): LedgerKeyReads {
  const on = (trx: Knex.Transaction | undefined): Conn => trx ?? database;
  return {
    async transactionsByKey(match, options, trx) {
      const condition = keyCondition(match);
      if (!condition) return [];
      const result = await on(trx).raw(
        `SELECT id, idempotency_key, description, metadata, created_at FROM ledger_transactions
          WHERE ${condition.sql} ORDER BY created_at, idempotency_key LIMIT ?`,
        [...condition.bindings, limitOf(options)],
      );
      return (result.rows as Array<{ id: string; idempotency_key: string; description: string; metadata: Record<string, unknown> | null; created_at: Date }>).map(
        (row): KeyedTransaction => ({
          transaction_id: String(row.id),
          idempotency_key: row.idempotency_key,
          description: row.description,
          metadata: row.metadata ?? {},
          created_at: row.created_at,
        }),
      );
    },

    async postingsOf(transaction_ids, trx) {
      const ids = transaction_ids.filter(isUuid);
      if (ids.length === 0) return [];
      const result = await on(trx).raw(
        `SELECT p.transaction_id, p.account_id, a.owner_type, a.owner_id, a.kind, p.amount_units, p.currency, p.balance_after_units
           FROM ledger_postings p JOIN ledger_accounts a ON a.id = p.account_id
          WHERE p.transaction_id = ANY(?::uuid[]) ORDER BY p.id`,
        [ids],
      );
      return (result.rows as Array<Record<string, unknown>>).map(
        (row): OwnedPosting => ({
          transaction_id: String(row.transaction_id),
          account_id: String(row.account_id),
          owner_type: row.owner_type as AccountOwnerType,
          owner_id: String(row.owner_id),
          kind: row.kind as AccountKind,
          amount_units: BigInt(String(row.amount_units)),
          currency: row.currency as Currency,
          balance_after_units: units(row.balance_after_units),
        }),
      );
    },

    async holdsByKey(match, options, trx) {
      const condition = keyCondition(match);
      if (!condition) return [];
      const result = await on(trx).raw(
        `SELECT id, idempotency_key, amount_units, currency, state, description, created_at, resolved_at FROM ledger_pending_transfers
          WHERE ${condition.sql} ORDER BY created_at, idempotency_key LIMIT ?`,
        [...condition.bindings, limitOf(options)],
      );
      return (result.rows as Array<Record<string, unknown>>).map(
        (row): KeyedHold => ({
          pending_transfer_id: String(row.id),
          idempotency_key: String(row.idempotency_key),
          amount_units: BigInt(String(row.amount_units)),
          currency: row.currency as Currency,
          state: row.state as PendingTransferState,
          description: String(row.description),
          created_at: row.created_at as Date,
          resolved_at: (row.resolved_at as Date | null) ?? null,
        }),
      );
    },

    async usedKeys(keys, trx) {
      const wanted = keys.filter((key) => key.length > 0 && key.length <= MAX_IDEMPOTENCY_KEY_LENGTH);
      if (wanted.length === 0) return new Set();
      const result = await on(trx).raw('SELECT idempotency_key FROM ledger_idempotency_keys WHERE idempotency_key = ANY(?::text[])', [wanted]);
      return new Set((result.rows as Array<{ idempotency_key: string }>).map((row) => row.idempotency_key));
    },

    async missingTransactions(transaction_ids, trx) {
      const ids = transaction_ids.filter(isUuid);
      const found = new Set<string>();
      if (ids.length > 0) {
        const result = await on(trx).raw('SELECT id FROM ledger_transactions WHERE id = ANY(?::uuid[])', [ids]);
        for (const row of result.rows as Array<{ id: string }>) found.add(String(row.id).toLowerCase());
      }
      return new Set(transaction_ids.filter((id) => !found.has(id.toLowerCase())));
    },
  };
}
