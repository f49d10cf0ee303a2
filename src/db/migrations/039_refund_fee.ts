import type { Knex } from 'knex';

/**
 * 039_refund_fee: whether a refund returns the payin fee (docs/refunds.md "What can be refunded (fees)").
 * `merchant_outcome_policies.refund_fee`: the merchant's setting, `kept` (default: the platform keeps the fee, as
 * before) or `returned`. Each refund stores the setting in force when it was created (`refunds.refund_fee`, so a later
 * change does not alter a held refund), the fee share it returns (`fee_units`, minor units, taken from fee_revenue;
 * 0 when kept) and the second hold that carries it (`fee_pending_transfer_id`, ledger key `<ref>:hold-fee`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE merchant_outcome_policies
      ADD COLUMN refund_fee text NOT NULL DEFAULT 'kept' CHECK (refund_fee IN ('kept', 'returned'));
    ALTER TABLE refunds
      ADD COLUMN refund_fee text NOT NULL DEFAULT 'kept' CHECK (refund_fee IN ('kept', 'returned')),
      ADD COLUMN fee_units bigint NOT NULL DEFAULT 0,
      ADD COLUMN fee_pending_transfer_id text NULL,
      ADD CONSTRAINT refunds_fee_units_check CHECK (fee_units >= 0 AND fee_units < amount_units AND (refund_fee = 'returned' OR fee_units = 0));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE refunds DROP CONSTRAINT refunds_fee_units_check, DROP COLUMN fee_pending_transfer_id, DROP COLUMN fee_units, DROP COLUMN refund_fee;
    ALTER TABLE merchant_outcome_policies DROP COLUMN refund_fee;
  `);
}
