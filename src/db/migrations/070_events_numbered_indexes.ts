import type { Knex } from 'knex';

/**
 * 070_events_numbered_indexes: the two indexes of `events` that lead to `seq` cover numbered events only. An event is
 * written unnumbered (048) and numbered moments later by an UPDATE that sets `seq`, which enters the row in every
 * index again anyway; until then its entries in `(owner_type, owner_id, seq)` and `(owner_type, owner_id, type, seq)`
 * were dead weight, and all of one owner's unnumbered events had the same key there (seq NULL), so a burst of one
 * merchant's writes contended for one leaf page of each. Every reader of those indexes reads numbered events only
 * (`seq > ?`, `seq < ?` or `seq IS NOT NULL`), so partial indexes serve the same plans. The uniqueness of an owner's
 * numbers is unchanged: NULLs never conflicted in the old constraint, and the new unique index covers every
 * numbered row. Building them locks the table's writes for the length of the build.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE UNIQUE INDEX events_owner_seq_numbered_key ON events (owner_type, owner_id, seq) WHERE seq IS NOT NULL;
    ALTER TABLE events DROP CONSTRAINT events_owner_type_owner_id_seq_key;
    CREATE INDEX events_owner_type_numbered_idx ON events (owner_type, owner_id, type, seq) WHERE seq IS NOT NULL;
    DROP INDEX events_owner_type_idx;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE INDEX events_owner_type_idx ON events (owner_type, owner_id, type, seq);
    DROP INDEX events_owner_type_numbered_idx;
    ALTER TABLE events ADD CONSTRAINT events_owner_type_owner_id_seq_key UNIQUE (owner_type, owner_id, seq);
    DROP INDEX events_owner_seq_numbered_key;
  `);
}
