import type { Knex } from 'knex';

/**
 * 021_payin_forwarding: B1 records a payin before forwarding it upstream. `forwarding_until` bounds how long an
 * unanswered forward holds its out_trade_no: a process that died mid-forward frees it once that time has passed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('payins', (table) => {
    table.timestamp('forwarding_until', { useTz: true }).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('payins', (table) => {
    table.dropColumn('forwarding_until');
  });
}
