/**
 * The dashboard's reads of other capabilities' tables, in one place: a merchant by its API user name (onboarding's
 * `merchants`) and a page of a merchant's webhook events (the webhook capability's `webhook_events`, through the
 * index of migration 030). Read-only: every change goes through the owning capability.
 */
import type { Knex } from '../db/knex';
import type { WebhookEventRow } from '../webhooks/store';

/** The longest user name or cursor looked up. */
const MAX_KEY_LENGTH = 256;

/** The merchant whose API user name this is, else undefined (exact match; the names are unique). */
export async function merchantIdOfApiUser(database: Knex, userName: string): Promise<string | undefined> {
  if (typeof userName !== 'string' || userName.length === 0 || userName.length > MAX_KEY_LENGTH) return undefined;
  const row = (await database('merchants').where({ api_user_name: userName }).first('id')) as { id: string } | undefined;
  return row?.id;
}

/**
 * One page of `merchantId`'s webhook events, newest first (created_at, then id, both descending), of at most
 * `limit` rows, after the event `afterId` when given. An `afterId` that is not one of this merchant's events yields an
 * empty page, never another merchant's rows. `more` says whether a further page exists.
 */
export async function merchantEventsPage(
  database: Knex,
  merchantId: string,
  limit: number,
  afterId?: string,
): Promise<{ rows: WebhookEventRow[]; more: boolean }> {
  const query = database<WebhookEventRow>('webhook_events')
    .where({ merchant_id: merchantId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit + 1);
  if (afterId) {
    query.whereRaw('(created_at, id) < (SELECT created_at, id FROM webhook_events WHERE id = ? AND merchant_id = ?)', [afterId, merchantId]);
  }
  const rows = await query;
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}
