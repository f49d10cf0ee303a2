import type { Knex } from 'knex';

/**
 * 065_payouts: money leaving a merchant's wallet (docs/payouts.md). `payouts` holds one row per payout (id = its
 * reference, also its PayoutWorkflow's id) with the holds it placed on the merchant's wallet (the amount towards
 * settlement, the payout fee towards fee_revenue); `payout_notifications` each decision the upstream provider notified
 * on the signed notification route (the only authority a workflow message about a payout's decision rests on);
 * `payout_approvals` each operator's or merchant's approval or rejection of a payout above its merchant's threshold
 * (the only authority an approval hint rests on); `merchant_payout_settings` a merchant's limits (minor units of
 * USDT). The fee schedule gains the crypto payout's channel, `USDT_TRC20`, with its `fee_payout`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE payouts (
      payout_reference text PRIMARY KEY CHECK (length(payout_reference) BETWEEN 1 AND 64),
      merchant_id text NOT NULL,
      kind text NOT NULL DEFAULT 'crypto' CHECK (kind IN ('crypto', 'bank')),
      source text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'schedule', 'dashboard', 'area_c')),
      out_trade_no text NULL,
      amount_units bigint NOT NULL CHECK (amount_units > 0),
      fee_units bigint NOT NULL DEFAULT 0 CHECK (fee_units >= 0),
      currency text NOT NULL,
      channel text NOT NULL,
      address text NOT NULL,
      memo text NOT NULL DEFAULT '',
      status text NOT NULL CHECK (status IN ('awaiting_approval', 'held', 'requested', 'succeeded', 'failed')),
      request_key text NULL,
      request_fingerprint text NULL,
      pending_transfer_id text NULL,
      fee_pending_transfer_id text NULL,
      ledger_transaction_id text NULL,
      provider_reference text NULL,
      failure_reason text NULL,
      approval_due_at timestamptz NULL,
      decision_due_at timestamptz NOT NULL,
      decided_at timestamptz NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX payouts_merchant_idx ON payouts (merchant_id, created_at);
    CREATE UNIQUE INDEX payouts_request_key_idx ON payouts (merchant_id, request_key) WHERE request_key IS NOT NULL;
    CREATE UNIQUE INDEX payouts_out_trade_no_idx ON payouts (merchant_id, out_trade_no) WHERE out_trade_no IS NOT NULL;
    CREATE INDEX payouts_undecided_idx ON payouts (decision_due_at) WHERE status IN ('held', 'requested');
    CREATE INDEX payouts_awaiting_idx ON payouts (approval_due_at) WHERE status = 'awaiting_approval';
    CREATE TABLE payout_notifications (
      id bigserial PRIMARY KEY,
      payout_reference text NOT NULL,
      status text NOT NULL CHECK (status IN ('payout_succeeded', 'payout_failed')),
      amount_units bigint NOT NULL,
      payout_trx_ref text NULL,
      failure_reason text NULL,
      raw_body text NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (payout_reference, status)
    );
    CREATE TABLE payout_approvals (
      id bigserial PRIMARY KEY,
      payout_reference text NOT NULL UNIQUE,
      decision text NOT NULL CHECK (decision IN ('approve', 'reject')),
      actor text NOT NULL,
      note text NOT NULL DEFAULT '',
      decided_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE merchant_payout_settings (
      merchant_id text PRIMARY KEY,
      min_units bigint NULL CHECK (min_units > 0),
      per_payout_max_units bigint NULL CHECK (per_payout_max_units > 0),
      daily_max_units bigint NULL CHECK (daily_max_units > 0),
      approval_threshold_units bigint NULL CHECK (approval_threshold_units > 0),
      updated_at timestamptz NOT NULL DEFAULT now()
    );
    INSERT INTO fee_schedule (channel_code, fee) VALUES ('USDT_TRC20', '{"fee_payout": {"amount": 1, "currency": "USDT"}}'::jsonb)
      ON CONFLICT (channel_code) DO NOTHING;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DELETE FROM fee_schedule WHERE channel_code = 'USDT_TRC20';
    DROP TABLE merchant_payout_settings; DROP TABLE payout_approvals; DROP TABLE payout_notifications; DROP TABLE payouts;
  `);
}
