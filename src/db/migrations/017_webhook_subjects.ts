import type { Knex } from 'knex';

/**
 * 017_webhook_subjects: outbound webhooks serve every capability (payin events, bank-account activation call-backs,
 * preorder call-backs), so an event's subject is a payin's invoice_reference, a bank-account token or a preorder
 * token: the column widens to hold any of them. Its name stays for compatibility.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE webhook_events ALTER COLUMN invoice_reference TYPE varchar(128)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE webhook_events ALTER COLUMN invoice_reference TYPE varchar(32)');
}
