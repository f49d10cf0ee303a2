/**
 * Ledger.check: the invariants, verified from the rows (read only). Each finding becomes one human-readable line;
 * the store lists at most 20 of each kind.
 */
import type { CheckFindings, LedgerStore } from './store';
import type { LedgerCheck } from './types';

/** One line per finding of each kind. */
const DESCRIBE: { [K in Exclude<keyof CheckFindings, 'accounts' | 'entries'>]: (row: CheckFindings[K][number]) => string } = {
  currency_sums: (row) => `${row.currency} account balances sum to ${row.total}, not 0`,
  unbalanced_transactions: (row) => `transaction ${row.transaction_id} ${row.currency} postings sum to ${row.total}, not 0`,
  posted_mismatches: (row) => `account ${row.id} posted balance ${row.posted} differs from its postings ${row.summed}`,
  below_zero: (row) => `account ${row.id} is below zero: ${row.available} ${row.currency} units available`,
  held_mismatches: (row) => `account ${row.id} holds ${row.held} but its open pending transfers total ${row.open}`,
  balance_after_mismatches: (row) =>
    `posting ${row.posting_id} of account ${row.account_id} records a balance after it of ${row.recorded}, its running sum is ${row.running}`,
};

export async function check(store: LedgerStore): Promise<LedgerCheck> {
  const findings = await store.checkFindings();
  const imbalances = (Object.keys(DESCRIBE) as Array<keyof typeof DESCRIBE>).flatMap((kind) =>
    (findings[kind] as Array<never>).map((row) => DESCRIBE[kind](row)),
  );
  return { ok: imbalances.length === 0, accounts: findings.accounts, entries: findings.entries, imbalances };
}
