import type { Knex } from 'knex';

/**
 * 060_merchant_list_index: `payments admin merchant list` (AdminService/ListMerchants) reads merchants newest first a
 * page at a time; this index answers each page by a range scan instead of sorting the whole table.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX merchants_created_at_id_idx ON merchants (created_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX merchants_created_at_id_idx');
}
