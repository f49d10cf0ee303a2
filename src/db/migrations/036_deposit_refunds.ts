import type { Knex } from 'knex';

/**
 * 036_deposit_refunds: refunds of Area C deposits (docs/refunds.md "Area C"). `deposits.capture_state` is where a
 * Visa/Master deposit's capture and a refund's reversal meet, under the deposit's row lock: `authorized` (completed,
 * not captured yet) → `capturing` → `captured`, or `authorized` → `reversing` → `reversed` (a refund before
 * capture; the capture then never happens). Null for OTP deposits (local card, bank account), which the acquirer
 * never authorized. Completed Visa/Master deposits from before were captured right after their completion.
 * `deposit_refunds` holds one row per refund (id = its reference `DRF…`, also its workflow's id) with its holds.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE deposits ADD COLUMN capture_state text NULL
      CHECK (capture_state IN ('authorized', 'capturing', 'captured', 'reversing', 'reversed'));
    UPDATE deposits SET capture_state = 'captured' WHERE state = 'completed' AND instrument_kind = 'visa_master';
    CREATE TABLE deposit_refunds (
      refund_reference text PRIMARY KEY CHECK (length(refund_reference) BETWEEN 1 AND 64),
      merchant_id text NOT NULL,
      deposit_reference text NOT NULL REFERENCES deposits (reference),
      method text NOT NULL CHECK (method IN ('reversal', 'refund')),
      status text NOT NULL CHECK (status IN ('held', 'succeeded', 'failed')),
      amount_units bigint NOT NULL CHECK (amount_units > 0),
      commission_units bigint NOT NULL DEFAULT 0 CHECK (commission_units >= 0),
      currency text NOT NULL,
      reason text NOT NULL DEFAULT '',
      hold_transfer_id text NULL,
      commission_hold_transfer_id text NULL,
      webhook_id text NULL,
      acquirer_refund_id text NULL,
      failure_reason text NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      decided_at timestamptz NULL
    );
    CREATE INDEX deposit_refunds_deposit_idx ON deposit_refunds (deposit_reference, created_at);
    CREATE INDEX deposit_refunds_held_idx ON deposit_refunds (created_at) WHERE status = 'held';
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE deposit_refunds; ALTER TABLE deposits DROP COLUMN capture_state;');
}
