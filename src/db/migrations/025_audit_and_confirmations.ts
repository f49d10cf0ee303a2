import type { Knex } from 'knex';

/**
 * 025_audit_and_confirmations:
 *
 * `audit_records`, the audit trail (src/rpc/audit.ts): one row per privileged call and per call of a credential bound
 * to a partner or merchant: when, which credential from which address (and the end client's address it said it acted
 * for), the procedure, its arguments with secrets removed, and its outcome. Append-only: the database itself refuses UPDATE, DELETE and TRUNCATE on it.
 *
 * `pre_transfer_confirmations`: each confirm request of a pre-transfer that the api verified (the partner's token and
 * signature, or a credential bound to the partner), written before the `confirm` Update is sent. The activity that
 * posts the hold moves money only for a partner_transaction_id recorded here, so an Update sent straight to Temporal
 * posts nothing. A pre-transfer released before its workflow started takes its rows with it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE audit_records (
      id bigserial PRIMARY KEY,
      at timestamptz NOT NULL DEFAULT now(),
      credential_id text NOT NULL,
      caller_address text NOT NULL,
      client_address text,
      procedure text NOT NULL,
      arguments jsonb NOT NULL,
      outcome text NOT NULL
    );
    CREATE INDEX audit_records_credential_idx ON audit_records (credential_id, id);
    CREATE INDEX audit_records_procedure_idx ON audit_records (procedure, id);

    CREATE FUNCTION audit_records_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'audit_records is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
    END;
    $$;
    CREATE TRIGGER audit_records_no_change BEFORE UPDATE OR DELETE ON audit_records
      FOR EACH ROW EXECUTE FUNCTION audit_records_append_only();
    CREATE TRIGGER audit_records_no_truncate BEFORE TRUNCATE ON audit_records
      FOR EACH STATEMENT EXECUTE FUNCTION audit_records_append_only();

    CREATE TABLE pre_transfer_confirmations (
      pre_transfer_id text NOT NULL REFERENCES pre_transfers (id) ON DELETE CASCADE,
      partner_transaction_id text NOT NULL,
      partner_id text NOT NULL,
      body_sha256 text NOT NULL,
      credential_id text,
      received_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (pre_transfer_id, partner_transaction_id)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE pre_transfer_confirmations;
    DROP TABLE audit_records;
    DROP FUNCTION audit_records_append_only();
  `);
}
