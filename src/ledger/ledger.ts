/**
 * The PostgreSQL ledger (platform decisions §3): the contract and each method's errors are in types.ts.
 *
 * One module per operation (accounts.ts, transfer.ts, create-pending.ts, post-pending.ts, void-pending.ts,
 * reads.ts, check.ts) over one lock/replay kernel (kernel.ts: atomicity, locks in one order, idempotent replay,
 * the balance postconditions) and one store (store.ts, the port; postgres-store.ts, its SQL statements); the reads by
 * business key other modules make (key-reads.ts, read-only statements of their own).
 */
import type { Knex } from 'knex';
import { accountsOf, findAccount, getAccount, openAccount, platformAccount } from './accounts';
import { check } from './check';
import { createPendingTransfer } from './create-pending';
import { createPostgresLedgerStore } from './postgres-store';
import { createKeyReads } from './key-reads';
import { postPendingTransfer } from './post-pending';
import { entriesOf, getPendingTransfer } from './reads';
import { groupedTransfer, transfer, transferAtOnce } from './transfer';
import type { Ledger } from './types';
import { voidPendingTransfer } from './void-pending';

/** Options of the ledger. */
export interface LedgerOptions {
  /**
   * Group commit of transfers (transfer.ts `groupedTransfer`): transfers without a caller transaction that arrive
   * together share one database transaction, at most `maxBatch` (default 16) to a group. Off by default: see
   * docs/capacity.md for what it gained.
   */
  groupCommit?: { maxBatch?: number };
}

/** Creates the ledger over a knex instance. One per process (it holds no state besides the pool and, with group commit, the transfers waiting for their group). */
export function createLedger(database: Knex, options: LedgerOptions = {}): Ledger {
  const store = createPostgresLedgerStore(database);
  const grouped = options.groupCommit ? groupedTransfer(store, options.groupCommit.maxBatch ?? 16) : undefined;
  // The ids of the platform's accounts transferAtOnce resolved (a few: one per kind and currency).
  const platformIds = new Map<string, string>();
  return {
    openAccount: (input, trx) => openAccount(store.within(trx), input),
    getAccount: (account_id, trx) => getAccount(store.within(trx), account_id),
    findAccount: (input, trx) => findAccount(store.within(trx), input),
    accountsOf: (owner_type, owner_id, trx) => accountsOf(store.within(trx), owner_type, owner_id),
    platformAccount: (kind, currency, trx) => platformAccount(store.within(trx), kind, currency),
    transfer: async (input, trx, join = 'savepoint', also) => {
      if (trx || also) return transfer(store, input, { trx, join }, also);
      if (grouped) return grouped(input);
      // On the pool: one statement, its own transaction; what it declines (a refusal, a replay, a conflict) the
      // steps answer, without trying that statement again.
      return (await transferAtOnce(store, platformIds, input)) ?? transfer(store, input, { join }, undefined, { attempt: false });
    },
    transferAtOnce: (input, also) => transferAtOnce(store, platformIds, input, also),
    createPendingTransfer: (input, trx, join = 'savepoint') => createPendingTransfer(store, input, { trx, join }),
    postPendingTransfer: (input, trx, join = 'savepoint') => postPendingTransfer(store, input, { trx, join }),
    voidPendingTransfer: (input, trx, join = 'savepoint') => voidPendingTransfer(store, input, { trx, join }),
    getPendingTransfer: (pending_transfer_id, trx) => getPendingTransfer(store.within(trx), pending_transfer_id),
    entriesOf: (account_id, options) => entriesOf(store, account_id, options),
    check: () => check(store),
    ...createKeyReads(database),
  };
}
