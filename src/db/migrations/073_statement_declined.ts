import type { Knex } from 'knex';

/**
 * 073_statement_declined: `written_or_declined(written)`, true when `written`, else it raises SQLSTATE `PD001`
 * ("statement declined"). A write made of one statement outside any transaction (the ledger's transfer with the
 * caller's rows in the same statement, Ledger.transferAtOnce) calls it last, on whether the ledger claimed its key:
 * raising aborts the statement's implicit transaction, so the caller's rows (which cannot all be made conditional on
 * the claim: a client's idempotency key is claimed by the unique index itself) are written with the ledger's or not at
 * all. VOLATILE, so that PostgreSQL never evaluates it ahead of the rows it is given.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION written_or_declined(written boolean) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
    BEGIN
      IF written THEN
        RETURN true;
      END IF;
      RAISE EXCEPTION 'statement declined: nothing written' USING ERRCODE = 'PD001';
    END
    $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS written_or_declined(boolean)');
}
