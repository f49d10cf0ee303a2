/**
 * A flow's ledger transactions by its public reference (docs/architecture.md "One business key"): every ledger
 * idempotency key of a flow is `<reference>:<step>` (a deposit's one step is the bare reference), built by its flow's
 * contract, so one prefix scan over `ledger_transactions.idempotency_key` (index `ledger_transactions_key_prefix_idx`,
 * migration 032) finds them all: what a payment's timeline shows as its postings.
 */
import type { Knex } from 'knex';

/** The longest reference looked up (an event subject's limit). */
const REFERENCE_MAX_LENGTH = 128;

/** One ledger transaction of a flow. */
export interface FlowLedgerTransaction {
  transaction_id: string;
  /** `<reference>:<step>`, or the reference itself. */
  idempotency_key: string;
  description: string;
  created_at: Date;
}

/** `text` with LIKE's wildcards and its escape character escaped (the pattern matches it literally). */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (character) => `\\${character}`);
}

/**
 * The ledger transactions whose idempotency key is `reference` or starts with `reference:`, oldest first (at most
 * 1000). An empty or over-long reference has none.
 */
export async function ledgerKeysOf(conn: Knex | Knex.Transaction, reference: string): Promise<FlowLedgerTransaction[]> {
  if (reference.length === 0 || reference.length > REFERENCE_MAX_LENGTH) return [];
  const result = await conn.raw(
    `SELECT id AS transaction_id, idempotency_key, description, created_at FROM ledger_transactions
      WHERE idempotency_key LIKE ? ESCAPE '\\' OR idempotency_key = ?
      ORDER BY created_at, idempotency_key LIMIT 1000`,
    [`${likeLiteral(reference)}:%`, reference],
  );
  return (result.rows as FlowLedgerTransaction[]).map((row) => ({ ...row, transaction_id: String(row.transaction_id) }));
}
