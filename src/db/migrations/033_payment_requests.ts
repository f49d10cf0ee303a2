import type { Knex } from 'knex';

/**
 * 033_payment_requests: the request journal of a payment's timeline (docs/timeline.md). One row per request received
 * about a payment once its reference is known: who sent it (owner kind and id; `upstream` for the payin server's
 * notifications), which route and action, the request's idempotency key, the client address, and how it was
 * answered (`ok` or the refusal's reason). Never a body, a secret or card data: the columns are all there is.
 * Bounded by CHECKs; read by reference (index on reference, received_at).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE payment_requests (
      id bigserial PRIMARY KEY,
      reference text NOT NULL CHECK (length(reference) BETWEEN 1 AND 128),
      owner_kind text NOT NULL CHECK (owner_kind IN ('merchant', 'partner', 'upstream')),
      owner_id text NULL CHECK (length(owner_id) <= 64),
      action text NOT NULL CHECK (length(action) BETWEEN 1 AND 64),
      idempotency_key text NULL CHECK (length(idempotency_key) <= 128),
      client_address text NULL CHECK (length(client_address) <= 64),
      outcome text NOT NULL CHECK (length(outcome) BETWEEN 1 AND 64),
      duration_ms integer NULL CHECK (duration_ms >= 0),
      received_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX payment_requests_reference_idx ON payment_requests (reference, received_at);
    CREATE INDEX payment_requests_received_at_idx ON payment_requests (received_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE payment_requests');
}
