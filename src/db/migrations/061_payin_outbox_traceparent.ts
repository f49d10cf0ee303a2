import type { Knex } from 'knex';

/**
 * 061_payin_outbox_traceparent: the W3C `traceparent` of the request that created a payin, kept with its workflow-start
 * outbox row, so the dispatcher starts the PayinWorkflow inside that request's trace (docs/operations.md "Traces"):
 * one trace then shows the payin from the façade to its settlement's activity and its webhook. NULL without tracing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE payin_workflow_outbox ADD COLUMN traceparent text NULL CHECK (length(traceparent) <= 256)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE payin_workflow_outbox DROP COLUMN traceparent');
}
