import type { Knex } from 'knex';

/**
 * 021_payin_forwarding: B1 records a payin before forwarding it upstream. `forwarding_until` bounds how long an
 * unanswered forward holds its out_trade_no: a process that died mid-forward frees it once that time has passed.
 * `request_key` (the request's own idempotency key) and `qr_image` let a retry with the same Idempotency-Key get
 * the first answer when the process died after the forward but before the answer was recorded.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('payins', (table) => {
    table.timestamp('forwarding_until', { useTz: true }).nullable();
    table.string('request_key', 600).nullable();
    table.text('qr_image').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('payins', (table) => {
    table.dropColumn('forwarding_until');
    table.dropColumn('request_key');
    table.dropColumn('qr_image');
  });
}
