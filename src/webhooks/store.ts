/**
 * Outbound webhooks' SQL: `webhook_events` (one row per webhook sent to a merchant, its signed body recorded once,
 * migration 005; its event's seq: 032) and `webhook_delivery_attempts` (every POST, with when the next is due). One
 * copy of each query. A webhook's subject is its `invoice_reference` column (the name stays for compatibility: it
 * holds any flow's reference, migration 017).
 */
import type { Knex } from '../db/knex';
import { eventWriteCtes, type NewEventRow } from '../events';

type Conn = Knex | Knex.Transaction;

/** A row of `webhook_events`; `status` is pending, delivered or failed. */
export interface WebhookEventRow {
  id: string;
  merchant_id: string;
  /** The subject: the reference of the payment (or record) the webhook is about. */
  invoice_reference: string;
  event: string;
  body: string;
  callback_url: string;
  signature_header: string;
  status: 'pending' | 'delivered' | 'failed';
  attempt_count: number;
  /** The `seq` of the event the webhook was produced from (null on rows written before events). */
  event_seq: bigint | null;
  created_at: Date;
  delivered_at: Date | null;
}

export interface WebhookAttemptRow {
  webhook_id: string;
  attempt: number;
  attempted_at: Date;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  /** When the next attempt is due after this failed one; null when delivered or none follows. */
  next_retry_at?: Date | null;
}

export type NewWebhookEvent = Pick<
  WebhookEventRow,
  'id' | 'merchant_id' | 'invoice_reference' | 'event' | 'body' | 'callback_url' | 'signature_header'
> & { event_seq: bigint | null };

/** Records a webhook without an event (a repeat with the same id is ignored): the bench's floor only. */
export async function insertWebhookEvent(trx: Conn, event: NewWebhookEvent): Promise<void> {
  await trx('webhook_events')
    .insert({ ...event, event_seq: event.event_seq === null ? null : event.event_seq.toString() })
    .onConflict('id')
    .ignore();
}

/**
 * Writes an event and the webhook produced from it, in one statement: unless a webhook with this id was recorded
 * before (then neither, and no number is taken), the event with the merchant's next `seq`, and the webhook carrying
 * it, to `url` (null: the merchant's callback_url) signed under the merchant's signature header (`default_header`
 * when it has none). One statement keeps the merchant's sequence row locked for the commit only.
 * @returns whether the merchant exists, and the event's seq (null when the webhook was recorded before)
 */
export async function insertWebhookWithEvent(
  trx: Knex.Transaction,
  event: NewEventRow,
  webhook: Pick<WebhookEventRow, 'id' | 'merchant_id' | 'invoice_reference' | 'event' | 'body'> & { url: string | null; default_header: string },
): Promise<{ merchant_found: boolean; event_seq: bigint | null }> {
  const write = eventWriteCtes(event, { sql: 'EXISTS (SELECT 1 FROM fresh)', bindings: [] });
  const result = await trx.raw(
    `WITH merchant AS (SELECT callback_url, signature_header FROM merchants WHERE id = ?),
     fresh AS (SELECT 1 FROM merchant WHERE NOT EXISTS (SELECT 1 FROM webhook_events WHERE id = ?)),
     ${write.sql},
     webhook AS (
       INSERT INTO webhook_events (id, merchant_id, invoice_reference, event, body, callback_url, signature_header, event_seq)
       SELECT ?, ?, ?, ?, ?, coalesce(?, merchant.callback_url), coalesce(nullif(merchant.signature_header, ''), ?), written_event.seq
         FROM written_event, merchant
       RETURNING event_seq
     )
     SELECT EXISTS (SELECT 1 FROM merchant) AS merchant_found, (SELECT event_seq FROM webhook) AS event_seq`,
    [
      webhook.merchant_id,
      webhook.id,
      ...write.bindings,
      webhook.id,
      webhook.merchant_id,
      webhook.invoice_reference,
      webhook.event,
      webhook.body,
      webhook.url,
      webhook.default_header,
    ],
  );
  const row = result.rows[0] as { merchant_found: boolean; event_seq: bigint | string | null };
  return { merchant_found: row.merchant_found, event_seq: row.event_seq === null ? null : BigInt(row.event_seq) };
}

export function findWebhookEvent(database: Conn, id: string): Promise<WebhookEventRow | undefined> {
  return database<WebhookEventRow>('webhook_events').where({ id }).first();
}

/**
 * A pending webhook of the same merchant and subject with a lower event seq than the one named by `alias` (the
 * greatest such: the one just before it), as a subquery.
 */
function pendingPredecessorOf(database: Conn, alias: string): Knex.QueryBuilder {
  return database('webhook_events as p')
    .select('p.id')
    .where('p.status', 'pending')
    .whereRaw(`p.merchant_id = ${alias}.merchant_id AND p.invoice_reference = ${alias}.invoice_reference AND p.event_seq < ${alias}.event_seq`)
    .orderBy('p.event_seq', 'desc')
    .limit(1);
}

/**
 * An event with the number of its last recorded attempt (0 before the first) and the webhook before it still
 * pending, if any (its turn has not come while one is).
 */
export type EventForAttempt = WebhookEventRow & { last_attempt: number; pending_predecessor: string | null };

