import type { Knex } from 'knex';

/**
 * 035_refunds: refunds of Area B payins (docs/refunds.md). `refunds` holds one row per refund (id = its reference,
 * also its RefundWorkflow's id), with the ledger hold it placed on the merchant's wallet; `refund_notifications` holds
 * each decision the upstream provider notified on the signed notification route: the only authority a workflow
 * message about a refund's decision rests on.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE refunds (
      refund_reference text PRIMARY KEY CHECK (length(refund_reference) BETWEEN 1 AND 64),
      merchant_id text NOT NULL,
      invoice_reference text NOT NULL,
      out_trade_no text NOT NULL,
      trx_ref text NOT NULL,
      amount_units bigint NOT NULL CHECK (amount_units > 0),
      currency text NOT NULL,
      address text NOT NULL,
      reason text NOT NULL DEFAULT '',
      status text NOT NULL CHECK (status IN ('held', 'pending', 'succeeded', 'failed')),
      request_key text NULL,
      request_fingerprint text NULL,
      pending_transfer_id text NULL,
      ledger_transaction_id text NULL,
      refund_trx_ref text NULL,
      failure_reason text NULL,
      decision_due_at timestamptz NOT NULL,
      decided_at timestamptz NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX refunds_invoice_idx ON refunds (invoice_reference);
    CREATE INDEX refunds_merchant_idx ON refunds (merchant_id, created_at);
    CREATE UNIQUE INDEX refunds_request_key_idx ON refunds (merchant_id, request_key) WHERE request_key IS NOT NULL;
    CREATE INDEX refunds_undecided_idx ON refunds (decision_due_at) WHERE status IN ('held', 'pending');
    CREATE TABLE refund_notifications (
      id bigserial PRIMARY KEY,
      refund_reference text NOT NULL,
      status text NOT NULL CHECK (status IN ('refund_succeeded', 'refund_failed')),
      amount_units bigint NOT NULL,
      refund_trx_ref text NULL,
      failure_reason text NULL,
      raw_body text NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (refund_reference, status)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE refund_notifications; DROP TABLE refunds;');
}
