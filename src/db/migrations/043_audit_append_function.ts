import type { Knex } from 'knex';

/**
 * 043_audit_append_function: audit rows are written through one function, `append_audit_record`, which stamps the
 * database role that called it (`database_role`, the session's login role), so a serving role holds EXECUTE on it and
 * no INSERT on `audit_records` (src/cli/cluster-database-roles.ts): the api and worker roles can append a record only
 * under their own role's name, never one that looks written by another. A trigger stamps the role on any INSERT
 * too, so not even the table's owner can write a row naming another role. SECURITY DEFINER with a fixed search_path:
 * the function inserts as its owner, whatever the caller's search_path says.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE audit_records ADD COLUMN database_role text;

    CREATE FUNCTION audit_records_stamp_role() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      NEW.database_role := session_user;
      RETURN NEW;
    END;
    $$;
    CREATE TRIGGER audit_records_stamp_role BEFORE INSERT ON audit_records
      FOR EACH ROW EXECUTE FUNCTION audit_records_stamp_role();

    CREATE FUNCTION append_audit_record(
      credential_id text, caller_address text, client_address text, procedure text, arguments jsonb, outcome text
    ) RETURNS bigint LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
      INSERT INTO public.audit_records (credential_id, caller_address, client_address, procedure, arguments, outcome)
      VALUES ($1, $2, $3, $4, $5, $6)
      RETURNING id
    $$;
    REVOKE ALL ON FUNCTION append_audit_record(text, text, text, text, jsonb, text) FROM PUBLIC;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION append_audit_record(text, text, text, text, jsonb, text);
    DROP TRIGGER audit_records_stamp_role ON audit_records;
    DROP FUNCTION audit_records_stamp_role();
    ALTER TABLE audit_records DROP COLUMN database_role;
  `);
}