/** The event, its last attempt's number and its pending predecessor, in one query. */
export async function findEventForAttempt(database: Knex, id: string): Promise<EventForAttempt | undefined> {
  const row = await database('webhook_events as e')
    .where('e.id', id)
    .first(
      'e.*',
      database('webhook_delivery_attempts').where('webhook_id', id).max('attempt').as('last_attempt'),
      pendingPredecessorOf(database, 'e').as('pending_predecessor'),
    );
  return row ? { ...(row as WebhookEventRow), last_attempt: Number(row.last_attempt ?? 0), pending_predecessor: row.pending_predecessor ?? null } : undefined;
}

/** The pending webhook just before `id` in its subject's order, or null (also for an unknown id). */
export async function findPendingPredecessor(database: Knex, id: string): Promise<string | null> {
  const row = await database('webhook_events as e').where('e.id', id).first(pendingPredecessorOf(database, 'e').as('pending_predecessor'));
  return row?.pending_predecessor ?? null;
}

/** The pending webhook just after `event` in its subject's order (the lowest greater event seq), or null. */
export async function findPendingSuccessor(database: Knex, event: Pick<WebhookEventRow, 'merchant_id' | 'invoice_reference' | 'event_seq'>): Promise<string | null> {
  if (event.event_seq === null) return null;
  const row = await database('webhook_events')
    .where({ merchant_id: event.merchant_id, invoice_reference: event.invoice_reference, status: 'pending' })
    .where('event_seq', '>', event.event_seq.toString())
    .orderBy('event_seq')
    .first('id');
  return row?.id ?? null;
}

/**
 * Records one attempt and the event's counters in one statement (atomic on its own); a delivered one also answers
 * the pending webhook just after it in its subject's order (`findPendingSuccessor`), whose turn may have come.
 * @returns that successor's id, or null
 */
export async function recordAttempt(database: Knex, attempt: WebhookAttemptRow, delivered: boolean): Promise<string | null> {
  const record = database('webhook_delivery_attempts').insert(attempt).onConflict(['webhook_id', 'attempt']).ignore();
  const update = database('webhook_events')
    .where({ id: attempt.webhook_id })
    .update({
      attempt_count: database.raw('greatest(attempt_count, ?)', [attempt.attempt]),
      ...(delivered ? { status: 'delivered', delivered_at: database.fn.now() } : {}),
    })
    .returning(['merchant_id', 'invoice_reference', 'event_seq']);
  if (!delivered) {
    await database.raw('WITH recorded AS (?) ?', [record, update]);
    return null;
  }
  const result = await database.raw(
    `WITH recorded AS (?), updated AS (?)
     SELECT (SELECT p.id FROM webhook_events p, updated u
              WHERE p.merchant_id = u.merchant_id AND p.invoice_reference = u.invoice_reference AND p.status = 'pending'
                AND p.event_seq > u.event_seq
              ORDER BY p.event_seq LIMIT 1) AS successor`,
    [record, update],
  );
  return (result.rows[0] as { successor: string | null } | undefined)?.successor ?? null;
}

/** Marks a pending event failed (given up). @returns the row when this call changed it, else undefined. */
export async function markEventFailed(trx: Conn, id: string): Promise<WebhookEventRow | undefined> {
  const [row] = (await trx('webhook_events').where({ id, status: 'pending' }).update({ status: 'failed' }).returning('*')) as WebhookEventRow[];
  return row;
}

export async function markEventPending(database: Knex, id: string): Promise<void> {
  await database('webhook_events').where({ id }).update({ status: 'pending' });
}

/** The merchant's newest events, at most `limit`. */
export function listMerchantEvents(database: Knex, merchant_id: string, limit: number): Promise<WebhookEventRow[]> {
  return database<WebhookEventRow>('webhook_events').where({ merchant_id }).orderBy('created_at', 'desc').limit(limit);
}

/** The longest cursor id looked up. */
const MAX_WEBHOOK_ID_LENGTH = 256;

/**
 * One page of `merchantId`'s webhooks, newest first (created_at, then id, both descending), of at most `limit` rows,
 * after the webhook `afterId` when given (the merchant dashboard's deliveries, through the index of migration 030).
 * An `afterId` that is not one of this merchant's webhooks yields an empty page, never another merchant's rows.
 * `more` says whether a further page exists.
 */
export async function merchantWebhooksPage(database: Knex, merchantId: string, limit: number, afterId?: string): Promise<{ rows: WebhookEventRow[]; more: boolean }> {
  const query = database<WebhookEventRow>('webhook_events')
    .where({ merchant_id: merchantId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit + 1);
  if (afterId) {
    if (afterId.length > MAX_WEBHOOK_ID_LENGTH) return { rows: [], more: false };
    query.whereRaw('(created_at, id) < (SELECT created_at, id FROM webhook_events WHERE id = ? AND merchant_id = ?)', [afterId, merchantId]);
  }
  const rows = await query;
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}

/** The merchant's webhooks produced from its events after `after_seq`, in seq order, at most `limit`. */
export function merchantWebhooksAfter(database: Knex, merchant_id: string, after_seq: bigint, limit: number): Promise<WebhookEventRow[]> {
  return database<WebhookEventRow>('webhook_events')
    .where({ merchant_id })
    .where('event_seq', '>', after_seq.toString())
    .orderBy('event_seq')
    .limit(limit);
}

export async function attemptsOf(database: Knex, webhook_ids: string[]): Promise<WebhookAttemptRow[]> {
  if (webhook_ids.length === 0) return [];
  return database<WebhookAttemptRow>('webhook_delivery_attempts').whereIn('webhook_id', webhook_ids).orderBy(['webhook_id', 'attempt']);
}
