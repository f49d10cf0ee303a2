/**
 * The ledger's reads by business key (LedgerKeyReads, src/ledger/key-reads.ts) against real PostgreSQL: a match finds
 * the exact keys and the literal prefixes and nothing else (LIKE's wildcards match only themselves), postings come with
 * their accounts' owners and balances, holds with when they were resolved, used keys and missing transactions are told
 * apart; empty, over-long and malformed input finds nothing.
 */
import { randomUUID } from 'node:crypto';
import { createDatabase, type Knex } from '../../src/db/knex';
import { createLedger } from '../../src/ledger/ledger';
import type { Account, Ledger } from '../../src/ledger/types';
import { createTestDatabase } from '../support/platform';

describe('ledger reads by key', () => {
  let drop: () => Promise<void>;
  let database: Knex;
  let ledger: Ledger;
  let payer: Account;
  let payee: Account;

  beforeAll(async () => {
    const created = await createTestDatabase();
    drop = created.drop;
    database = createDatabase(created.url, 4);
    ledger = createLedger(database);
    payer = await ledger.openAccount({ owner_type: 'user', owner_id: 'U-KEYS-1', currency: 'USD', kind: 'wallet' });
    payee = await ledger.openAccount({ owner_type: 'merchant', owner_id: 'M-KEYS-1', currency: 'USD', kind: 'wallet' });
    await ledger.transfer({ idempotency_key: 'KEYS-FUND', description: 'fund', postings: [{ platform: 'settlement', currency: 'USD', amount_units: -1000n }, { account_id: payer.id, amount_units: 1000n }] });
  });
  afterAll(async () => {
    expect((await ledger.check()).imbalances).toEqual([]);
    await database.destroy();
    await drop();
  });

  const move = (idempotency_key: string, amount_units = 1n, metadata: Record<string, unknown> = {}) =>
    ledger.transfer({ idempotency_key, description: idempotency_key, metadata, postings: [{ account_id: payer.id, amount_units: -amount_units }, { account_id: payee.id, amount_units }] });

  it('finds a flow’s transactions by its reference: every <reference>:<step> key and the bare reference, nothing else', async () => {
    for (const key of ['PAYIN-KEYS:settle', 'PAYIN-KEYS:additional:T:1', 'PAYIN-KEYS', 'PAYIN-KEYSX:settle', 'payin:PAYIN-KEYS:settle', 'PAY_%:pay', 'PAYXX:pay']) await move(key);
    const found = await ledger.transactionsByKey({ keys: ['PAYIN-KEYS'], prefixes: ['PAYIN-KEYS:'] });
    expect(found.map((transaction) => transaction.idempotency_key).sort()).toEqual(['PAYIN-KEYS', 'PAYIN-KEYS:additional:T:1', 'PAYIN-KEYS:settle']);
    // LIKE's wildcards in a prefix match only themselves.
    expect((await ledger.transactionsByKey({ prefixes: ['PAY_%:'] })).map((transaction) => transaction.idempotency_key)).toEqual(['PAY_%:pay']);
    expect(await ledger.transactionsByKey({ keys: [''], prefixes: [''] })).toEqual([]);
    expect(await ledger.transactionsByKey({ prefixes: ['P'.repeat(201)] })).toEqual([]);
    expect(await ledger.transactionsByKey({ keys: ['PAYIN-KEYS'], prefixes: ['PAYIN-KEYS:'] }, { limit: 2 })).toHaveLength(2);
  });

  it('answers each transaction’s metadata and its postings with their accounts and balances after them', async () => {
    await move('META-1:settle', 7n, { paid_units: '7', fee_units: '1' });
    const [transaction] = await ledger.transactionsByKey({ keys: ['META-1:settle'] });
    expect(transaction!.metadata).toEqual({ paid_units: '7', fee_units: '1' });
    const postings = await ledger.postingsOf([transaction!.transaction_id, 'not-a-uuid']);
    const payeeNow = await ledger.getAccount(payee.id);
    expect(postings).toEqual([
      expect.objectContaining({ account_id: payer.id, owner_type: 'user', owner_id: 'U-KEYS-1', kind: 'wallet', amount_units: -7n, currency: 'USD' }),
      expect.objectContaining({ account_id: payee.id, owner_type: 'merchant', owner_id: 'M-KEYS-1', kind: 'wallet', amount_units: 7n, balance_after_units: payeeNow.posted_units }),
    ]);
    expect(await ledger.postingsOf([])).toEqual([]);
  });

  it('finds holds by key with their state and when they were resolved', async () => {
    const hold = (idempotency_key: string) => ledger.createPendingTransfer({ idempotency_key, debit_account_id: payer.id, credit_account_id: payee.id, amount_units: 3n, description: 'h' });
    const posted = await hold('HOLDS-1:hold');
    await ledger.postPendingTransfer({ pending_transfer_id: posted.id, idempotency_key: 'HOLDS-1:post' });
    await hold('HOLDS-1:hold-fee');
    await hold('HOLDS-10:hold');
    const holds = await ledger.holdsByKey({ prefixes: ['HOLDS-1:'] });
    expect(holds.map((found) => [found.idempotency_key, found.state, found.amount_units, found.resolved_at === null])).toEqual([
      ['HOLDS-1:hold', 'posted', 3n, false],
      ['HOLDS-1:hold-fee', 'pending', 3n, true],
    ]);
    expect(holds[0]!.pending_transfer_id).toBe(posted.id);
  });

  it('tells which keys a write used and which transaction ids name none', async () => {
    const done = await move('USED-1');
    expect(await ledger.usedKeys(['USED-1', 'USED-2', ''])).toEqual(new Set(['USED-1']));
    expect(await ledger.usedKeys([])).toEqual(new Set());
    const unknown = randomUUID();
    expect(await ledger.missingTransactions([done.id, unknown, 'not-a-uuid', ''])).toEqual(new Set([unknown, 'not-a-uuid', '']));
    expect(await ledger.missingTransactions([])).toEqual(new Set());
  });

  it('reads inside the caller’s transaction: a write not yet committed is seen by it alone', async () => {
    await database.transaction(async (trx) => {
      await ledger.transfer({ idempotency_key: 'TRX-1:settle', description: 'trx', postings: [{ account_id: payer.id, amount_units: -1n }, { account_id: payee.id, amount_units: 1n }] }, trx);
      expect(await ledger.transactionsByKey({ prefixes: ['TRX-1:'] }, {}, trx)).toHaveLength(1);
      expect(await ledger.transactionsByKey({ prefixes: ['TRX-1:'] })).toHaveLength(0);
      expect(await ledger.usedKeys(['TRX-1:settle'], trx)).toEqual(new Set(['TRX-1:settle']));
    });
  });
});
