import type { Knex } from 'knex';

/**
 * 020_service_credentials: the callers of the internal Connect RPC (the façade, operators' admin CLI, other
 * internal services). A credential is an id, scopes and the SHA-256 of its secret; the token itself is shown once.
 * Revocation keeps the row (who had access, until when).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('service_credentials', (table) => {
    table.string('id', 32).primary();
    table.string('name', 100).notNullable();
    table.specificType('scopes', 'text[]').notNullable();
    table.string('secret_hash', 64).notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('revoked_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('service_credentials');
}
