import type { Knex } from 'knex';

/**
 * 005_payins (Area B): payins (top-up records), upstream notifications (idempotency of the provider's
 * callbacks), webhook events (one per event sent to a merchant) and every webhook delivery attempt.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('payins', (table) => {
    table.string('invoice_reference', 32).primary();
    table.string('merchant_id', 64).notNullable().index();
    table.string('out_trade_no', 255).notNullable();
    table.bigInteger('amount_units').notNullable(); // requested, minor units
    table.bigInteger('paid_amount_units').nullable(); // actually paid and credited
    table.bigInteger('fee_units').notNullable().defaultTo(0);
    table.string('payin_fee_percent', 16).notNullable();
    table.string('currency', 8).notNullable();
    table.string('memo', 255).nullable();
    table.string('status', 16).notNullable(); // waiting | success | expired | close | failed
    table.boolean('late').notNullable().defaultTo(false);
    table.string('payment_match_status', 16).nullable(); // exact | overpaid | underpaid
    table.string('trx_ref', 255).nullable();
    table.text('qr_content').nullable();
    table.string('failure_reason', 255).nullable();
    table.string('ledger_transaction_id', 64).nullable();
    table.timestamp('expires_at', { useTz: true }).nullable();
    table.timestamp('settled_at', { useTz: true }).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // out_trade_no is unique per merchant among payins that did not fail (platform decisions §4).
  await knex.raw(
    `CREATE UNIQUE INDEX payins_merchant_out_trade_no_live ON payins (merchant_id, out_trade_no) WHERE status <> 'failed'`,
  );
  await knex.raw(`CREATE INDEX payins_merchant_out_trade_no ON payins (merchant_id, out_trade_no, created_at)`);

  await knex.schema.createTable('upstream_notifications', (table) => {
    table.bigIncrements('id').primary();
    table.string('idempotency_key', 600).notNullable().unique();
    table.string('invoice_reference', 32).notNullable().index();
    table.string('status', 16).notNullable();
    table.bigInteger('amount_units').nullable();
    table.string('trx_ref', 255).nullable();
    table.text('raw_body').notNullable();
    table.string('outcome', 32).notNullable(); // applied | ignored
    table.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('webhook_events', (table) => {
    table.string('id', 80).primary(); // the webhook id (X-Webhook-Id), also the delivery workflow id
    table.string('merchant_id', 64).notNullable().index();
    table.string('invoice_reference', 32).notNullable().index();
    table.string('event', 32).notNullable(); // payin.success | payin.expired | payin.closed
    table.text('body').notNullable(); // the exact bytes sent on every attempt
    table.text('callback_url').notNullable();
    table.string('signature_header', 128).notNullable();
    table.string('status', 16).notNullable().defaultTo('pending'); // pending | delivered | failed
    table.integer('attempt_count').notNullable().defaultTo(0);
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('delivered_at', { useTz: true }).nullable();
  });

  await knex.schema.createTable('webhook_delivery_attempts', (table) => {
    table.bigIncrements('id').primary();
    table.string('webhook_id', 80).notNullable().references('id').inTable('webhook_events').onDelete('CASCADE');
    table.integer('attempt').notNullable();
    table.timestamp('attempted_at', { useTz: true }).notNullable();
    table.integer('status_code').nullable();
    table.integer('latency_ms').notNullable();
    table.string('error', 500).nullable();
    table.unique(['webhook_id', 'attempt']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_delivery_attempts');
  await knex.schema.dropTableIfExists('webhook_events');
  await knex.schema.dropTableIfExists('upstream_notifications');
  await knex.schema.dropTableIfExists('payins');
}
