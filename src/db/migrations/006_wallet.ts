import type { Knex } from 'knex';

/**
 * 006_wallet (Area C): merchant sessions (token stored as SHA-256 hex), the merchant API user profile
 * shown by /login, the fee schedule and exchange rates (operator-editable rows), the bank list (seeded with
 * Cambodian banks), preorders and blocked money.
 */
export const SEED_BANKS: Array<{ name: string; region: string; city: string; logo: string }> = [
  ['ABA Bank', 'aba'],
  ['ACLEDA Bank', 'acleda'],
  ['Canadia Bank', 'canadia'],
  ['Wing Bank', 'wing'],
  ['Prince Bank', 'prince'],
  ['Sathapana Bank', 'sathapana'],
  ['Cambodia Post Bank', 'cambodia-post'],
  ['Foreign Trade Bank of Cambodia (FTB)', 'ftb'],
  ['Bank of China (Hong Kong) Phnom Penh Branch', 'boc-phnom-penh'],
  ['Maybank (Cambodia)', 'maybank'],
  ['CIMB Bank Cambodia', 'cimb'],
  ['Hong Leong Bank (Cambodia)', 'hong-leong'],
  ['J Trust Royal Bank', 'jtrust-royal'],
  ['Chip Mong Commercial Bank', 'chip-mong'],
  ['AMK Bank', 'amk'],
  ['Vattanac Bank', 'vattanac'],
  ['Phnom Penh Commercial Bank (PPCBank)', 'ppcbank'],
  ['KB Prasac Bank', 'kb-prasac'],
  ['Shinhan Bank Cambodia', 'shinhan'],
  ['Phillip Bank', 'phillip'],
  ['Cambodian Public Bank (Public Bank)', 'public-bank'],
  ['First Commercial Bank Phnom Penh Branch', 'first-commercial'],
  ['Bred Bank (Cambodia)', 'bred'],
  ['Bank for Investment and Development of Cambodia (BIDC)', 'bidc'],
  ['Hattha Bank', 'hattha'],
].map(([name, slug]) => ({ name: name!, region: 'Phnom Penh', city: 'Phnom Penh', logo: `/images/banks/${slug}.png` }));

/** Default fee schedule by channel code (interface "Fee schedule"); operators edit the rows afterwards. */
export const SEED_FEES: Record<string, unknown> = {
  ABA: { fee_payout: { amount: 0.5, currency: 'USD' }, fee_payin: { amount: 0, currency: 'USD' } },
  ACLEDA: { fee_payout: { amount: 0.5, currency: 'USD' }, fee_payin: { amount: 0, currency: 'USD' } },
  WING: { fee_payout: { amount: 0.3, currency: 'USD' }, fee_payin: { amount: 0, currency: 'USD' } },
  VISA_MASTER: { fee_payin: { amount_percentage: 2.5 } },
  REGISTER: { register_cut_amount: { amount: 1, currency: 'USD' } },
  TRANSFER: { fee_transfer: 0 },
};

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('merchant_api_users', (table) => {
    table.bigIncrements('id').primary();
    table.text('merchant_id').notNullable().unique();
    table.bigIncrements('fk_soc', { primaryKey: false });
    table.bigIncrements('wallet_id', { primaryKey: false });
    table.text('wallet_ref').notNullable().unique();
    table.text('avatar').notNullable().defaultTo('');
    table.text('time_zone');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('merchant_sessions', (table) => {
    table.text('token_hash').primary();
    table.text('merchant_id').notNullable().index();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('expires_at', { useTz: true }).notNullable();
  });
  await knex.schema.createTable('fee_schedule', (table) => {
    table.text('channel_code').primary();
    table.jsonb('fee').notNullable();
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('exchange_rates', (table) => {
    table.text('pair').primary(); // USD_KHR, KHR_USD
    table.decimal('rate', 24, 10).notNullable();
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('banks', (table) => {
    table.bigIncrements('id').primary();
    table.text('name').notNullable().unique();
    table.text('region').notNullable();
    table.text('city').notNullable();
    table.text('logo').notNullable();
  });
  await knex.schema.createTable('preorders', (table) => {
    table.text('token').primary();
    table.text('merchant_id').notNullable();
    table.text('out_trade_no').notNullable();
    table.text('seller_code').notNullable();
    table.text('description').notNullable();
    table.bigInteger('amount_units').notNullable();
    table.text('currency').notNullable();
    table.text('commission_rate'); // percent as decimal text
    table.text('redirect_url');
    table.text('call_back_url');
    table.text('status').notNullable().defaultTo('pending'); // pending | paid
    table.text('paid_transaction_id');
    table.text('paid_by_user_id');
    table.text('payment_reference');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('paid_at', { useTz: true });
    table.unique(['merchant_id', 'out_trade_no']);
  });
  await knex.schema.createTable('blocked_money', (table) => {
    table.text('transaction_ref').primary();
    table.text('merchant_id').notNullable();
    table.text('user_id').notNullable();
    table.text('pending_transfer_id').notNullable();
    table.bigInteger('amount_units').notNullable();
    table.text('currency').notNullable();
    table.text('reference').notNullable();
    table.text('state').notNullable().defaultTo('blocked'); // blocked | cancelled
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('cancelled_at', { useTz: true });
    table.index(['merchant_id']);
  });
  await knex('banks').insert(SEED_BANKS);
  await knex('fee_schedule').insert(Object.entries(SEED_FEES).map(([channel_code, fee]) => ({ channel_code, fee: JSON.stringify(fee) })));
  await knex('exchange_rates').insert([
    { pair: 'USD_KHR', rate: '4100' },
    { pair: 'KHR_USD', rate: '0.000244' },
  ]);
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['blocked_money', 'preorders', 'banks', 'exchange_rates', 'fee_schedule', 'merchant_sessions', 'merchant_api_users']) {
    await knex.schema.dropTableIfExists(table);
  }
}
