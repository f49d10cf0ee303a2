import type { Knex } from 'knex';

/**
 * 031_events: the per-owner event log (docs/events.md). `events` holds every state change a merchant or a partner is
 * told about, each with its owner's next `seq`; `event_sequences` holds each owner's last `seq`, incremented in the
 * transaction that writes the event, so a rolled-back change leaves no gap and two writers never share a number.
 * Purging old events (EVENTS_RETENTION_DAYS) never touches `event_sequences`: `seq` keeps growing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE event_sequences (
      owner_type text NOT NULL CHECK (owner_type IN ('merchant', 'partner')),
      owner_id text NOT NULL,
      last_seq bigint NOT NULL CHECK (last_seq > 0),
      PRIMARY KEY (owner_type, owner_id)
    );
    CREATE TABLE events (
      id bigserial PRIMARY KEY,
      owner_type text NOT NULL CHECK (owner_type IN ('merchant', 'partner')),
      owner_id text NOT NULL,
      seq bigint NOT NULL CHECK (seq > 0),
      subject text NOT NULL CHECK (length(subject) BETWEEN 1 AND 128),
      type text NOT NULL CHECK (length(type) BETWEEN 1 AND 64),
      data jsonb NOT NULL,
      ledger_transaction_id uuid NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (owner_type, owner_id, seq)
    );
    CREATE INDEX events_owner_subject_idx ON events (owner_type, owner_id, subject, seq);
    CREATE INDEX events_owner_type_idx ON events (owner_type, owner_id, type, seq);
    CREATE INDEX events_subject_idx ON events (subject);
    CREATE INDEX events_created_at_idx ON events (created_at);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE events; DROP TABLE event_sequences;');
}
