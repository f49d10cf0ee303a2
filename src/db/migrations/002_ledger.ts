import type { Knex } from 'knex';

/** 002_ledger: placeholder until its capability lands (kept so the migration list is stable). */
export async function up(_knex: Knex): Promise<void> {}

export async function down(_knex: Knex): Promise<void> {}
