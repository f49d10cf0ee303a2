/** The PostgreSQL ledger (issue 3). Implementation pending: see types.ts for the contract. */
import type { Knex } from 'knex';
import type { Ledger } from './types';

export function createLedger(_database: Knex): Ledger {
  const missing = () => {
    throw new Error('ledger not implemented yet');
  };
  return new Proxy({} as Ledger, { get: () => missing });
}
