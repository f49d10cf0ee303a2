/**
 * The event log (src/events) against real PostgreSQL: each owner's `seq` is gap-free under concurrent writers and
 * rollbacks, owners are independent, pages see each event once, the subject's events come back in order, and purging
 * keeps the sequence growing. Events are numbered after their commit: an open writer blocks no other writer of its
 * owner, a reader never sees a number before the ones below it are final, and an event whose writer died between its
 * commit and its numbering is numbered by the next reader or the sweep.
 */
import { createDatabase, type Knex } from '../../src/db/knex';
import { eventsOfSubject, listEvents, numberPendingEvents, purgeEvents, recordEvent, recordEventOnce, startEventSequencer, type EventOwner, type EventType } from '../../src/events';
import { createTestDatabase } from '../support/platform';

describe('event log', () => {
  let drop: () => Promise<void>;
  let database: Knex;
  const merchant: EventOwner = { type: 'merchant', id: 'M-EVENTS-1' };
  const other: EventOwner = { type: 'merchant', id: 'M-EVENTS-2' };
  const partner: EventOwner = { type: 'partner', id: 'M-EVENTS-1' };

  beforeAll(async () => {
    const created = await createTestDatabase();
    drop = created.drop;
    database = createDatabase(created.url, 12);
  });
  afterAll(async () => {
    await database.destroy();
    await drop();
  });

  /** Writes one event and answers the seq it was given (read back: numbering follows the commit). */
  const write = async (owner: EventOwner, subject: string, type: EventType = 'payin.success'): Promise<bigint> => {
    await database.transaction((trx) => recordEvent(trx, { owner, subject, type, data: { amount_units: '100' } }));
    return (await listEvents(database, { owner, after: 0n, limit: 500, subject })).events.at(-1)!.seq;
  };

  const allSeqs = async (owner: EventOwner): Promise<bigint[]> => {
    const seqs: bigint[] = [];
    let after = 0n;
    for (;;) {
      const page = await listEvents(database, { owner, after, limit: 7 });
      seqs.push(...page.events.map((event) => event.seq));
      after = page.next_after;
      if (!page.has_more) return seqs;
    }
  };

  it('numbers one owner’s events 1, 2, 3 … with no gap and no repeat under concurrent writers and rollbacks', async () => {
    const writers = Array.from({ length: 40 }, (_, index) =>
      database
        .transaction(async (trx) => {
          await recordEvent(trx, { owner: merchant, subject: `PAYIN-${index}`, type: 'payin.success', data: { index } });
          // Every third change fails after its event was written: its event and its number go with it.
          if (index % 3 === 0) throw new Error('rolled back');
        })
        .then(() => 'committed', () => 'rolled back'),
    );
    const outcomes = await Promise.all(writers);
    const committed = outcomes.filter((outcome) => outcome === 'committed').length;
    const seqs = await allSeqs(merchant);
    expect(seqs).toEqual(Array.from({ length: committed }, (_, index) => BigInt(index + 1)));
  });

  it('lets one owner’s writers commit while another of its transactions is open, numbering in commit order', async () => {
    const owner: EventOwner = { type: 'merchant', id: 'M-EVENTS-PARALLEL' };
    const open = await database.transaction();
    await recordEvent(open, { owner, subject: 'TRF-OPEN', type: 'wallet_transfer.completed', data: {} });
    // A writer that had to wait for the open one (the owner's sequence held to its commit) fails on its lock timeout.
    await database.transaction(async (trx) => {
      await trx.raw("SET LOCAL lock_timeout = '2s'");
      await recordEvent(trx, { owner, subject: 'TRF-LATER', type: 'wallet_transfer.completed', data: {} });
    });
    const first = await listEvents(database, { owner, after: 0n, limit: 10 });
    expect(first.events.map((event) => [event.seq, event.subject])).toEqual([[1n, 'TRF-LATER']]);
    await open.commit();
    // Written first, committed second: numbered second, after the cursor the reader holds; nothing below it moved.
    const next = await listEvents(database, { owner, after: first.next_after, limit: 10 });
    expect(next.events.map((event) => [event.seq, event.subject])).toEqual([[2n, 'TRF-OPEN']]);
    expect(await database('event_sequences').where({ owner_type: 'merchant', owner_id: owner.id }).first()).toMatchObject({ last_seq: 2n });
  });

  it('numbers an event whose writer stopped between its commit and its numbering: by the sweep, or by the next reader', async () => {
    const owner: EventOwner = { type: 'partner', id: 'P-EVENTS-KILLED' };
    // The insert recordEvent makes, committed, with no numbering after it (the process died).
    const orphan = (subject: string) =>
      database('events').insert({ owner_type: owner.type, owner_id: owner.id, subject, type: 'pre_transfer.created', data: {} });
    await orphan('PT-ORPHAN-1');
    expect(await database('events').where({ owner_id: owner.id }).whereNull('seq').count('* as n').first()).toEqual({ n: 1n });
    const sequencer = startEventSequencer(database, { interval_ms: 50, onError: () => undefined });
    try {
      for (let attempt = 0; attempt < 200; attempt++) {
        const row = await database('events').where({ owner_id: owner.id, subject: 'PT-ORPHAN-1' }).first('seq');
        if (row.seq !== null) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await sequencer.stop();
    }
    expect(await database('events').where({ owner_id: owner.id }).select('subject', 'seq')).toEqual([{ subject: 'PT-ORPHAN-1', seq: 1n }]);
    await orphan('PT-ORPHAN-2');
    expect((await listEvents(database, { owner, after: 1n, limit: 10 })).events.map((event) => [event.seq, event.subject])).toEqual([[2n, 'PT-ORPHAN-2']]);
    expect(await numberPendingEvents(database)).toBe(0);
  });

  it('keeps owners independent: another merchant and a partner with the same id start at 1', async () => {
    expect(await write(other, 'TRF-1', 'wallet_transfer.completed')).toBe(1n);
    expect(await write(partner, 'PT-1', 'pre_transfer.created')).toBe(1n);
    expect(await write(other, 'TRF-2', 'wallet_transfer.completed')).toBe(2n);
    const page = await listEvents(database, { owner: other, after: 0n, limit: 500 });
    expect(page.events.map((event) => [event.seq, event.subject])).toEqual([
      [1n, 'TRF-1'],
      [2n, 'TRF-2'],
    ]);
    expect(page.has_more).toBe(false);
    expect(page.next_after).toBe(2n);
  });

  it('filters by type and subject, and answers an empty page with the cursor it was given', async () => {
    await write(other, 'TRF-3', 'blocked_money.blocked');
    const blocked = await listEvents(database, { owner: other, after: 0n, limit: 10, type: 'blocked_money.blocked' });
    expect(blocked.events.map((event) => event.subject)).toEqual(['TRF-3']);
    const one = await listEvents(database, { owner: other, after: 0n, limit: 10, subject: 'TRF-2' });
    expect(one.events.map((event) => event.seq)).toEqual([2n]);
    const none = await listEvents(database, { owner: other, after: 99n, limit: 10 });
    expect(none).toEqual({ events: [], has_more: false, next_after: 99n });
  });

  it('answers a subject’s events in the order they were written, whoever owns them', async () => {
    await write(merchant, 'PT-SHARED', 'pre_transfer.created');
    await write(partner, 'PT-SHARED', 'pre_transfer.confirmed');
    const events = await eventsOfSubject(database, 'PT-SHARED');
    expect(events.map((event) => [event.owner.type, event.type])).toEqual([
      ['merchant', 'pre_transfer.created'],
      ['partner', 'pre_transfer.confirmed'],
    ]);
  });

  it('refuses an event the platform would never build, writing nothing', async () => {
    const before = await allSeqs(other);
    await expect(write(other, '', 'payin.success')).rejects.toThrow(/subject/);
    await expect(write(other, 'TRF-4', 'Not A Type' as EventType)).rejects.toThrow(/type/);
    await expect(listEvents(database, { owner: other, after: 0n, limit: 501 })).rejects.toThrow(/limit/);
    expect(await allSeqs(other)).toEqual(before);
  });

  it('writes an event once per owner, subject and type with recordEventOnce: a repeat takes no number', async () => {
    const owner: EventOwner = { type: 'merchant', id: 'M-EVENTS-ONCE' };
    const once = () => database.transaction((trx) => recordEventOnce(trx, { owner, subject: 'TRF-ONCE', type: 'wallet_transfer.completed', data: {} }));
    expect(await once()).toBe(true);
    expect(await once()).toBe(false);
    expect(await write(owner, 'TRF-NEXT', 'wallet_transfer.completed')).toBe(2n);
  });

  it('purges events past their retention in batches and never reuses a seq', async () => {
    const last = (await allSeqs(other)).at(-1)!;
    await database('events').where({ owner_id: other.id }).update({ created_at: new Date(Date.now() - 10 * 86_400_000) });
    expect(await purgeEvents(database, { retention_days: 5, batch: 2 })).toBe(2);
    expect(await purgeEvents(database, { retention_days: 5, batch: 2 })).toBe(1);
    expect(await purgeEvents(database, { retention_days: 5, batch: 2 })).toBe(0);
    expect(await write(other, 'TRF-5', 'wallet_transfer.completed')).toBe(last + 1n);
  });

  it('purges the request journal with the events: rows past the retention go, recent ones stay', async () => {
    const row = (reference: string, daysAgo: number) => ({
      reference,
      owner_kind: 'merchant',
      owner_id: other.id,
      action: 'create_payin',
      outcome: 'ok',
      received_at: new Date(Date.now() - daysAgo * 86_400_000),
    });
    await database('payment_requests').insert([row('PAYIN-JOURNAL-OLD-1', 10), row('PAYIN-JOURNAL-OLD-2', 9), row('PAYIN-JOURNAL-NEW', 1)]);
    const journal = async () => (await database('payment_requests').where('reference', 'like', 'PAYIN-JOURNAL-%').orderBy('reference').select('reference')).map((found) => found.reference as string);
    expect(await purgeEvents(database, { retention_days: 5, batch: 1 })).toBe(1);
    expect(await purgeEvents(database, { retention_days: 5, batch: 1 })).toBe(1);
    expect(await purgeEvents(database, { retention_days: 5, batch: 1 })).toBe(0);
    expect(await journal()).toEqual(['PAYIN-JOURNAL-NEW']);
  });
});
