import type { Knex } from 'knex';

/**
 * 003_onboarding: partners, merchants and users.
 *
 * Secrets are never stored in plaintext: partner and merchant secret keys and the merchant API key as SHA-256 hex
 * (indexed for lookup), passwords as salted scrypt strings, the merchant HMAC secret AES-256-GCM encrypted under the
 * platform data key (src/crypto/secrets.ts). Ledger account ids are uuids of the ledger's accounts.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('partners', (table) => {
    table.text('id').primary();
    table.text('name').notNullable();
    table.text('status').notNullable().defaultTo('active');
    table.text('public_key_pem').notNullable();
    table.text('secret_key_sha256').notNullable();
    table.text('user_name').notNullable().unique();
    table.text('password_hash').notNullable();
    table.uuid('float_account_id').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE partners ADD CONSTRAINT partners_status_check CHECK (status IN ('active', 'suspended'))`);

  await knex.schema.createTable('merchants', (table) => {
    table.text('id').primary();
    table.text('name').notNullable();
    table.text('status').notNullable().defaultTo('active');
    table.text('callback_url').notNullable();
    table.text('signature_header').notNullable().defaultTo('X-Signature');
    table.text('payin_fee_percent').notNullable().defaultTo('1.0');
    table.text('public_key_pem').notNullable();
    table.text('secret_key_sha256').notNullable();
    table.text('api_user_name').notNullable().unique();
    table.text('api_password_hash').notNullable();
    table.text('api_key_sha256').notNullable().unique();
    table.text('hmac_secret_encrypted').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE merchants ADD CONSTRAINT merchants_status_check CHECK (status IN ('active', 'suspended'))`);

  await knex.schema.createTable('users', (table) => {
    table.bigIncrements('id').primary();
    table.text('merchant_id').nullable().references('id').inTable('merchants');
    table.text('phone_number').nullable();
    table.text('email').nullable();
    table.text('first_name').notNullable();
    table.text('last_name').notNullable();
    table.text('address').nullable();
    table.text('birthday').nullable(); // YYYY-MM-DD, kept as text so no time zone ever shifts it
    table.text('gender').nullable();
    table.text('description').nullable();
    table.text('avatar').notNullable().defaultTo('');
    table.text('currency').notNullable();
    table.text('status').notNullable().defaultTo('active');
    table.boolean('eligible').notNullable().defaultTo(true);
    table.text('user_token').notNullable().unique();
    table.text('wallet_ref').notNullable().unique();
    table.uuid('wallet_account_id').nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.index(['merchant_id']);
  });
  await knex.raw(`ALTER TABLE users ADD CONSTRAINT users_status_check CHECK (status IN ('active', 'inactive'))`);
  await knex.raw(`CREATE UNIQUE INDEX users_phone_number_unique ON users (phone_number) WHERE phone_number IS NOT NULL`);
  await knex.raw(`CREATE UNIQUE INDEX users_email_unique ON users (lower(email)) WHERE email IS NOT NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('users');
  await knex.schema.dropTable('merchants');
  await knex.schema.dropTable('partners');
}
