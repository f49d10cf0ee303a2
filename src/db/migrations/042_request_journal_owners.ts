import type { Knex } from 'knex';

/**
 * 042_request_journal_owners: a journaled request is filed under a payment only once the payment is proven its
 * caller's (docs/timeline.md "Requests"). A refused request that named a payment its caller does not own keeps that
 * name in `named_reference`, for operators, with `reference` NULL: the journal never files anyone's request under a
 * payment that is not theirs, so no reader can take the journal for a list of a payment's owners.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE payment_requests ALTER COLUMN reference DROP NOT NULL;
    ALTER TABLE payment_requests ADD COLUMN named_reference text NULL CHECK (length(named_reference) BETWEEN 1 AND 128);
    ALTER TABLE payment_requests ADD CONSTRAINT payment_requests_filed_or_named CHECK (reference IS NOT NULL OR named_reference IS NOT NULL);
    CREATE INDEX payment_requests_named_reference_idx ON payment_requests (named_reference, received_at) WHERE named_reference IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DELETE FROM payment_requests WHERE reference IS NULL;
    DROP INDEX payment_requests_named_reference_idx;
    ALTER TABLE payment_requests DROP CONSTRAINT payment_requests_filed_or_named;
    ALTER TABLE payment_requests DROP COLUMN named_reference;
    ALTER TABLE payment_requests ALTER COLUMN reference SET NOT NULL;
  `);
}
