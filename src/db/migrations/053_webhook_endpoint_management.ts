import type { Knex } from 'knex';

/**
 * 053_webhook_endpoint_management: the webhook endpoint a merchant manages from its dashboard (docs/webhooks.md
 * "Managing the endpoint").
 *
 * - Secret rotation with an overlap: the secret replaced stays in `previous_hmac_secret_encrypted` (sealed like the
 *   current one, under its own associated data) until `previous_hmac_secret_until`; meanwhile every webhook carries
 *   both signatures. `hmac_secret_rotated_at`: the last rotation (null: the secret issued at onboarding).
 * - Disabling an endpoint that fails every attempt: `webhook_failing_since` is the first failed attempt since the
 *   last delivered one (null while the endpoint answers); past WEBHOOK_DISABLE_AFTER_DAYS the endpoint is disabled
 *   (`webhook_disabled_at`, null while enabled) and no attempt is sent until the merchant enables it again.
 * - Each attempt's answer: the first 2 KiB of the response body (`response_body`, null when no answer came).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE merchants
      ADD COLUMN previous_hmac_secret_encrypted text NULL,
      ADD COLUMN previous_hmac_secret_until timestamptz NULL,
      ADD COLUMN hmac_secret_rotated_at timestamptz NULL,
      ADD COLUMN webhook_failing_since timestamptz NULL,
      ADD COLUMN webhook_disabled_at timestamptz NULL,
      ADD CONSTRAINT merchants_previous_secret_until CHECK ((previous_hmac_secret_encrypted IS NULL) = (previous_hmac_secret_until IS NULL));
    ALTER TABLE webhook_delivery_attempts ADD COLUMN response_body text NULL CHECK (octet_length(response_body) <= 2048);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE webhook_delivery_attempts DROP COLUMN response_body;
    ALTER TABLE merchants
      DROP CONSTRAINT merchants_previous_secret_until,
      DROP COLUMN previous_hmac_secret_encrypted,
      DROP COLUMN previous_hmac_secret_until,
      DROP COLUMN hmac_secret_rotated_at,
      DROP COLUMN webhook_failing_since,
      DROP COLUMN webhook_disabled_at;
  `);
}
