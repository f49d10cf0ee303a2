import type { Knex } from 'knex';

/**
 * 004_transfers (Area A): pre-transfers. One row per pre-transfer; the PreTransferWorkflow (id =
 * pre_transfer_id) drives state pending → confirmed | expired, and query.fundTransfer answers from this row.
 * Money columns are minor units (bigint).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('pre_transfers', (table) => {
    table.string('id', 64).primary(); // pre_transfer_id, alphanumeric
    table.string('partner_id', 64).notNullable();
    table.string('out_trade_no', 64).notNullable();
    /** SHA-256 hex of the create request's fields, for out_trade_no idempotency. */
    table.string('request_fingerprint', 64).notNullable();
    table.string('receiver_id', 25).notNullable(); // as the partner sent it
    table.string('receiver_user_id', 32).notNullable();
    table.string('receiver_name', 96).notNullable();
    table.string('sender_name', 96).notNullable();
    table.bigInteger('amount_units').notNullable();
    table.string('currency', 3).notNullable();
    table.uuid('pending_transfer_id').notNullable(); // ledger hold on the partner float
    table.string('state', 16).notNullable().defaultTo('pending'); // pending | confirmed | expired
    table.integer('ttl_seconds').notNullable();
    table.timestamp('expires_at', { useTz: true }).notNullable();
    table.string('partner_transaction_id', 64);
    table.string('fund_transfer_id', 64);
    table.timestamp('confirmed_at', { useTz: true });
    table.timestamp('expired_at', { useTz: true });
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.unique(['partner_id', 'out_trade_no']);
    table.unique(['partner_id', 'partner_transaction_id']);
    table.unique(['fund_transfer_id']);
  });
  await knex.raw(`ALTER TABLE pre_transfers ADD CONSTRAINT pre_transfers_state_check CHECK (state IN ('pending', 'confirmed', 'expired'))`);
  await knex.raw(`ALTER TABLE pre_transfers ADD CONSTRAINT pre_transfers_amount_check CHECK (amount_units > 0)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('pre_transfers');
}
