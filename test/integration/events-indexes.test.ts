/**
 * The event log's indexes that lead to `seq` (migration 070) cover numbered events only: an event written unnumbered
 * adds no entry to them until the numbering sets its `seq` (one owner's burst of writes then shares no leaf page
 * keyed by a NULL seq), while an owner's numbers stay unique and its reads by seq still find every numbered event.
 */
import { createDatabase, type Knex } from '../../src/db/knex';
import { listEvents, recordEvent, type EventOwner } from '../../src/events';
import { createTestDatabase } from '../support/platform';

describe('event log indexes', () => {
  let drop: () => Promise<void>;
  let database: Knex;
  const owner: EventOwner = { type: 'merchant', id: 'M-EVENT-INDEXES' };

  beforeAll(async () => {
    const created = await createTestDatabase();
    drop = created.drop;
    database = createDatabase(created.url, 4);
  });
  afterAll(async () => {
    await database.destroy();
    await drop();
  });

  /** The definition of one index of `events`, or undefined when there is none by that name. */
  const indexDefinition = async (index: string): Promise<string | undefined> =>
    ((await database.raw('SELECT indexdef FROM pg_indexes WHERE tablename = ? AND indexname = ?', ['events', index])).rows[0] as { indexdef: string } | undefined)?.indexdef;

  it('keeps unnumbered events out of the indexes on (owner, seq) and (owner, type, seq)', async () => {
    expect(await indexDefinition('events_owner_seq_numbered_key')).toMatch(/^CREATE UNIQUE INDEX .* \(owner_type, owner_id, seq\) WHERE \(seq IS NOT NULL\)$/);
    expect(await indexDefinition('events_owner_type_numbered_idx')).toMatch(/ \(owner_type, owner_id, type, seq\) WHERE \(seq IS NOT NULL\)$/);
    // The full-table forms are gone: an unnumbered event wrote an entry keyed by a NULL seq into each.
    expect(await indexDefinition('events_owner_type_idx')).toBeUndefined();
    expect(await indexDefinition('events_owner_type_owner_id_seq_key')).toBeUndefined();
  });

  it('still refuses a second event of one owner under a number already given', async () => {
    await database.transaction((trx) => recordEvent(trx, { owner, subject: 'IDX-1', type: 'payin.success', data: {} }));
    const [first] = (await listEvents(database, { owner, after: 0n, limit: 10 })).events;
    expect(first!.seq).toBe(1n);
    await expect(
      database.raw(`INSERT INTO events (owner_type, owner_id, seq, subject, type, data) VALUES (?, ?, 1, 'IDX-2', 'payin.success', '{}')`, [owner.type, owner.id]),
    ).rejects.toThrow(/events_owner_seq_numbered_key/);
  });

  it('finds numbered events by type in seq order through the partial index', async () => {
    for (const subject of ['IDX-3', 'IDX-4']) await database.transaction((trx) => recordEvent(trx, { owner, subject, type: 'payin.expired', data: {} }));
    const page = await listEvents(database, { owner, after: 0n, limit: 10, type: 'payin.expired' });
    expect(page.events.map((event) => [event.subject, event.seq])).toEqual([['IDX-3', 2n], ['IDX-4', 3n]]);
    await database.raw('SET enable_seqscan = off');
    const plan = (await database.raw(
      `EXPLAIN SELECT id FROM events WHERE owner_type = ? AND owner_id = ? AND type = ? AND seq > ? ORDER BY seq LIMIT 10`,
      [owner.type, owner.id, 'payin.expired', 0],
    )).rows.map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN']).join('\n');
    await database.raw('RESET enable_seqscan');
    expect(plan).toContain('events_owner_type_numbered_idx');
  });
});
