import type { Knex } from 'knex';

/**
 * 023_data_keys: the data keys secrets at rest are sealed under (src/crypto/data-keys.ts), by id, with a
 * fingerprint that identifies each key without revealing it. A key is registered before anything is sealed under
 * it; start-up refuses a key directory that lacks a registered key or holds another key under its id. Secrets
 * sealed before key ids existed are under `k0`: registered here without a fingerprint, which the first start
 * fills in once a `k0` secret opens under its `data-encryption.key`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('data_keys', (table) => {
    table.string('id', 20).primary();
    table.string('fingerprint', 64).nullable();
    table.timestamp('registered_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`
    INSERT INTO data_keys (id)
    SELECT 'k0' WHERE EXISTS (SELECT 1 FROM merchants) OR EXISTS (SELECT 1 FROM instruments)
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('data_keys');
}
