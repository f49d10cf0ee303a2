import type { Knex } from 'knex';

/**
 * 037_merchant_outcome_policies: a merchant's payment-outcome resolution policy (docs/refunds.md "Outcome
 * policies"): what the payin settlement does with an underpaid, overpaid or late payment (credit it, or refund it or
 * its excess to the payer) and the tolerance (percent of the invoice, 0–100, at most 2 decimals) within which a
 * payment counts as matching. One row per merchant; no row: everything is credited (the contract's behaviour).
 * (The CHECK writes `{0,1}`, not `?`: knex.raw reads a `?` as a binding.) `updated_by` names the credential of the operator call that last set it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE merchant_outcome_policies (
      merchant_id text PRIMARY KEY CHECK (length(merchant_id) BETWEEN 1 AND 64),
      underpaid text NOT NULL DEFAULT 'credit' CHECK (underpaid IN ('credit', 'refund')),
      overpaid text NOT NULL DEFAULT 'credit' CHECK (overpaid IN ('credit', 'refund_excess')),
      late text NOT NULL DEFAULT 'credit' CHECK (late IN ('credit', 'refund')),
      tolerance_percent text NOT NULL DEFAULT '0'
        CHECK (tolerance_percent ~ '^[0-9]{1,3}([.][0-9]{1,2}){0,1}$' AND tolerance_percent::numeric <= 100),
      updated_at timestamptz NOT NULL DEFAULT now(),
      updated_by text NOT NULL CHECK (length(updated_by) BETWEEN 1 AND 128)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE merchant_outcome_policies');
}
