/**
 * The event log (docs/events.md): every state change that matters to a merchant or a partner is written as an event
 * **in the same database transaction as the change**, and given its owner's next gap-free sequence number `seq` once
 * that transaction committed (sequencer.ts), so a consumer reading `after=<seq>` can prove it has seen everything: a
 * committed change has its event, a rolled-back one has neither, no two events of one owner share a `seq`, and no
 * event is read before it has its number.
 *
 * Each event names its **subject**, the public reference of the payment it is about (pre-transfer id, invoice
 * reference, deposit or transfer reference): the key of the payment's timeline and the order of its webhooks.
 *
 * Cost: one insert in the change's transaction, which takes no lock of the owner's; the numbering is one short
 * statement after the commit (per burst of one owner's commits, not per event). Readers number what is pending first.
 */
import type { Knex } from 'knex';
import { assert } from '../errors';
import type { EventType } from './catalog';
import { numberAfterCommit, numberOwnerEvents, numberSubjectOwners } from './sequencer';
import { deleteEventsBefore, insertEvent, insertEventOnce, selectEvents, selectEventsOfSubject, type EventRow, type NewEventRow } from './store';

export { EVENT_TYPES, isEventType, type EventType } from './catalog';
export { eventWriteCtes, type NewEventRow } from './store';
export { numberAfterCommit, numberOwnerEvents, numberPendingEvents, numberSoon, startEventSequencer, type EventSequencer } from './sequencer';
export {
  isPaymentKind,
  listPayments,
  paymentStatuses,
  PAYMENT_KINDS,
  PAYMENT_STATUS_TYPES,
  PAYMENTS_PAGE_MAX,
  type PaymentKind,
  type PaymentSummary,
  type PaymentsPage,
  type PaymentsQuery,
} from './payments';

/** Whose event stream an event belongs to. */
export interface EventOwner {
  type: 'merchant' | 'partner';
  id: string;
}

/** Longest subject reference and event type accepted. */
export const EVENT_SUBJECT_MAX_LENGTH = 128;
export const EVENT_TYPE_MAX_LENGTH = 64;
/** Most events one page answers. */
export const EVENTS_PAGE_MAX = 500;
/** Most events of one subject a timeline reads. */
export const EVENTS_OF_SUBJECT_MAX = 1000;
/** Largest event data, bytes of its JSON. */
export const EVENT_DATA_MAX_BYTES = 16_384;

const EVENT_TYPE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

export interface NewEvent {
  owner: EventOwner;
  /** The payment's public reference (≤ 128 characters). */
  subject: string;
  /** One of the catalog's types (./catalog.ts, docs/events.md). */
  type: EventType;
  /** JSON-safe facts of the change; amounts as decimal strings of minor units (≤ 16 KiB as JSON). */
  data: Record<string, unknown>;
  /** The ledger transaction the change wrote, when money moved. */
  ledger_transaction_id?: string | null;
}

export interface PlatformEvent {
  owner: EventOwner;
  /** The owner's gap-free sequence number, 1, 2, …; 0 for an event not numbered yet (read inside a transaction only). */
  seq: bigint;
  subject: string;
  type: string;
  data: Record<string, unknown>;
  ledger_transaction_id: string | null;
  created_at: Date;
}

export interface EventsPage {
  events: PlatformEvent[];
  /** True when events after the last one exist (ask again with `after = next_after`). */
  has_more: boolean;
  /** The `seq` of the last event answered, else the `after` asked. */
  next_after: bigint;
}

function toEvent(row: EventRow): PlatformEvent {
  return {
    owner: { type: row.owner_type, id: row.owner_id },
    seq: row.seq === null ? 0n : BigInt(row.seq),
    subject: row.subject,
    type: row.type,
    data: row.data,
    ledger_transaction_id: row.ledger_transaction_id,
    created_at: row.created_at,
  };
}

/**
 * Writes `event` inside `trx`, the transaction that commits the change it announces, unnumbered; once `trx` committed
 * the owner's next `seq` is given to it (sequencer.ts). It locks nothing of the owner's: write it anywhere in the
 * transaction.
 * @throws AssertionError on an event no caller may build (empty owner, a subject or type out of shape, data too large):
 *   events are written by the platform's own code, never from a request's fields as they came
 */
export async function recordEvent(trx: Knex.Transaction, event: NewEvent): Promise<void> {
  await insertEvent(trx, eventRowOf(event));
  numberAfterCommit(trx, event.owner);
  announceOnCommit(trx, event.type);
}

/** Told of each event's type once the transaction that wrote it committed (see onEventCommitted). */
type CommittedEventListener = (type: EventType) => void;
const committedListeners = new Set<CommittedEventListener>();

/**
 * Calls `listener` with the type of every event this process writes, once its transaction committed (a rolled-back
 * change announces nothing; an event written in a savepoint is announced when the savepoint is released): the
 * composition root counts payments by kind and state from them (payments_payments_total, src/metrics.ts).
 * @returns the function that removes the listener
 */
export function onEventCommitted(listener: CommittedEventListener): () => void {
  committedListeners.add(listener);
  return () => committedListeners.delete(listener);
}

