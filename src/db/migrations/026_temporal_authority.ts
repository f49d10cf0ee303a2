import type { Knex } from 'knex';

/**
 * 026_temporal_authority (docs/security.md "Temporal messages"; docs/area-c.md "Deposits and confirmations";
 * docs/payins.md "Workflow start and notification hand-over"):
 *
 * - `deposit_confirmations`: one row per confirmation of a deposit that the authenticated request path received
 *   (the payer's submission of the card confirmation page, or the merchant's verified confirm_payments), written
 *   before the DepositWorkflow's Update. The activities that authorize, check the OTP and complete the deposit
 *   re-read it: an Update that names no such row moves nothing. A row is taken once (`used_by`: the activity that
 *   took it) and records the acquirer's decision (`outcome`). Kept: it is who confirmed, when, from where.
 * - `deposits.max_password_attempts`: the wrong passwords a deposit allows, fixed at its creation (the workflow's
 *   own copy comes from its start input, which a Temporal client could forge). Null on rows from before.
 * - `payin_workflow_outbox.due_at`: when the row's workflow start is due. The dispatcher claims due rows by moving
 *   it forward (a lease, committed at once) and starts the workflows outside any transaction.
 * - `upstream_notifications.handoff_due_at` / `handed_at`: an applied notification is handed to its PayinWorkflow
 *   by the request that recorded it; when that cannot reach Temporal in time, the dispatcher hands it over once
 *   `handoff_due_at` has passed. `handed_at`: when Temporal accepted it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('deposit_confirmations', (table) => {
    table.text('id').primary();
    table.text('deposit_reference').notNullable().references('reference').inTable('deposits').onDelete('CASCADE');
    table.text('method').notNullable(); // card_form | password
    table.text('actor').notNullable(); // payer (hosted confirmation page) | merchant (confirm_payments)
    table.text('merchant_id').nullable();
    table.bigInteger('user_id').nullable();
    table.text('client_address').nullable();
    table.timestamp('recorded_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.text('used_by').nullable();
    table.timestamp('used_at', { useTz: true }).nullable();
    table.text('outcome').nullable(); // approved | declined | password_valid | password_wrong
    table.text('authorization_id').nullable();
    table.timestamp('decided_at', { useTz: true }).nullable();
    table.index(['deposit_reference']);
  });
  await knex.raw(`ALTER TABLE deposit_confirmations ADD CONSTRAINT deposit_confirmations_method_check CHECK (method IN ('card_form', 'password'))`);
  await knex.raw(`ALTER TABLE deposit_confirmations ADD CONSTRAINT deposit_confirmations_actor_check CHECK (actor IN ('payer', 'merchant'))`);
  await knex.raw(
    `ALTER TABLE deposit_confirmations ADD CONSTRAINT deposit_confirmations_outcome_check CHECK (outcome IN ('approved', 'declined', 'password_valid', 'password_wrong'))`,
  );

  await knex.schema.alterTable('deposits', (table) => {
    table.smallint('max_password_attempts').nullable();
  });

  await knex.schema.alterTable('payin_workflow_outbox', (table) => {
    table.timestamp('due_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.index(['due_at']);
  });

  await knex.schema.alterTable('upstream_notifications', (table) => {
    table.timestamp('handoff_due_at', { useTz: true }).nullable();
    table.timestamp('handed_at', { useTz: true }).nullable();
  });
  await knex.raw('CREATE INDEX upstream_notifications_handoff_due ON upstream_notifications (handoff_due_at) WHERE handoff_due_at IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS upstream_notifications_handoff_due');
  await knex.schema.alterTable('upstream_notifications', (table) => {
    table.dropColumn('handoff_due_at');
    table.dropColumn('handed_at');
  });
  await knex.schema.alterTable('payin_workflow_outbox', (table) => {
    table.dropIndex(['due_at']);
    table.dropColumn('due_at');
  });
  await knex.schema.alterTable('deposits', (table) => {
    table.dropColumn('max_password_attempts');
  });
  await knex.schema.dropTableIfExists('deposit_confirmations');
}
