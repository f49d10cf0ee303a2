import type { Knex } from 'knex';

/**
 * 024_pre_transfer_started: when a pre-transfer's workflow is known to have started. A create whose start failed
 * releases its hold and forgets its row only while this is unset; a repeat of the create starts the workflow itself
 * before answering, so no answer ever names a pre-transfer that is then released. Rows from before were started.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pre_transfers', (table) => {
    table.timestamp('workflow_started_at', { useTz: true }).nullable();
  });
  await knex.raw('UPDATE pre_transfers SET workflow_started_at = created_at');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pre_transfers', (table) => {
    table.dropColumn('workflow_started_at');
  });
}
