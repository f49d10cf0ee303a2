import type { Knex } from 'knex';

/**
 * 010_payin_outbox (docs/payins.md "Workflow start: transactional outbox"): one row per payin whose
 * PayinWorkflow has not been started yet. B1 inserts it in the same transaction as the payin, so a committed payin
 * always gets its workflow; the dispatcher of the api role (src/payins/outbox.ts) starts the workflows in batches
 * (idempotent by workflow id = invoice_reference) and deletes the rows.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('payin_workflow_outbox', (table) => {
    table.bigIncrements('id').primary();
    table.string('invoice_reference', 32).notNullable().unique().references('invoice_reference').inTable('payins').onDelete('CASCADE');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('payin_workflow_outbox');
}
