import type { Knex } from 'knex';

/**
 * 008_instruments (Area C tokenization; platform decisions §7): the card and bank-account vault.
 *
 * One row per tokenized instrument: the opaque token (`tok_` + 32 base64url characters), the owning merchant, the
 * user (null for a guest card vaulted by the hosted preorder page), the kind, the holder name, the number
 * AES-256-GCM encrypted under the platform data key (`v1.<iv>.<ciphertext>.<tag>`, associated data
 * `instrument:<token>:number`) with its last 4 digits, the card brand and expiry (cards), the bank (local cards and
 * bank accounts), and for bank accounts the activation state: `pending_activation` until the QR activation is
 * done, the SHA-256 hex of the activation code (the code itself is never stored) and the merchant's call_back URL.
 * Security codes are never stored.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('instruments', (table) => {
    table.bigIncrements('id').primary();
    table.text('token').notNullable().unique();
    table.text('merchant_id').notNullable().references('id').inTable('merchants');
    table.bigInteger('user_id').nullable().references('id').inTable('users');
    table.text('kind').notNullable(); // local_card | bank_account | visa_master
    table.text('holder_name').notNullable();
    table.text('number_encrypted').notNullable();
    table.text('last4').notNullable();
    table.text('brand').nullable();
    table.smallint('expiry_month').nullable();
    table.smallint('expiry_year').nullable();
    table.bigInteger('bank_id').nullable().references('id').inTable('banks');
    table.text('status').notNullable().defaultTo('active'); // active | pending_activation
    table.text('activation_code_sha256').nullable().unique();
    table.text('call_back_url').nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('activated_at', { useTz: true }).nullable();
    table.index(['merchant_id', 'user_id']);
  });
  await knex.raw(`ALTER TABLE instruments ADD CONSTRAINT instruments_kind_check CHECK (kind IN ('local_card', 'bank_account', 'visa_master'))`);
  await knex.raw(`ALTER TABLE instruments ADD CONSTRAINT instruments_status_check CHECK (status IN ('active', 'pending_activation'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('instruments');
}
