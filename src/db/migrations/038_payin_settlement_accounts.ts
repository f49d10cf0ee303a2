import type { Knex } from 'knex';

/**
 * 038_payin_settlement_accounts: the ledger accounts a payin's settlement posts to (docs/payins.md), resolved once
 * when the payin is created: the merchant's USDT wallet, the platform's USDT settlement and fee_revenue accounts.
 * The settlement then posts with these ids instead of finding the accounts again. Existing payins get the accounts
 * that already exist; one left null (its account not opened yet) is resolved by the settlement as before.
 *
 * No foreign keys to ledger_accounts: an insert's key check takes FOR KEY SHARE on the three account rows in column
 * order while settlements hold the same rows FOR UPDATE in id order, and a burst of creates beside settlements
 * deadlocked. Accounts are never deleted, and the ids come from the ledger itself.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE payins
      ADD COLUMN wallet_account_id uuid NULL,
      ADD COLUMN settlement_account_id uuid NULL,
      ADD COLUMN fee_revenue_account_id uuid NULL;
    UPDATE payins p SET
      wallet_account_id = (SELECT a.id FROM ledger_accounts a
                            WHERE a.owner_type = 'merchant' AND a.owner_id = p.merchant_id AND a.currency = p.currency AND a.kind = 'wallet'),
      settlement_account_id = (SELECT a.id FROM ledger_accounts a
                                WHERE a.owner_type = 'platform' AND a.owner_id = 'platform' AND a.currency = p.currency AND a.kind = 'settlement'),
      fee_revenue_account_id = (SELECT a.id FROM ledger_accounts a
                                 WHERE a.owner_type = 'platform' AND a.owner_id = 'platform' AND a.currency = p.currency AND a.kind = 'fee_revenue');
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE payins DROP COLUMN wallet_account_id, DROP COLUMN settlement_account_id, DROP COLUMN fee_revenue_account_id');
}
