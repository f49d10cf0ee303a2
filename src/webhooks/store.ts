/**
 * Outbound webhooks' SQL: `webhook_events` (one row per event sent to a merchant, its signed body recorded once) and
 * `webhook_delivery_attempts` (every POST), migration 005. One copy of each query.
 */
import type { Knex } from '../db/knex';

/** A row of `webhook_events`; `status` is pending, delivered or failed. */
export interface WebhookEventRow {
  id: string;
  merchant_id: string;
  invoice_reference: string;
  event: string;
  body: string;
  callback_url: string;
  signature_header: string;
  status: 'pending' | 'delivered' | 'failed';
  attempt_count: number;
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
}

export type NewWebhookEvent = Pick<WebhookEventRow, 'id' | 'merchant_id' | 'invoice_reference' | 'event' | 'body' | 'callback_url' | 'signature_header'>;

/** Records an event once (a repeat with the same id is ignored). */
export async function insertWebhookEvent(trx: Knex.Transaction | Knex, event: NewWebhookEvent): Promise<void> {
  await trx('webhook_events').insert(event).onConflict('id').ignore();
}

export function findWebhookEvent(database: Knex, id: string): Promise<WebhookEventRow | undefined> {
  return database<WebhookEventRow>('webhook_events').where({ id }).first();
}

/** The event with the number of its last recorded attempt (0 when none), in one query. */
/** An event with the number of its last recorded attempt (0 before the first). */
export type EventForAttempt = WebhookEventRow & { last_attempt: number };

export async function findEventForAttempt(database: Knex, id: string): Promise<EventForAttempt | undefined> {
  const row = await database('webhook_events')
    .where({ id })
    .first('webhook_events.*', database('webhook_delivery_attempts').where('webhook_id', id).max('attempt').as('last_attempt'));
  return row ? { ...(row as WebhookEventRow), last_attempt: Number(row.last_attempt ?? 0) } : undefined;
}

/** Records one attempt and the event's counters in one statement (atomic on its own). */
export async function recordAttempt(database: Knex, attempt: WebhookAttemptRow, delivered: boolean): Promise<void> {
  const record = database('webhook_delivery_attempts').insert(attempt).onConflict(['webhook_id', 'attempt']).ignore();
  const update = database('webhook_events')
    .where({ id: attempt.webhook_id })
    .update({
      attempt_count: database.raw('greatest(attempt_count, ?)', [attempt.attempt]),
      ...(delivered ? { status: 'delivered', delivered_at: database.fn.now() } : {}),
    });
  await database.raw('WITH recorded AS (?) ?', [record, update]);
}

export async function markEventFailed(database: Knex, id: string): Promise<void> {
  await database('webhook_events').where({ id }).whereNot({ status: 'delivered' }).update({ status: 'failed' });
}

export async function markEventPending(database: Knex, id: string): Promise<void> {
  await database('webhook_events').where({ id }).update({ status: 'pending' });
}

/** The merchant's newest events, at most `limit`. */
export function listMerchantEvents(database: Knex, merchant_id: string, limit: number): Promise<WebhookEventRow[]> {
  return database<WebhookEventRow>('webhook_events').where({ merchant_id }).orderBy('created_at', 'desc').limit(limit);
}

export async function attemptsOf(database: Knex, webhook_ids: string[]): Promise<WebhookAttemptRow[]> {
  if (webhook_ids.length === 0) return [];
  return database<WebhookAttemptRow>('webhook_delivery_attempts').whereIn('webhook_id', webhook_ids).orderBy(['webhook_id', 'attempt']);
}
