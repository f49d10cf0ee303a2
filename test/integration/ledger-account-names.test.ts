/**
 * Ledger.createPendingTransfer with its accounts named by address (src/ledger/types.ts): a wallet by owner, kind and
 * currency, the platform's account by kind and currency. The names resolve to the accounts' ids before the request
 * is fingerprinted, so a hold named both ways under one key is one hold; a wallet named for the first time is opened
 * (empty: INSUFFICIENT_FUNDS); an account named both by id and by address, or a platform kind that is none, is
 * refused with nothing held.
 */
import { randomUUID } from 'node:crypto';
import type { AccountAddress, Ledger } from '../../src/ledger/types';
import { startTestPlatform, type TestPlatform } from '../support/platform';

let platform: TestPlatform;
let ledger: Ledger;

beforeAll(async () => {
  platform = await startTestPlatform();
  ledger = platform.deps.ledger;
});
afterAll(() => platform.stop());

const walletOf = (owner_id: string): AccountAddress => ({ owner_type: 'user', owner_id, currency: 'USD', kind: 'wallet' });

async function funded(units: bigint): Promise<AccountAddress> {
  const address = walletOf(`named-${randomUUID()}`);
  const wallet = await ledger.openAccount(address);
  await ledger.transfer({
    idempotency_key: `fund-${randomUUID()}`,
    description: 'fund',
    postings: [
      { platform: 'settlement', currency: 'USD', amount_units: -units },
      { account_id: wallet.id, amount_units: units },
    ],
  });
  return address;
}

const reasonOf = (promise: Promise<unknown>) => promise.then(() => 'resolved', (error: { reason?: string }) => error.reason);

describe('createPendingTransfer by account names', () => {
  it('holds from a wallet named by address to the platform account named by kind; the same key with ids answers the same hold', async () => {
    const address = await funded(1_000n);
    const idempotency_key = `named-hold-${randomUUID()}`;
    const named = await ledger.createPendingTransfer({ idempotency_key, debit_account: address, credit_account: { platform: 'settlement', currency: 'USD' }, amount_units: 400n, description: 'named' });
    const wallet = (await ledger.findAccount(address))!;
    const settlement = await ledger.platformAccount('settlement', 'USD');
    expect(named).toMatchObject({ debit_account_id: wallet.id, credit_account_id: settlement.id, amount_units: 400n, state: 'pending' });
    expect(await ledger.getAccount(wallet.id)).toMatchObject({ posted_units: 1_000n, held_units: 400n, available_units: 600n });
    const byIds = await ledger.createPendingTransfer({ idempotency_key, debit_account_id: wallet.id, credit_account_id: settlement.id, amount_units: 400n, description: 'named' });
    expect(byIds.id).toBe(named.id);
    expect(await ledger.getAccount(wallet.id)).toMatchObject({ held_units: 400n });
    // Another amount under the key is another request.
    expect(await reasonOf(ledger.createPendingTransfer({ idempotency_key, debit_account: address, credit_account: { platform: 'settlement', currency: 'USD' }, amount_units: 401n, description: 'named' }))).toBe('IDEMPOTENCY_CONFLICT');
    expect((await ledger.check()).ok).toBe(true);
  });

  it('an owner id with commas, quotes, braces and backslashes names its own wallet, not another', async () => {
    const tricky = `a,"b\\c}{d ${randomUUID()}`;
    const address = walletOf(tricky);
    const wallet = await ledger.openAccount(address);
    await ledger.transfer({ idempotency_key: `fund-${randomUUID()}`, description: 'fund', postings: [{ platform: 'settlement', currency: 'USD', amount_units: -300n }, { account_id: wallet.id, amount_units: 300n }] });
    const hold = await ledger.createPendingTransfer({ idempotency_key: `tricky-${randomUUID()}`, debit_account: address, credit_account: { platform: 'settlement', currency: 'USD' }, amount_units: 100n, description: 'tricky' });
    expect(hold.debit_account_id).toBe(wallet.id);
    expect(await ledger.findAccount(walletOf('a'))).toBeUndefined();
  });

  it("in the caller's transaction, two named accounts are found and locked by one statement: the hold takes 2", async () => {
    const address = await funded(1_000n);
    const db = platform.deps.database;
    const statements: string[] = [];
    const count = (query: { sql: string }) => statements.push(query.sql);
    await db.transaction(async (trx) => {
      db.on('query', count);
      try {
        await ledger.createPendingTransfer({ idempotency_key: `counted-${randomUUID()}`, debit_account: address, credit_account: { platform: 'settlement', currency: 'USD' }, amount_units: 10n, description: 'counted' }, trx, 'direct');
        // Refused for its fields: nothing sent, nothing locked.
        await expect(ledger.createPendingTransfer({ idempotency_key: '', debit_account: address, credit_account: { platform: 'settlement', currency: 'USD' }, amount_units: 10n, description: 'bad' }, trx, 'direct')).rejects.toMatchObject({ reason: 'VALIDATION_FAILED' });
      } finally {
        db.removeListener('query', count);
      }
    });
    expect(statements).toHaveLength(2);
    expect(statements[0]).toMatch(/FOR UPDATE OF a/);
    expect((await ledger.check()).ok).toBe(true);
  });

  it('a wallet named for the first time is opened, empty: INSUFFICIENT_FUNDS', async () => {
    const address = walletOf(`never-${randomUUID()}`);
    expect(await ledger.findAccount(address)).toBeUndefined();
    const refused = await reasonOf(ledger.createPendingTransfer({ idempotency_key: `empty-${randomUUID()}`, debit_account: address, credit_account: { platform: 'fee_revenue', currency: 'USD' }, amount_units: 1n, description: 'empty' }));
    expect(refused).toBe('INSUFFICIENT_FUNDS');
    expect(await ledger.findAccount(address)).toMatchObject({ posted_units: 0n, held_units: 0n });
  });

  it('refuses an account named both ways and a platform kind that is none, with nothing held', async () => {
    const address = await funded(500n);
    const wallet = (await ledger.findAccount(address))!;
    const settlement = await ledger.platformAccount('settlement', 'USD');
    const base = { amount_units: 100n, description: 'refused' };
    const both = ledger.createPendingTransfer({ ...base, idempotency_key: `both-${randomUUID()}`, debit_account: address, debit_account_id: wallet.id, credit_account_id: settlement.id });
    await expect(both).rejects.toMatchObject({ reason: 'VALIDATION_FAILED', fields: { debit_account: ['must be absent beside debit_account_id'] } });
    const notPlatform = ledger.createPendingTransfer({ ...base, idempotency_key: `kind-${randomUUID()}`, debit_account: address, credit_account: { platform: 'wallet' as never, currency: 'USD' } });
    await expect(notPlatform).rejects.toMatchObject({ reason: 'VALIDATION_FAILED', fields: { 'credit_account.platform': ['must be one of fee_revenue, settlement, holds'] } });
    expect(await ledger.getAccount(wallet.id)).toMatchObject({ posted_units: 500n, held_units: 0n });
  });
});
