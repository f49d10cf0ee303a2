/**
 * Every SQL statement of the event log (`events`; migrations 031, 048) but the numbering (sequencer.ts). The rules
 * (limits, owners, cursors) live in index.ts.
 */
import type { Knex } from 'knex';

type Conn = Knex | Knex.Transaction;

export interface EventRow {
  id: string;
  owner_type: 'merchant' | 'partner';
  owner_id: string;
  /** Null until the sequencer numbered the event (after its transaction committed). */
  seq: string | null;
  subject: string;
  type: string;
  data: Record<string, unknown>;
  ledger_transaction_id: string | null;
  created_at: Date;
}

export type NewEventRow = Pick<EventRow, 'owner_type' | 'owner_id' | 'subject' | 'type' | 'data' | 'ledger_transaction_id'>;

/**
 * The one copy of the event write, as a common table expression for a statement of the caller's: `written_event`
 * writes the event unnumbered (the sequencer numbers it after the caller's transaction committed, sequencer.ts),
 * returning its `id`. It takes no lock beyond its own new row. With `when` (an SQL condition and its bindings), it
 * writes nothing unless that holds.
 */
export function eventWriteCtes(event: NewEventRow, when?: { sql: string; bindings: Knex.RawBinding[] }): { sql: string; bindings: Knex.RawBinding[] } {
  return {
    sql: `written_event AS (
       INSERT INTO events (owner_type, owner_id, subject, type, data, ledger_transaction_id)
       SELECT ?, ?, ?, ?, ?::jsonb, ? ${when ? `WHERE ${when.sql}` : ''}
       RETURNING id
     )`,
    bindings: [
      event.owner_type,
      event.owner_id,
      event.subject,
      event.type,
      JSON.stringify(event.data),
      event.ledger_transaction_id,
      ...(when?.bindings ?? []),
    ],
  };
}

/** Writes the event, unnumbered, in one statement. @returns the event's id */
export async function insertEvent(trx: Knex.Transaction, event: NewEventRow): Promise<{ id: string }> {
  const write = eventWriteCtes(event);
  const result = await trx.raw(`WITH ${write.sql} SELECT id FROM written_event`, write.bindings);
  return { id: String((result.rows[0] as { id: string }).id) };
}

/** Up to `limit` events of the owner after `after`, in `seq` order, optionally of one type and/or one subject. */
export async function selectEvents(
  conn: Conn,
  query: { owner_type: string; owner_id: string; after: bigint; limit: number; type?: string; subject?: string; before?: bigint },
): Promise<EventRow[]> {
  // `before`: newest first, below that seq (0: from the newest); else oldest first after `after`.
  const newest = query.before !== undefined;
  const builder = conn('events')
    .where({ owner_type: query.owner_type, owner_id: query.owner_id })
    .andWhere('seq', '>', query.after.toString())
    .orderBy('seq', newest ? 'desc' : 'asc')
    .limit(query.limit)
    .select('id', 'owner_type', 'owner_id', 'seq', 'subject', 'type', 'data', 'ledger_transaction_id', 'created_at');
  if (newest && query.before! > 0n) builder.andWhere('seq', '<', query.before!.toString());
  if (query.type) builder.andWhere('type', query.type);
  if (query.subject) builder.andWhere('subject', query.subject);
  return (await builder) as EventRow[];
}

/**
 * Writes the event, unnumbered, unless the owner already has one of its type about its subject, in one statement.
 * @returns the event's id, or undefined when one was there
 */
export async function insertEventOnce(trx: Knex.Transaction, event: NewEventRow): Promise<{ id: string } | undefined> {
  const write = eventWriteCtes(event, {
    sql: 'NOT EXISTS (SELECT 1 FROM events WHERE owner_type = ? AND owner_id = ? AND subject = ? AND type = ?)',
    bindings: [event.owner_type, event.owner_id, event.subject, event.type],
  });
  const result = await trx.raw(`WITH ${write.sql} SELECT id FROM written_event`, write.bindings);
  const row = result.rows[0] as { id: string } | undefined;
  return row ? { id: String(row.id) } : undefined;
}

/** Every event about `subject` (whoever owns it), in the order they were written. */
export async function selectEventsOfSubject(conn: Conn, subject: string, limit: number): Promise<EventRow[]> {
  return (await conn('events')
    .where({ subject })
    .orderBy('id', 'asc')
    .limit(limit)
    .select('id', 'owner_type', 'owner_id', 'seq', 'subject', 'type', 'data', 'ledger_transaction_id', 'created_at')) as EventRow[];
}

/** Deletes up to `batch` events created before `before` (oldest first). @returns how many were deleted. */
export async function deleteEventsBefore(conn: Conn, before: Date, batch: number): Promise<number> {
  const result = await conn.raw(
    `DELETE FROM events WHERE id IN (SELECT id FROM events WHERE created_at < ? ORDER BY id LIMIT ?)`,
    [before, batch],
  );
  return result.rowCount ?? 0;
}

