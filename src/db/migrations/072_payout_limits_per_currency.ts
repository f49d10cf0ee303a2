import type { Knex } from 'knex';

/**
 * 072_payout_limits_per_currency: a merchant's payout limits are per currency (docs/payouts.md "Limits"): its crypto
 * payouts' in USDT, its users' bank payouts' (Area C) in USD, each with its own minimum, per-payout and daily limits
 * and approval threshold. The limits set so far were USDT's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE merchant_payout_settings ADD COLUMN currency text NOT NULL DEFAULT 'USDT' CHECK (currency IN ('USDT', 'USD'));
    ALTER TABLE merchant_payout_settings ALTER COLUMN currency DROP DEFAULT;
    ALTER TABLE merchant_payout_settings DROP CONSTRAINT merchant_payout_settings_pkey;
    ALTER TABLE merchant_payout_settings ADD PRIMARY KEY (merchant_id, currency);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DELETE FROM merchant_payout_settings WHERE currency <> 'USDT';
    ALTER TABLE merchant_payout_settings DROP CONSTRAINT merchant_payout_settings_pkey;
    ALTER TABLE merchant_payout_settings DROP COLUMN currency;
    ALTER TABLE merchant_payout_settings ADD PRIMARY KEY (merchant_id);
  `);
}
