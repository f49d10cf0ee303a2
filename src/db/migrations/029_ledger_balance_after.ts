import type { Knex } from 'knex';

/**
 * 029_ledger_balance_after: each posting records its account's posted balance after it (minor units), written by
 * the statement that updates the account, so a payment's timeline shows the balance each posting left without
 * summing the account's history. Postings from before stay null; the ledger check verifies every recorded value
 * against the running sum of the account's postings.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE ledger_postings ADD COLUMN balance_after_units bigint');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE ledger_postings DROP COLUMN balance_after_units');
}
