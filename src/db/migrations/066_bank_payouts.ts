import type { Knex } from 'knex';

/**
 * 066_bank_payouts: Area C payouts from a user's wallet to one of its verified tokenized bank accounts
 * (docs/payouts.md "Bank payouts"). A bank payout's row names the user (`user_id`) and the bank account's token
 * (`instrument_token`); its currency is the wallet's (USD). The fee schedule gains the default bank channel `BANK`
 * (a bank without a channel of its own: ABA, ACLEDA and WING have theirs).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE payouts
      ADD COLUMN user_id text NULL,
      ADD COLUMN instrument_token text NULL,
      ADD CONSTRAINT payouts_bank_destination_check CHECK (kind <> 'bank' OR (user_id IS NOT NULL AND instrument_token IS NOT NULL));
    INSERT INTO fee_schedule (channel_code, fee) VALUES ('BANK', '{"fee_payout": {"amount": 0.5, "currency": "USD"}}'::jsonb)
      ON CONFLICT (channel_code) DO NOTHING;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DELETE FROM fee_schedule WHERE channel_code = 'BANK';
    ALTER TABLE payouts DROP CONSTRAINT payouts_bank_destination_check, DROP COLUMN instrument_token, DROP COLUMN user_id;
  `);
}
