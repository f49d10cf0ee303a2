import type { Knex } from 'knex';

/**
 * 002_ledger: the double-entry ledger.
 *
 * - ledger_accounts: one row per (owner_type, owner_id, currency, kind) with its balances in minor units.
 *   `posted_units` = sum of posted postings, `held_units` = sum of open pending transfers debiting it.
 *   Non-negative accounts (allows_negative false) keep posted − held ≥ 0 by CHECK.
 * - ledger_transactions / ledger_postings: a transaction's postings sum to zero per currency.
 * - ledger_pending_transfers: two-phase transfers (pending → posted | voided), exactly once.
 * - ledger_idempotency_keys: one namespace for every write (transfer, create/post/void pending transfer):
 *   the key, the operation, a fingerprint of the request, and the result it produced.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE ledger_accounts (
      id uuid PRIMARY KEY,
      owner_type text NOT NULL CHECK (owner_type IN ('platform', 'partner', 'merchant', 'user')),
      owner_id text NOT NULL CHECK (owner_id <> ''),
      currency text NOT NULL CHECK (currency IN ('USD', 'KHR', 'USDT')),
      kind text NOT NULL CHECK (kind IN ('wallet', 'partner_float', 'fee_revenue', 'settlement', 'holds')),
      allows_negative boolean NOT NULL,
      posted_units bigint NOT NULL DEFAULT 0,
      held_units bigint NOT NULL DEFAULT 0 CHECK (held_units >= 0),
      created_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT ledger_accounts_owner_unique UNIQUE (owner_type, owner_id, currency, kind),
      CONSTRAINT ledger_accounts_available_non_negative CHECK (allows_negative OR posted_units - held_units >= 0)
    );

    CREATE TABLE ledger_transactions (
      id uuid PRIMARY KEY,
      idempotency_key text NOT NULL UNIQUE,
      request_fingerprint text NOT NULL,
      description text NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE ledger_postings (
      id bigserial PRIMARY KEY,
      transaction_id uuid NOT NULL REFERENCES ledger_transactions (id),
      account_id uuid NOT NULL REFERENCES ledger_accounts (id),
      amount_units bigint NOT NULL CHECK (amount_units <> 0),
      currency text NOT NULL CHECK (currency IN ('USD', 'KHR', 'USDT'))
    );
    CREATE INDEX ledger_postings_account_id_idx ON ledger_postings (account_id, id);
    CREATE INDEX ledger_postings_transaction_idx ON ledger_postings (transaction_id);

    CREATE TABLE ledger_pending_transfers (
      id uuid PRIMARY KEY,
      idempotency_key text NOT NULL UNIQUE,
      debit_account_id uuid NOT NULL REFERENCES ledger_accounts (id),
      credit_account_id uuid NOT NULL REFERENCES ledger_accounts (id),
      currency text NOT NULL CHECK (currency IN ('USD', 'KHR', 'USDT')),
      amount_units bigint NOT NULL CHECK (amount_units > 0),
      state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'posted', 'voided')),
      expires_at timestamptz,
      posted_transaction_id uuid REFERENCES ledger_transactions (id),
      description text NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      resolved_at timestamptz,
      CHECK (debit_account_id <> credit_account_id),
      CHECK ((state = 'posted') = (posted_transaction_id IS NOT NULL))
    );
    CREATE INDEX ledger_pending_transfers_open_idx ON ledger_pending_transfers (debit_account_id) WHERE state = 'pending';

    CREATE TABLE ledger_idempotency_keys (
      idempotency_key text PRIMARY KEY,
      operation text NOT NULL CHECK (operation IN ('transfer', 'create_pending', 'post_pending', 'void_pending')),
      request_fingerprint text NOT NULL,
      transaction_id uuid REFERENCES ledger_transactions (id),
      pending_transfer_id uuid REFERENCES ledger_pending_transfers (id),
      created_at timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE IF EXISTS ledger_idempotency_keys;
    DROP TABLE IF EXISTS ledger_pending_transfers;
    DROP TABLE IF EXISTS ledger_postings;
    DROP TABLE IF EXISTS ledger_transactions;
    DROP TABLE IF EXISTS ledger_accounts;
  `);
}
