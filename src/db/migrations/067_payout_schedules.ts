import type { Knex } from 'knex';

/**
 * 067_payout_schedules: a merchant's automatic payouts (docs/payouts.md "Schedules"): daily or weekly, when the
 * wallet's available balance less the reserve and the fee reaches the minimum, to a saved destination address. One
 * Temporal Schedule per merchant (`payout-schedule-<merchant_id>`) runs them; this row is what each run reads.
 * Amounts in minor units of USDT.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE merchant_payout_schedules (
      merchant_id text PRIMARY KEY,
      every text NOT NULL CHECK (every IN ('daily', 'weekly')),
      minimum_units bigint NOT NULL CHECK (minimum_units > 0),
      reserve_units bigint NOT NULL DEFAULT 0 CHECK (reserve_units >= 0),
      address text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE merchant_payout_schedules;');
}
