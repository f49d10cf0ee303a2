import type { Knex } from 'knex';

/**
 * 016_idempotency_keys: the clients' `Idempotency-Key`s of money-moving requests (Area B payin creation, Area C
 * transfers, blocked money, payments by token and deposits). One row per (scope, key): the operation and a
 * fingerprint of its parameters, whether it is still running, and the first answer (protobuf bytes of the RPC
 * response, or the domain error) that every repeat receives. Rows live at least `expires_at`; expired rows may be
 * reused or purged.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (table) => {
    table.string('scope', 100).notNullable(); // who owns the key, e.g. "merchant:<id>"
    table.string('key', 255).notNullable();
    table.string('operation', 64).notNullable();
    table.string('fingerprint', 64).notNullable(); // hex SHA-256 of the operation's parameters
    table.string('state', 16).notNullable(); // running | completed
    table.binary('response'); // the first successful answer
    table.jsonb('error'); // or the first business refusal: { reason, kind, message, fields }
    table.timestamp('locked_until', { useTz: true }).notNullable(); // a running claim older than this may be taken over
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('expires_at', { useTz: true }).notNullable();
    table.primary(['scope', 'key']);
    table.index(['expires_at']);
  });
  await knex.raw(`ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state CHECK (state IN ('running', 'completed'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('idempotency_keys');
}
