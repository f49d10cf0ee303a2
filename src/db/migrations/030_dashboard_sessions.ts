import type { Knex } from 'knex';

/**
 * 030_dashboard_sessions: the merchant dashboard's sessions (src/dashboard, docs/dashboard.md). One row per session:
 * the SHA-256 of its opaque token (the token itself is never stored), its merchant, the random secret its CSRF token
 * is derived from (HMAC-SHA256 of the token under it, so the row alone yields neither the cookie nor the form token),
 * and when it ends (DASHBOARD_SESSION_TTL_SECONDS after sign-in). Signing out deletes the row; a merchant's expired
 * rows are deleted at its next sign-in.
 *
 * Also an index for the dashboard's page of a merchant's webhook deliveries, newest first, paged by
 * (created_at, id).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE dashboard_sessions (
      token_hash char(64) PRIMARY KEY,
      merchant_id text NOT NULL REFERENCES merchants (id) ON DELETE CASCADE,
      csrf_secret text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX dashboard_sessions_merchant_idx ON dashboard_sessions (merchant_id, expires_at);
    CREATE INDEX webhook_events_merchant_created_idx ON webhook_events (merchant_id, created_at DESC, id DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS webhook_events_merchant_created_idx');
  await knex.schema.dropTable('dashboard_sessions');
}
