import type { Knex } from 'knex';

/**
 * 048_events_numbered_after_commit: an event is written unnumbered (`seq` NULL) in the transaction of its change and
 * numbered after that transaction committed, by `number_owner_events` (docs/events.md "Sequence guarantees"), so no
 * writer holds its owner's sequence across its transaction. The function serializes one owner's numberers on a
 * transaction-scoped advisory lock, reads the owner's `last_seq` and numbers every committed unnumbered event of the
 * owner in `id` order in one statement, with the webhooks produced from them (`webhook_events.event_id`), then
 * advances `last_seq`; all of it commits at once, so a reader never sees a gap. Each statement of the (volatile)
 * function takes a new snapshot, so the numbers written by the previous holder of the lock are seen.
 * `events_unnumbered_idx` keeps the search for pending events an index probe on a small index.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE events ALTER COLUMN seq DROP NOT NULL;
    CREATE INDEX events_unnumbered_idx ON events (owner_type, owner_id, id) WHERE seq IS NULL;
    ALTER TABLE webhook_events ADD COLUMN event_id bigint NULL;
    UPDATE webhook_events w SET event_id = e.id
      FROM events e
     WHERE e.owner_type = 'merchant' AND e.owner_id = w.merchant_id AND e.seq = w.event_seq;
    CREATE INDEX webhook_events_event_id_idx ON webhook_events (event_id) WHERE event_id IS NOT NULL;
    CREATE FUNCTION number_owner_events(p_owner_type text, p_owner_id text, p_limit integer) RETURNS integer
    LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
      base bigint;
      numbered integer;
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM events WHERE owner_type = p_owner_type AND owner_id = p_owner_id AND seq IS NULL) THEN
        RETURN 0;
      END IF;
      PERFORM pg_advisory_xact_lock(hashtextextended('events:' || p_owner_type || ':' || p_owner_id, 48));
      SELECT last_seq INTO base FROM event_sequences WHERE owner_type = p_owner_type AND owner_id = p_owner_id;
      base := coalesce(base, 0);
      WITH pending AS (
        SELECT id, row_number() OVER (ORDER BY id) AS n
          FROM events
         WHERE owner_type = p_owner_type AND owner_id = p_owner_id AND seq IS NULL
         ORDER BY id
         LIMIT p_limit
      ), done AS (
        UPDATE events e SET seq = base + pending.n FROM pending WHERE e.id = pending.id RETURNING e.id, e.seq
      ), hooks AS (
        UPDATE webhook_events w SET event_seq = done.seq FROM done WHERE w.event_id = done.id RETURNING 1
      )
      SELECT count(*) INTO numbered FROM done;
      IF numbered > 0 THEN
        INSERT INTO event_sequences (owner_type, owner_id, last_seq) VALUES (p_owner_type, p_owner_id, base + numbered)
        ON CONFLICT (owner_type, owner_id) DO UPDATE SET last_seq = EXCLUDED.last_seq;
      END IF;
      RETURN numbered;
    END $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    SELECT number_owner_events(owner_type, owner_id, 2147483647)
      FROM (SELECT DISTINCT owner_type, owner_id FROM events WHERE seq IS NULL) pending;
    DROP FUNCTION number_owner_events(text, text, integer);
    DROP INDEX webhook_events_event_id_idx;
    ALTER TABLE webhook_events DROP COLUMN event_id;
    DROP INDEX events_unnumbered_idx;
    ALTER TABLE events ALTER COLUMN seq SET NOT NULL;
  `);
}
