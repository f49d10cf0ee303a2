import type { Knex } from 'knex';

/**
 * 022_rate_limits: the counters of the abuse limits (src/abuse), shared by every process. The shape is the one
 * rate-limiter-flexible's PostgreSQL store reads and writes: `expire` is a Unix time in milliseconds, stored as
 * double precision (exact for such values) because the platform reads int8 columns as BigInt and the library does
 * arithmetic on it as a number.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE rate_limits (
      key varchar(255) PRIMARY KEY,
      points integer NOT NULL DEFAULT 0,
      expire double precision
    );
    CREATE INDEX rate_limits_expire_idx ON rate_limits (expire);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('rate_limits');
}
