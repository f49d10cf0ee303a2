/**
 * The ledger's rows as the store reads them, and their mapping onto the contract's types (types.ts). Amounts are
 * minor units (int8 → bigint, src/db/knex.ts).
 */
import type { Currency } from '../money';
import type { Account, AccountKind, AccountOwnerType, PendingTransfer, PendingTransferState } from './types';

/** The write operations, as `ledger_idempotency_keys.operation` names them. */
export type Operation = 'transfer' | 'create_pending' | 'post_pending' | 'void_pending';

export interface AccountRow {
  id: string;
  owner_type: AccountOwnerType;
  owner_id: string;
  currency: Currency;
  kind: AccountKind;
  allows_negative: boolean;
  posted_units: bigint;
  held_units: bigint;
  created_at: Date;
}

/** An account's balances, as a lock read them or a write's update left them. */
export type Balances = Pick<AccountRow, 'id' | 'posted_units' | 'held_units' | 'allows_negative'>;

export interface PendingRow {
  id: string;
  idempotency_key: string;
  debit_account_id: string;
  credit_account_id: string;
  currency: Currency;
  amount_units: bigint;
  state: PendingTransferState;
  expires_at: Date | null;
  posted_transaction_id: string | null;
  description: string;
  metadata: Record<string, unknown>;
  created_at: Date;
}

/** One row of `ledger_idempotency_keys`: the key, what it was used for, and the result it produced. */
export interface KeyRow {
  idempotency_key: string;
  operation: Operation;
  request_fingerprint: string;
  transaction_id: string | null;
  pending_transfer_id: string | null;
}

export function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    owner_type: row.owner_type,
    owner_id: row.owner_id,
    currency: row.currency,
    kind: row.kind,
    allows_negative: row.allows_negative,
    posted_units: BigInt(row.posted_units),
    held_units: BigInt(row.held_units),
    available_units: BigInt(row.posted_units) - BigInt(row.held_units),
    created_at: row.created_at,
  };
}

export function toPending(row: PendingRow): PendingTransfer {
  return {
    id: row.id,
    idempotency_key: row.idempotency_key,
    debit_account_id: row.debit_account_id,
    credit_account_id: row.credit_account_id,
    currency: row.currency,
    amount_units: BigInt(row.amount_units),
    state: row.state,
    expires_at: row.expires_at,
    posted_transaction_id: row.posted_transaction_id,
    metadata: row.metadata ?? {},
    created_at: row.created_at,
  };
}
