/**
 * Dashboard sessions (docs/dashboard.md "Sign-in and sessions"), table `dashboard_sessions` (migration 030): an
 * opaque token of 256 random bits, stored only as its SHA-256 hex; a CSRF secret of its own per session; an absolute
 * end DASHBOARD_SESSION_TTL_SECONDS after sign-in, by the database's clock. A session answers only while its merchant
 * is active: each read joins the merchant's status (no cache), so a suspension applies to the very next page.
 *
 * The CSRF token of a session is HMAC-SHA256 of the session token under the session's CSRF secret: it can be made
 * only by whoever holds the token (the browser's cookie, through the façade) and the row (the api), so neither a
 * leaked row nor a form seen in another session yields a token that passes here.
 */
import { createHmac } from 'node:crypto';
import type { Knex } from '../db/knex';
import { constantTimeEqual, randomToken, sha256Hex } from '../crypto/secrets';

/** The longest token looked up (the platform issues 43 characters). */
const MAX_TOKEN_LENGTH = 256;

export interface DashboardSession {
  merchant_id: string;
  merchant_name: string;
  /** The token every form of this session carries. */
  csrf_token: string;
  expires_at: Date;
  /** When the merchant's webhook endpoint was disabled (every page shows a notice), else null. */
  webhook_disabled_at: Date | null;
}

interface SessionRow {
  merchant_id: string;
  merchant_name: string;
  csrf_secret: string;
  expires_at: Date;
  webhook_disabled_at: Date | null;
}

/** The CSRF token of the session `token` whose secret is `csrfSecret` (base64url, 43 characters). */
export function csrfTokenOf(csrfSecret: string, token: string): string {
  return createHmac('sha256', csrfSecret).update(token, 'utf8').digest('base64url');
}

/**
 * Opens a session for an active merchant (the caller checked its credentials); the merchant's expired sessions are
 * deleted in the same statement. @returns the token (shown once: only its hash is stored) and the session.
 */
export async function openDashboardSession(database: Knex, merchantId: string, ttlSeconds: number): Promise<{ token: string; session: DashboardSession }> {
  const token = randomToken(32);
  const csrfSecret = randomToken(32);
  const result = await database.raw(
    `WITH purged AS (
       DELETE FROM dashboard_sessions WHERE merchant_id = ? AND expires_at <= now()
     ), opened AS (
       INSERT INTO dashboard_sessions (token_hash, merchant_id, csrf_secret, expires_at)
       VALUES (?, ?, ?, now() + make_interval(secs => ?))
       RETURNING merchant_id, expires_at
     )
     SELECT opened.merchant_id, opened.expires_at, merchants.name AS merchant_name, merchants.webhook_disabled_at
       FROM opened JOIN merchants ON merchants.id = opened.merchant_id`,
    [merchantId, sha256Hex(token), merchantId, csrfSecret, ttlSeconds],
  );
  const row = result.rows[0] as { merchant_id: string; merchant_name: string; expires_at: Date; webhook_disabled_at: Date | null };
  return { token, session: { ...row, csrf_token: csrfTokenOf(csrfSecret, token) } };
}

/** The live session of `token`: it exists, has not ended, and its merchant is active. Else undefined. */
export async function findDashboardSession(database: Knex, token: string): Promise<DashboardSession | undefined> {
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) return undefined;
  const row = (await database('dashboard_sessions')
    .join('merchants', 'merchants.id', 'dashboard_sessions.merchant_id')
    .where('dashboard_sessions.token_hash', sha256Hex(token))
    .andWhere('dashboard_sessions.expires_at', '>', database.fn.now())
    .andWhere('merchants.status', 'active')
    .first(
      'dashboard_sessions.merchant_id',
      'merchants.name as merchant_name',
      'dashboard_sessions.csrf_secret',
      'dashboard_sessions.expires_at',
      'merchants.webhook_disabled_at',
    )) as
    | SessionRow
    | undefined;
  if (!row) return undefined;
  return {
    merchant_id: row.merchant_id,
    merchant_name: row.merchant_name,
    expires_at: row.expires_at,
    csrf_token: csrfTokenOf(row.csrf_secret, token),
    webhook_disabled_at: row.webhook_disabled_at,
  };
}

/** True when `presented` is `session`'s CSRF token (compared in constant time). */
export function csrfTokenMatches(session: DashboardSession, presented: string): boolean {
  return typeof presented === 'string' && presented.length > 0 && constantTimeEqual(presented, session.csrf_token);
}

/** Ends the session of `token` (nothing when there is none). */
export async function closeDashboardSession(database: Knex, token: string): Promise<void> {
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) return;
  await database('dashboard_sessions').where({ token_hash: sha256Hex(token) }).delete();
}