/**
 * Announces `type` to the listeners of onEventCommitted when `trx` commits: for a capability that writes an event
 * with rows of its own (`eventWriteCtes`); recordEvent and recordEventOnce announce theirs themselves.
 */
export function announceOnCommit(trx: Knex.Transaction, type: EventType): void {
  if (committedListeners.size === 0) return;
  trx.executionPromise.then(
    () => {
      for (const listener of committedListeners) listener(type);
    },
    () => undefined,
  );
}

/**
 * `event` as its row, checked: for recordEvent, and for a capability that writes the event with rows of its own in
 * one statement (`eventWriteCtes`; src/webhooks writes a webhook and its event so; it calls `numberAfterCommit`).
 * @throws AssertionError as recordEvent
 */
export function eventRowOf(event: NewEvent): NewEventRow {
  assert(event.owner.id.length > 0, 'event owner id is empty');
  assert(event.subject.length > 0 && event.subject.length <= EVENT_SUBJECT_MAX_LENGTH, `event subject out of shape: ${event.subject}`);
  assert(event.type.length <= EVENT_TYPE_MAX_LENGTH && EVENT_TYPE.test(event.type), `event type out of shape: ${event.type}`);
  const data = JSON.stringify(event.data);
  assert(Buffer.byteLength(data) <= EVENT_DATA_MAX_BYTES, `event data of ${event.type} over ${EVENT_DATA_MAX_BYTES} bytes`);
  return {
    owner_type: event.owner.type,
    owner_id: event.owner.id,
    subject: event.subject,
    type: event.type,
    data: event.data,
    ledger_transaction_id: event.ledger_transaction_id ?? null,
  };
}

/**
 * Writes `event` as recordEvent does, unless the owner already has an event of this type about this subject: for a
 * change that a retried request may make again (its ledger write then replays), so the retry announces nothing twice.
 * The caller's transaction must hold what serializes the change's writers (a row lock, the ledger key's claim), so
 * two runs never both find none.
 * @returns whether it was written now (false: it was written before)
 */
export async function recordEventOnce(trx: Knex.Transaction, event: NewEvent): Promise<boolean> {
  const written = await insertEventOnce(trx, eventRowOf(event));
  if (written) {
    numberAfterCommit(trx, event.owner);
    announceOnCommit(trx, event.type);
  }
  return written !== undefined;
}

/**
 * One page of `owner`'s events after `after` (0 = from the first), in `seq` order, optionally of one type or subject.
 * With `before` (0 = from the newest) the page is newest first instead, below that seq (`after` is then 0), and
 * `has_more` says older events exist (ask `before = next_after`, the last seq answered).
 * @param limit 1..500
 * @throws AssertionError on a limit out of range or a negative `after` (the services check both first)
 */
export async function listEvents(
  conn: Knex | Knex.Transaction,
  query: { owner: EventOwner; after: bigint; limit: number; type?: string; subject?: string; before?: bigint },
): Promise<EventsPage> {
  assert(Number.isInteger(query.limit) && query.limit >= 1 && query.limit <= EVENTS_PAGE_MAX, `events limit out of range: ${query.limit}`);
  assert(query.after >= 0n, 'events cursor is negative');
  await numberOwnerEvents(conn, query.owner);
  const rows = await selectEvents(conn, {
    owner_type: query.owner.type,
    owner_id: query.owner.id,
    after: query.after,
    limit: query.limit + 1,
    type: query.type,
    subject: query.subject,
    before: query.before,
  });
  const events = rows.slice(0, query.limit).map(toEvent);
  return { events, has_more: rows.length > query.limit, next_after: events.at(-1)?.seq ?? query.after };
}

/**
 * Every event about one payment (whoever owns it), in the order written, at most EVENTS_OF_SUBJECT_MAX; outside a
 * transaction, numbered first (inside one, an event not numbered yet has `seq` 0).
 */
export async function eventsOfSubject(conn: Knex | Knex.Transaction, subject: string): Promise<PlatformEvent[]> {
  if (!(conn as Partial<Knex.Transaction>).isTransaction) await numberSubjectOwners(conn as Knex, subject);
  return (await selectEventsOfSubject(conn, subject, EVENTS_OF_SUBJECT_MAX)).map(toEvent);
}

/**
 * Deletes events older than `retention_days`, at most `batch` of them (oldest first), and as many of the request
 * journal's rows (`payment_requests`, kept as long as the events they sit beside in a timeline): the reconciliation run
 * calls it until it answers fewer than `batch`. The owners' sequences are kept, so `seq` never restarts.
 * @returns the larger of the two counts deleted (below `batch` once both tables are done)
 */
export async function purgeEvents(conn: Knex, options: { retention_days: number; batch: number; now?: Date }): Promise<number> {
  const now = options.now ?? new Date();
  const before = new Date(now.getTime() - options.retention_days * 86_400_000);
  const events = await deleteEventsBefore(conn, before, options.batch);
  const requests = await deletePaymentRequestsBefore(conn, before, options.batch);
  return Math.max(events, requests);
}
import { deletePaymentRequestsBefore } from './requests';
export { journaled, requestsOf, insertPaymentRequest, REQUESTS_OF_REFERENCE_MAX, type PaymentRequest, type RequestJournal, type RequestOrigin, type RequestOwnerKind } from './requests';
