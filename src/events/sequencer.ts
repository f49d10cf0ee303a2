/**
 * The sequencer of the event log (docs/events.md "Sequence guarantees"): events are written unnumbered with their
 * change, and numbered after it committed by `number_owner_events` (migration 048), one owner at a time under the
 * owner's advisory lock, in `id` order among the committed unnumbered events, with the webhooks produced from them.
 * Three callers number, so no committed event stays unnumbered for long and none is ever seen without its number:
 * the writer's process right after the commit (`numberAfterCommit`, coalesced per owner), every reader before it reads
 * (`numberOwnerEvents`, a no-op index probe when nothing is pending), and the api role's sweep
 * (`startEventSequencer`), which numbers what a process killed between its commit and its numbering left behind.
 */
import type { Knex } from 'knex';
import { afterCommit, rootDatabaseOf } from '../db/knex';

export interface SequencedOwner {
  type: 'merchant' | 'partner';
  id: string;
}

/** Most events one numbering statement numbers (the next statement continues). */
export const NUMBERING_BATCH = 5000;
/** Most owners one sweep numbers (the next sweep continues at once). */
const SWEEP_OWNERS = 200;

/**
 * Numbers every committed unnumbered event of `owner` (and their webhooks), in batches of NUMBERING_BATCH, each in a
 * transaction of its own (or inside `conn`'s, when it is one: then its own uncommitted events too, and the owner's
 * lock is held until it ends). @returns how many were numbered
 */
export async function numberOwnerEvents(conn: Knex | Knex.Transaction, owner: SequencedOwner): Promise<number> {
  let total = 0;
  for (;;) {
    const result = await conn.raw('SELECT number_owner_events(?, ?, ?) AS numbered', [owner.type, owner.id, NUMBERING_BATCH]);
    const numbered = Number((result.rows[0] as { numbered: number }).numbered);
    total += numbered;
    if (numbered < NUMBERING_BATCH) return total;
  }
}

/** Numbers the pending events of every owner that has events about `subject`. */
export async function numberSubjectOwners(conn: Knex, subject: string): Promise<void> {
  await conn.raw(
    `SELECT number_owner_events(owner_type, owner_id, ?)
       FROM (SELECT DISTINCT owner_type, owner_id FROM events WHERE subject = ? AND seq IS NULL) pending`,
    [NUMBERING_BATCH, subject],
  );
}

/**
 * Numbers the pending events of up to SWEEP_OWNERS owners (those with a committed unnumbered event).
 * @returns how many owners had some
 */
export async function numberPendingEvents(conn: Knex): Promise<number> {
  const owners = (await conn.raw(`SELECT DISTINCT owner_type, owner_id FROM events WHERE seq IS NULL LIMIT ?`, [SWEEP_OWNERS])).rows as Array<{
    owner_type: SequencedOwner['type'];
    owner_id: string;
  }>;
  for (const owner of owners) await numberOwnerEvents(conn, { type: owner.owner_type, id: owner.owner_id });
  return owners.length;
}

/**
 * Numbers several owners' pending events in one statement (in one order, so two such statements never wait on each
 * other's advisory locks in a cycle). @returns the owners that had a full batch (more to number)
 */
async function numberOwnersTogether(database: Knex, owners: SequencedOwner[]): Promise<SequencedOwner[]> {
  const sorted = [...owners].sort((a, b) => (`${a.type}:${a.id}` < `${b.type}:${b.id}` ? -1 : 1));
  const result = await database.raw(
    `SELECT o.n, number_owner_events(o.t, o.i, ?) AS numbered
       FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS o(t, i, n) ORDER BY o.n`,
    [NUMBERING_BATCH, textArray(sorted.map((owner) => owner.type)), textArray(sorted.map((owner) => owner.id))],
  );
  return (result.rows as Array<{ n: string; numbered: number }>).filter((row) => Number(row.numbered) >= NUMBERING_BATCH).map((row) => sorted[Number(row.n) - 1]!);
}

/** A PostgreSQL text[] literal (each element double-quoted, `"` and `\` escaped). */
function textArray(values: readonly string[]): string {
  return `{${values.map((value) => `"${value.replace(/["\\]/g, (character) => `\\${character}`)}"`).join(',')}}`;
}

/** Per pool: the owners whose commits wait for a numbering, and whether one runs. */
const queues = new WeakMap<Knex, { pending: Map<string, SequencedOwner>; running: boolean }>();

/**
 * Numbers `owner`'s events once `trx` committed, on another connection of its pool, without delaying the commit.
 * One numbering statement runs at a time per pool, for every owner whose commit came since the last one began: a
 * burst of commits, of one owner or of many, costs a few numbering statements, not one each. A failure is left to
 * the readers and the sweep.
 */
export function numberAfterCommit(trx: Knex.Transaction, owner: SequencedOwner): void {
  const database = rootDatabaseOf(trx);
  if (database) afterCommit(trx, () => numberSoon(database, owner));
}

/**
 * Numbers `owner`'s events on `database`'s pool soon, coalesced with every other owner waiting, as numberAfterCommit
 * does once its transaction committed: for a write made of one statement outside any transaction, called after it.
 */
export function numberSoon(database: Knex, owner: SequencedOwner): void {
  let queue = queues.get(database);
  if (!queue) queues.set(database, (queue = { pending: new Map(), running: false }));
  queue.pending.set(`${owner.type}:${owner.id}`, owner);
  if (queue.running) return;
  queue.running = true;
  const drain = queue;
  void (async () => {
    try {
      while (drain.pending.size > 0) {
        const owners = [...drain.pending.values()];
        drain.pending.clear();
        try {
          for (const more of await numberOwnersTogether(database, owners)) drain.pending.set(`${more.type}:${more.id}`, more);
        } catch {
          // Left pending: the next reader, commit or sweep numbers it.
        }
      }
    } finally {
      drain.running = false;
    }
  })();
}

export interface EventSequencer {
  stop(): Promise<void>;
}

/**
 * Sweeps every `interval_ms` (and at once while a sweep finds a full batch of owners): numbers what no writer
 * numbered (its process stopped between its commit and its numbering). `onError` hears a failed sweep.
 */
export function startEventSequencer(database: Knex, options: { interval_ms: number; onError: (error: unknown) => void }): EventSequencer {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (!stopped) {
      let owners = 0;
      try {
        owners = await numberPendingEvents(database);
      } catch (error) {
        options.onError(error);
      }
      if (stopped || owners >= SWEEP_OWNERS) continue;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, options.interval_ms);
      });
    }
  })();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await loop;
    },
  };
}
