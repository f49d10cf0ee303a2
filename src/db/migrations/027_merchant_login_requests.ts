import type { Knex } from 'knex';

/**
 * 027_merchant_login_requests: the signed Area C login bodies already accepted, so that a captured login opens no
 * session when sent again. One row per (merchant, SHA-256 of the body's signature bytes), kept until no process
 * could accept the body's timestamp any more (twice MERCHANT_LOGIN_WINDOW_SECONDS past it); rows past that are
 * deleted by the merchant's next login. Nothing of the body itself (user name, password) is stored.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE merchant_login_requests (
      merchant_id text NOT NULL,
      signature_sha256 char(64) NOT NULL,
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (merchant_id, signature_sha256)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('merchant_login_requests');
}
