import type { Knex } from 'knex';

/**
 * 009_deposits (Area C deposits; docs/area-c.md "Deposits and confirmations"):
 * one row per deposit (`reference` `DEP…`, also the DepositWorkflow id and the ledger idempotency key of its
 * posting). The deposit token (`dtk_…`, the bearer of confirm_payments and of the Visa/Master confirmation URL) is
 * stored only as SHA-256 hex. `user_id` is null for a guest card deposit from the hosted preorder page.
 *
 * state: pending → completed | declined (card refused) | failed (preorder paid meanwhile) | cancelled (OTP attempts
 * exhausted) | expired (DEPOSIT_TTL_SECONDS passed). `failure_message` is the interface message of the end state.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('deposits', (table) => {
    table.text('reference').primary();
    table.text('token_sha256').notNullable().unique();
    table.text('merchant_id').notNullable().references('id').inTable('merchants');
    table.bigInteger('user_id').nullable().references('id').inTable('users');
    table.text('instrument_token').notNullable();
    table.text('instrument_kind').notNullable(); // local_card | bank_account | visa_master
    table.text('pre_order_token').nullable().references('token').inTable('preorders');
    table.bigInteger('amount_units').notNullable();
    table.text('currency').notNullable();
    table.smallint('token_type').notNullable(); // 1 OTP, 2 card confirmation form
    table.text('state').notNullable().defaultTo('pending');
    table.text('failure_message').nullable();
    table.text('ledger_transaction_id').nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('expires_at', { useTz: true }).notNullable();
    table.timestamp('finished_at', { useTz: true }).nullable();
    table.index(['merchant_id']);
    table.index(['pre_order_token']);
  });
  await knex.raw(
    `ALTER TABLE deposits ADD CONSTRAINT deposits_state_check CHECK (state IN ('pending', 'completed', 'declined', 'failed', 'cancelled', 'expired'))`,
  );
  await knex.raw(`ALTER TABLE deposits ADD CONSTRAINT deposits_amount_check CHECK (amount_units > 0)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('deposits');
}
