import type { Knex } from 'knex';

/**
 * 032_business_keys_and_ordered_webhooks (docs/architecture.md "One business key", docs/webhooks.md "Order"):
 *
 * - `ledger_transactions_key_prefix_idx`: the ledger keys of one flow all start with its public reference
 *   (`<reference>:<step>`), so `ledgerKeysOf` finds a flow's postings with a prefix scan (`text_pattern_ops`: LIKE
 *   'prefix%' uses it whatever the database's collation).
 * - `webhook_events.event_seq`: each webhook is produced from its event and carries the event's `seq` (the
 *   `webhook-event-seq` header); its subject's webhooks are delivered in that order. Null on rows written before.
 *   `webhook_events_pending_order_idx` finds a pending webhook's pending predecessor or successor of the same
 *   merchant and subject (only pending rows: the index stays small); `webhook_events_merchant_seq_idx` the
 *   merchant's webhooks after a seq (`payments admin events redeliver`).
 * - `webhook_delivery_attempts.next_retry_at`: when a failed attempt's next one is due (null when it was delivered,
 *   or the last one before the event was given up).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE INDEX ledger_transactions_key_prefix_idx ON ledger_transactions (idempotency_key text_pattern_ops);
    ALTER TABLE webhook_events ADD COLUMN event_seq bigint NULL CHECK (event_seq > 0);
    CREATE INDEX webhook_events_pending_order_idx ON webhook_events (merchant_id, invoice_reference, event_seq) WHERE status = 'pending';
    CREATE INDEX webhook_events_merchant_seq_idx ON webhook_events (merchant_id, event_seq) WHERE event_seq IS NOT NULL;
    ALTER TABLE webhook_delivery_attempts ADD COLUMN next_retry_at timestamptz NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_delivery_attempts DROP COLUMN next_retry_at;
    DROP INDEX webhook_events_merchant_seq_idx;
    DROP INDEX webhook_events_pending_order_idx;
    ALTER TABLE webhook_events DROP COLUMN event_seq;
    DROP INDEX ledger_transactions_key_prefix_idx;
  `);
}
