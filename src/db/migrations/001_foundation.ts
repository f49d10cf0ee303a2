import type { Knex } from 'knex';

/** Foundation: the platform's key-value settings (e.g. which demo data was created). */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('platform_settings', (table) => {
    table.text('key').primary();
    table.jsonb('value').notNullable();
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('platform_settings');
}