/** One payment as its events tell it (see `selectLatestPayments`). */
export interface PaymentRow {
  subject: string;
  seq: string;
  type: string;
  data: Record<string, unknown>;
  updated_at: Date;
  created_at: Date;
}

/**
 * The payments of one owner: for each subject, its latest event among `status_types` of the kind its first event has
 * (the kind is a type's prefix before the dot), one row per subject, keyset-paged by that event's seq:
 * `before` → seq < before, newest first; `after` → seq > after, oldest first (the caller reverses). Filters: `types`
 * (the latest event's type among these), `subject` (exactly), `created_from` / `created_before` (the first event's
 * time, [from, before)). Every lookup is an index probe on `events_owner_subject_idx`; the scan walks the owner's
 * status events in seq order (`events_owner_type_numbered_idx` or the owner's seq key, both of numbered events only,
 * hence `e.seq IS NOT NULL` below) and stops at `limit` rows.
 */
export async function selectLatestPayments(
  conn: Conn,
  query: {
    owner_type: string;
    owner_id: string;
    status_types: readonly string[];
    types: readonly string[];
    subject?: string;
    created_from?: Date;
    created_before?: Date;
    before?: bigint;
    after?: bigint;
    limit: number;
    /** The latest event's `out_trade_no`, exactly. */
    out_trade_no?: string;
    /** Major units (decimal text), compared with the latest event's amount in its own currency's decimals. */
    amount_from?: string;
    amount_to?: string;
    /** Decimals of each currency (the amount filters' scale); a currency not named has 0. */
    decimals?: Record<string, number>;
  },
): Promise<PaymentRow[]> {
  const conditions: string[] = [];
  // The type lists go as one comma-joined text each (event types hold no comma), split by PostgreSQL.
  const bindings: Knex.RawBinding[] = [query.owner_type, query.owner_id, query.types.join(','), query.status_types.join(',')];
  if (query.subject !== undefined) {
    conditions.push('e.subject = ?');
    bindings.push(query.subject);
  }
  if (query.created_from !== undefined) {
    // The latest event is no older than the first: checked on the row itself first, so rows before the range cost
    // no lookup of their first event.
    conditions.push('e.created_at >= ? AND first.created_at >= ?');
    bindings.push(query.created_from, query.created_from);
  }
  if (query.created_before !== undefined) {
    conditions.push('first.created_at < ?');
    bindings.push(query.created_before);
  }
  if (query.out_trade_no !== undefined) {
    conditions.push("e.data->>'out_trade_no' = ?");
    bindings.push(query.out_trade_no);
  }
  if (query.amount_from !== undefined || query.amount_to !== undefined) {
    // The amount in major units of its own currency: minor units scaled by the currency's decimals.
    const scale = Object.entries(query.decimals ?? {});
    const decimals = scale.length ? `CASE e.data->>'currency' ${scale.map(() => 'WHEN ? THEN ?').join(' ')} ELSE 0 END` : '0';
    const major = `(CASE WHEN e.data->>'amount_units' ~ '^-{0,1}[0-9]{1,30}$' THEN (e.data->>'amount_units')::numeric END / power(10::numeric, ${decimals}))`;
    for (const [bound, operator] of [[query.amount_from, '>='], [query.amount_to, '<=']] as const) {
      if (bound === undefined) continue;
      conditions.push(`${major} ${operator} ?::numeric`);
      bindings.push(...scale.flatMap(([currency, places]) => [currency, places]), bound);
    }
  }
  if (query.before !== undefined) {
    conditions.push('e.seq < ?');
    bindings.push(query.before.toString());
  }
  if (query.after !== undefined) {
    conditions.push('e.seq > ?');
    bindings.push(query.after.toString());
  }
  bindings.push(query.limit);
  const result = await conn.raw(
    `SELECT e.subject, e.seq, e.type, e.data, e.created_at AS updated_at, first.created_at
       FROM events e
       CROSS JOIN LATERAL (
         SELECT f.type, f.created_at FROM events f
          WHERE f.owner_type = e.owner_type AND f.owner_id = e.owner_id AND f.subject = e.subject AND f.seq IS NOT NULL
          ORDER BY f.seq LIMIT 1
       ) first
      WHERE e.owner_type = ? AND e.owner_id = ? AND e.seq IS NOT NULL AND e.type = ANY(string_to_array(?, ','))
        AND split_part(first.type, '.', 1) = split_part(e.type, '.', 1)
        AND NOT EXISTS (
          SELECT 1 FROM events l
           WHERE l.owner_type = e.owner_type AND l.owner_id = e.owner_id AND l.subject = e.subject AND l.seq > e.seq
             AND l.type = ANY(string_to_array(?, ',')) AND split_part(l.type, '.', 1) = split_part(e.type, '.', 1)
        )
        ${conditions.map((condition) => `AND ${condition}`).join(' ')}
      ORDER BY e.seq ${query.after !== undefined ? 'ASC' : 'DESC'}
      LIMIT ?`,
    bindings,
  );
  return (result.rows as PaymentRow[]).map((row) => ({ ...row, seq: String(row.seq) }));
}
