/**
 * Ledger (platform decisions §3) on real PostgreSQL: every rule and every error reason of
 * src/ledger/types.ts, through the Ledger and (for the error mapping) through the LedgerService RPC client. Each
 * `Ledger` method's `@throws` list is read from types.ts and must equal the errors driven for it here.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import ts from 'typescript';
import { COMMON_REASONS } from '../../src/errors';
import { createPostgresLedgerStore } from '../../src/ledger/postgres-store';
import { LEDGER_REASONS } from '../../src/ledger/reasons';
import type { LedgerStore } from '../../src/ledger/store';
import { transfer as transferThrough } from '../../src/ledger/transfer';
import { readRpcFailure } from '../../src/rpc/errors';
import { createLedger } from '../../src/ledger/ledger';
import type { Account, AccountKind, Ledger, LedgerTransaction, PendingTransfer } from '../../src/ledger/types';
import type { Currency } from '../../src/money';
import { startTestPlatform, type TestPlatform } from '../support/platform';

let platform: TestPlatform;
let ledger: Ledger;
let sequence = 0;

beforeAll(async () => {
  platform = await startTestPlatform();
  ledger = platform.deps.ledger;
});
afterAll(() => platform.stop());

function key(label = 'k'): string {
  sequence += 1;
  return `${label}-${sequence}-${randomUUID()}`;
}

async function wallet(currency: Currency = 'USD', kind: AccountKind = 'wallet'): Promise<Account> {
  return ledger.openAccount({ owner_type: 'user', owner_id: `user-${randomUUID()}`, currency, kind });
}

/** One transfer of `amount` from one account to another (two postings), under a fresh idempotency key. */
function move(fromAccountId: string, toAccountId: string, amount: bigint, description = 'x') {
  return ledger.transfer({
    idempotency_key: key(),
    description,
    postings: [
      { account_id: fromAccountId, amount_units: -amount },
      { account_id: toAccountId, amount_units: amount },
    ],
  });
}

/** Credits `account` from the platform's settlement account (outside money). */
async function fund(account: Account, amount: bigint): Promise<void> {
  const settlement = await ledger.platformAccount('settlement', account.currency);
  await move(settlement.id, account.id, amount, 'fund');
}

async function balance(account: Account): Promise<{ posted: bigint; held: bigint; available: bigint }> {
  const fresh = await ledger.getAccount(account.id);
  return { posted: fresh.posted_units, held: fresh.held_units, available: fresh.available_units };
}

/** Row counts and every balance: what "changes nothing" compares. */
async function snapshot(): Promise<unknown> {
  const database = platform.deps.database;
  const counts = await database.raw(`
    SELECT (SELECT count(*) FROM ledger_transactions) AS transactions,
           (SELECT count(*) FROM ledger_postings) AS postings,
           (SELECT count(*) FROM ledger_pending_transfers) AS pending,
           (SELECT count(*) FROM ledger_pending_transfers WHERE state <> 'pending') AS resolved,
           (SELECT count(*) FROM ledger_idempotency_keys) AS keys`);
  const balances = await database.raw('SELECT id, posted_units, held_units FROM ledger_accounts ORDER BY id');
  return { counts: counts.rows, balances: balances.rows };
}

/** Asserts `work` throws DomainError(kind, reason) and leaves the ledger exactly as it was. */
async function expectRefused(work: () => Promise<unknown>, kind: string, reason: string): Promise<void> {
  const before = await snapshot();
  await expect(work()).rejects.toMatchObject({ name: 'DomainError', kind, reason });
  expect(await snapshot()).toEqual(before);
}

describe('accounts', () => {
  it('opens an account once per (owner, currency, kind) and returns the existing one after', async () => {
    const owner = `merchant-${randomUUID()}`;
    const first = await ledger.openAccount({ owner_type: 'merchant', owner_id: owner, currency: 'USDT', kind: 'wallet' });
    const again = await ledger.openAccount({ owner_type: 'merchant', owner_id: owner, currency: 'USDT', kind: 'wallet' });
    const usd = await ledger.openAccount({ owner_type: 'merchant', owner_id: owner, currency: 'USD', kind: 'wallet' });
    expect(again.id).toBe(first.id);
    expect(usd.id).not.toBe(first.id);
    expect(first).toMatchObject({ posted_units: 0n, held_units: 0n, available_units: 0n, allows_negative: false });
    expect((await ledger.accountsOf('merchant', owner)).map((account) => account.id).sort()).toEqual([first.id, usd.id].sort());
    expect(await ledger.findAccount({ owner_type: 'merchant', owner_id: owner, currency: 'USDT', kind: 'wallet' })).toEqual(first);
    expect(await ledger.findAccount({ owner_type: 'merchant', owner_id: owner, currency: 'KHR', kind: 'wallet' })).toBeUndefined();
  });

  it('opens concurrent identical accounts as one', async () => {
    const owner = `partner-${randomUUID()}`;
    const accounts = await Promise.all(
      Array.from({ length: 8 }, () => ledger.openAccount({ owner_type: 'partner', owner_id: owner, currency: 'USD', kind: 'partner_float' })),
    );
    expect(new Set(accounts.map((account) => account.id)).size).toBe(1);
  });

  it('lets only settlement accounts go negative; platform accounts are opened on first use', async () => {
    const settlement = await ledger.platformAccount('settlement', 'KHR');
    expect(settlement).toMatchObject({ owner_type: 'platform', owner_id: 'platform', kind: 'settlement', allows_negative: true });
    expect((await ledger.platformAccount('settlement', 'KHR')).id).toBe(settlement.id);
    expect((await ledger.platformAccount('fee_revenue', 'KHR')).allows_negative).toBe(false);
    expect((await ledger.platformAccount('holds', 'KHR')).allows_negative).toBe(false);
  });

  it('refuses an unknown owner type, currency or kind with VALIDATION_FAILED listing each field', async () => {
    await expect(
      ledger.openAccount({ owner_type: 'bank' as never, owner_id: '', currency: 'EUR' as never, kind: 'loan' as never }),
    ).rejects.toMatchObject({
      kind: 'invalid_argument',
      reason: 'VALIDATION_FAILED',
      fields: { owner_type: expect.any(Array), owner_id: expect.any(Array), currency: expect.any(Array), kind: expect.any(Array) },
    });
  });

  it('answers ACCOUNT_NOT_FOUND for an unknown or malformed account id', async () => {
    await expect(ledger.getAccount(randomUUID())).rejects.toMatchObject({ kind: 'not_found', reason: 'ACCOUNT_NOT_FOUND' });
    await expect(ledger.getAccount('not-a-uuid')).rejects.toMatchObject({ kind: 'not_found', reason: 'ACCOUNT_NOT_FOUND' });
    await expect(ledger.entriesOf(randomUUID())).rejects.toMatchObject({ reason: 'ACCOUNT_NOT_FOUND' });
  });
});

describe('transfer', () => {
  it('posts balanced postings and updates both balances in the same transaction', async () => {
    const from = await wallet();
    const to = await wallet();
    await fund(from, 1000n);
    const transaction = await ledger.transfer({
      idempotency_key: key(),
      description: 'pay',
      postings: [
        { account_id: from.id, amount_units: -250n },
        { account_id: to.id, amount_units: 250n },
      ],
      metadata: { order: 'A-1' },
    });
    expect(transaction).toMatchObject({
      description: 'pay',
      metadata: { order: 'A-1' },
      postings: [
        { account_id: from.id, amount_units: -250n, currency: 'USD' },
        { account_id: to.id, amount_units: 250n, currency: 'USD' },
      ],
    });
    expect(await balance(from)).toEqual({ posted: 750n, held: 0n, available: 750n });
    expect(await balance(to)).toEqual({ posted: 250n, held: 0n, available: 250n });
  });

  it('accepts several currencies in one transaction when each sums to zero', async () => {
    const usd = await wallet('USD');
    const khr = await wallet('KHR');
    const usdFee = await ledger.platformAccount('fee_revenue', 'USD');
    const khrFee = await ledger.platformAccount('fee_revenue', 'KHR');
    await fund(usd, 100n);
    await fund(khr, 100n);
    const transaction = await ledger.transfer({
      idempotency_key: key(),
      description: 'fees',
      postings: [
        { account_id: usd.id, amount_units: -10n },
        { account_id: usdFee.id, amount_units: 10n },
        { account_id: khr.id, amount_units: -20n },
        { account_id: khrFee.id, amount_units: 20n },
      ],
    });
    expect(transaction.postings.map((posting) => posting.currency)).toEqual(['USD', 'USD', 'KHR', 'KHR']);
  });

  it('refuses postings that do not sum to zero per currency (UNBALANCED_POSTINGS), changing nothing', async () => {
    const usd = await wallet('USD');
    const khr = await wallet('KHR');
    const settlement = await ledger.platformAccount('settlement', 'USD');
    await fund(usd, 500n);
    await expectRefused(
      () =>
        ledger.transfer({
          idempotency_key: key(),
          description: 'bad',
          postings: [
            { account_id: usd.id, amount_units: -100n },
            { account_id: settlement.id, amount_units: 99n },
          ],
        }),
      'invalid_argument',
      'UNBALANCED_POSTINGS',
    );
    await expectRefused(
      () => move(usd.id, khr.id, 100n, 'cross currency'),
      'invalid_argument',
      'UNBALANCED_POSTINGS',
    );
    await expectRefused(
      () => ledger.transfer({ idempotency_key: key(), description: 'one', postings: [{ account_id: usd.id, amount_units: 1n }] }),
      'invalid_argument',
      'UNBALANCED_POSTINGS',
    );
  });

  it('refuses a zero, too large or non-integer amount (INVALID_AMOUNT)', async () => {
    const a = await wallet();
    const b = await wallet();
    for (const amount of [0n, 10n ** 15n + 1n, 1.5 as unknown as bigint]) {
      await expectRefused(
        () => move(a.id, b.id, amount),
        'invalid_argument',
        'INVALID_AMOUNT',
      );
    }
  });

  it('refuses an unknown account (ACCOUNT_NOT_FOUND), changing nothing', async () => {
    const a = await wallet();
    await fund(a, 100n);
    const missing = randomUUID();
    await expectRefused(
      () => move(a.id, missing, 10n),
      'not_found',
      'ACCOUNT_NOT_FOUND',
    );
  });

  it('never takes a wallet below zero (INSUFFICIENT_FUNDS) while settlement accounts may go negative', async () => {
    const a = await wallet();
    const b = await wallet();
    await fund(a, 100n);
    await expectRefused(
      () => move(a.id, b.id, 101n),
      'failed_precondition',
      'INSUFFICIENT_FUNDS',
    );
    // Exactly the balance is fine.
    await move(a.id, b.id, 100n, 'all');
    expect((await balance(a)).available).toBe(0n);
    const settlement = await ledger.platformAccount('settlement', 'USD');
    expect((await ledger.getAccount(settlement.id)).posted_units < 0n).toBe(true);
  });

  it('refuses a transfer that needs money held by a pending transfer (holds reduce available, not posted)', async () => {
    const a = await wallet();
    const b = await wallet();
    await fund(a, 1000n);
    await ledger.createPendingTransfer({ idempotency_key: key(), debit_account_id: a.id, credit_account_id: b.id, amount_units: 700n, description: 'hold' });
    expect(await balance(a)).toEqual({ posted: 1000n, held: 700n, available: 300n });
    await expectRefused(
      () => move(a.id, b.id, 301n),
      'failed_precondition',
      'INSUFFICIENT_FUNDS',
    );
  });

  it('refuses an empty or over-long idempotency key (VALIDATION_FAILED)', async () => {
    const a = await wallet();
    const b = await wallet();
    for (const idempotencyKey of ['', 'x'.repeat(201)]) {
      await expect(
        ledger.transfer({
          idempotency_key: idempotencyKey,
          description: 'x',
          postings: [
            { account_id: a.id, amount_units: -1n },
            { account_id: b.id, amount_units: 1n },
          ],
        }),
      ).rejects.toMatchObject({ reason: 'VALIDATION_FAILED', fields: { idempotency_key: expect.any(Array) } });
    }
  });
});

describe('idempotency', () => {
  it('returns the first result for the same key and request, applying it once', async () => {
    const a = await wallet();
    const b = await wallet();
    await fund(a, 100n);
    const request = {
      idempotency_key: key(),
      description: 'once',
      postings: [
        { account_id: a.id, amount_units: -100n },
        { account_id: b.id, amount_units: 100n },
      ],
      metadata: { x: 1, y: 'z' },
    };
    const first = await ledger.transfer(request);
    // The wallet is now empty: a replay must return the first result, not INSUFFICIENT_FUNDS.
    const replay = await ledger.transfer({ ...request, metadata: { y: 'z', x: 1 } });
    expect(replay).toEqual(first);
    expect(await balance(b)).toMatchObject({ posted: 100n });
    const rows = await platform.deps.database('ledger_transactions').where({ idempotency_key: request.idempotency_key }).count();
    expect(Number(rows[0]!.count)).toBe(1);
  });

  it('refuses the same key with a different request (IDEMPOTENCY_CONFLICT), changing nothing', async () => {
    const a = await wallet();
    const b = await wallet();
    await fund(a, 100n);
    const idempotencyKey = key();
    await ledger.transfer({
      idempotency_key: idempotencyKey,
      description: 'first',
      postings: [
        { account_id: a.id, amount_units: -10n },
        { account_id: b.id, amount_units: 10n },
      ],
    });
    await expectRefused(
      () =>
        ledger.transfer({
          idempotency_key: idempotencyKey,
          description: 'first',
          postings: [
            { account_id: a.id, amount_units: -11n },
            { account_id: b.id, amount_units: 11n },
          ],
        }),
      'already_exists',
      'IDEMPOTENCY_CONFLICT',
    );
    // One key namespace across operations.
    await expectRefused(
      () =>
        ledger.createPendingTransfer({ idempotency_key: idempotencyKey, debit_account_id: a.id, credit_account_id: b.id, amount_units: 1n, description: 'h' }),
      'already_exists',
      'IDEMPOTENCY_CONFLICT',
    );
  });

  it('gives concurrent identical requests the same single result', async () => {
    const a = await wallet();
    const b = await wallet();
    await fund(a, 100n);
    const request = {
      idempotency_key: key(),
      description: 'race',
      postings: [
        { account_id: a.id, amount_units: -60n },
        { account_id: b.id, amount_units: 60n },
      ],
    };
    const results = await Promise.all(Array.from({ length: 6 }, () => ledger.transfer(request)));
    expect(new Set(results.map((result) => result.id)).size).toBe(1);
    expect(await balance(a)).toMatchObject({ posted: 40n });
    const pendingRequest = { idempotency_key: key(), debit_account_id: a.id, credit_account_id: b.id, amount_units: 40n, description: 'race hold' };
    const holds = await Promise.all(Array.from({ length: 6 }, () => ledger.createPendingTransfer(pendingRequest)));
    expect(new Set(holds.map((hold) => hold.id)).size).toBe(1);
    expect(await balance(a)).toEqual({ posted: 40n, held: 40n, available: 0n });
  });
});

describe("postings naming a platform account by kind and currency", () => {
  const platformAddress = (kind: 'fee_revenue' | 'settlement' | 'holds', currency: Currency) =>
    ({ owner_type: 'platform', owner_id: 'platform', currency, kind }) as const;

  it('posts to the account platformAccount returns, opening it on first use; a replay by name or by id answers the first transaction', async () => {
    expect(await ledger.findAccount(platformAddress('holds', 'USDT'))).toBeUndefined();
    const request = {
      idempotency_key: key('platform'),
      description: 'by name',
      postings: [
        { platform: 'settlement' as const, currency: 'USDT' as const, amount_units: -70n },
        { platform: 'holds' as const, currency: 'USDT' as const, amount_units: 70n },
      ],
    };
    const first = await ledger.transfer(request);
    const holds = await ledger.platformAccount('holds', 'USDT');
    const settlement = await ledger.platformAccount('settlement', 'USDT');
    expect(holds).toMatchObject({ owner_type: 'platform', kind: 'holds', currency: 'USDT', allows_negative: false, posted_units: 70n });
    expect(first.postings).toEqual([
      { account_id: settlement.id, amount_units: -70n, currency: 'USDT' },
      { account_id: holds.id, amount_units: 70n, currency: 'USDT' },
    ]);
    expect(await ledger.transfer(request)).toEqual(first);
    const byId = { ...request, postings: [{ account_id: settlement.id.toUpperCase(), amount_units: -70n }, { account_id: holds.id, amount_units: 70n }] };
    expect(await ledger.transfer(byId)).toEqual(first);
    expect(await balance(holds)).toEqual({ posted: 70n, held: 0n, available: 70n });
    // The same key and accounts with another amount is another request.
    const other = { ...request, postings: request.postings.map((posting) => ({ ...posting, amount_units: 2n * posting.amount_units })) };
    await expectRefused(() => ledger.transfer(other), 'already_exists', 'IDEMPOTENCY_CONFLICT');
    expect((await ledger.check()).ok).toBe(true);
  });

  it('mixes names and ids, one account named twice resolved once, and refuses like any posting to it', async () => {
    const payer = await wallet('KHR');
    await fund(payer, 100n);
    const transaction = await ledger.transfer({
      idempotency_key: key('platform'),
      description: 'fee twice',
      postings: [
        { account_id: payer.id, amount_units: -100n },
        { platform: 'fee_revenue', currency: 'KHR', amount_units: 60n },
        { platform: 'fee_revenue', currency: 'KHR', amount_units: 40n },
      ],
    });
    const fee = await ledger.platformAccount('fee_revenue', 'KHR');
    expect(transaction.postings.map((posting) => posting.account_id)).toEqual([payer.id, fee.id, fee.id]);
    await expectRefused(
      () =>
        ledger.transfer({
          idempotency_key: key('platform'),
          description: 'more than the fees hold',
          postings: [
            { platform: 'fee_revenue', currency: 'KHR', amount_units: -(fee.posted_units + 1n) },
            { account_id: payer.id, amount_units: fee.posted_units + 1n },
          ],
        }),
      'failed_precondition',
      'INSUFFICIENT_FUNDS',
    );
  });

  it('refuses an unknown kind or currency, or an account id beside the name (VALIDATION_FAILED), opening nothing', async () => {
    expect(await ledger.findAccount(platformAddress('fee_revenue', 'USDT'))).toBeUndefined();
    const settlement = await ledger.platformAccount('settlement', 'USD');
    const named = (posting: Record<string, unknown>) => ({
      idempotency_key: key('platform'),
      description: 'refused',
      postings: [{ account_id: settlement.id, amount_units: -5n }, { amount_units: 5n, ...posting } as never],
    });
    const refusal = (fields: Record<string, unknown>) => ({ name: 'DomainError', kind: 'invalid_argument', reason: 'VALIDATION_FAILED', fields });
    await expectRefused(() => ledger.transfer(named({ platform: 'wallet', currency: 'USD' })), 'invalid_argument', 'VALIDATION_FAILED');
    await expect(ledger.transfer(named({ platform: 'loan', currency: 'EUR' }))).rejects.toMatchObject(
      refusal({ 'postings[1].platform': expect.any(Array), 'postings[1].currency': expect.any(Array) }),
    );
    await expect(ledger.transfer(named({ platform: 'fee_revenue', currency: 'USD', account_id: settlement.id }))).rejects.toMatchObject(
      refusal({ 'postings[1].account_id': expect.any(Array) }),
    );
    // Input refused before any lock opens no account it names.
    await expectRefused(
      () => ledger.transfer({ ...named({ platform: 'fee_revenue', currency: 'USDT' }), description: 'x'.repeat(501) }),
      'invalid_argument',
      'VALIDATION_FAILED',
    );
    await expectRefused(() => ledger.transfer(named({ platform: 'fee_revenue', currency: 'USDT', amount_units: 0n })), 'invalid_argument', 'INVALID_AMOUNT');
    expect(await ledger.findAccount(platformAddress('fee_revenue', 'USDT'))).toBeUndefined();
  });

  it("resolves in the caller's transaction: its rollback undoes the account the transfer opened", async () => {
    expect(await ledger.findAccount(platformAddress('fee_revenue', 'USDT'))).toBeUndefined();
    const before = await snapshot();
    await expect(
      platform.deps.database.transaction(async (trx) => {
        await ledger.transfer(
          {
            idempotency_key: key('platform'),
            description: 'rolled back',
            postings: [
              { platform: 'settlement', currency: 'USDT', amount_units: -5n },
              { platform: 'fee_revenue', currency: 'USDT', amount_units: 5n },
            ],
          },
          trx,
          'direct',
        );
        expect(await ledger.findAccount(platformAddress('fee_revenue', 'USDT'), trx)).toMatchObject({ posted_units: 5n });
        throw new Error('caller fails later');
      }),
    ).rejects.toThrow('caller fails later');
    expect(await snapshot()).toEqual(before);
    expect(await ledger.findAccount(platformAddress('fee_revenue', 'USDT'))).toBeUndefined();
  });
});

describe('pending transfers', () => {
  async function held(amount = 300n, timeout_seconds?: number) {
    const debit = await wallet();
    const credit = await wallet();
    await fund(debit, 1000n);
    const pending = await ledger.createPendingTransfer({
      idempotency_key: key('hold'),
      debit_account_id: debit.id,
      credit_account_id: credit.id,
      amount_units: amount,
      timeout_seconds,
      description: 'hold',
      metadata: { order: 'P-1' },
    });
    return { debit, credit, pending };
  }

  it('takes the id its caller chose for a hold; a repeat of the key answers the first hold whatever id it names', async () => {
    const debit = await wallet();
    const credit = await wallet();
    await fund(debit, 1000n);
    const chosen = randomUUID();
    const request = { idempotency_key: key('hold'), debit_account_id: debit.id, credit_account_id: credit.id, amount_units: 100n, description: 'hold' };
    const pending = await ledger.createPendingTransfer({ ...request, id: chosen.toUpperCase() });
    expect(pending.id).toBe(chosen);
    expect((await ledger.getPendingTransfer(chosen)).amount_units).toBe(100n);
    expect((await ledger.createPendingTransfer({ ...request, id: randomUUID() })).id).toBe(chosen);
    expect(await balance(debit)).toEqual({ posted: 1000n, held: 100n, available: 900n });
  });

  it('holds on create, moves the money on post (exactly once) and repeats the result for the same key', async () => {
    const { debit, credit, pending } = await held(300n);
    expect(pending).toMatchObject({ state: 'pending', amount_units: 300n, currency: 'USD', expires_at: null, posted_transaction_id: null });
    expect(await balance(debit)).toEqual({ posted: 1000n, held: 300n, available: 700n });
    const postKey = key('post');
    const posted = await ledger.postPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: postKey });
    expect(posted.state).toBe('posted');
    expect(posted.posted_transaction_id).toEqual(expect.any(String));
    expect(await balance(debit)).toEqual({ posted: 700n, held: 0n, available: 700n });
    expect(await balance(credit)).toEqual({ posted: 300n, held: 0n, available: 300n });
    expect(await ledger.postPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: postKey })).toEqual(posted);
    const [entry] = await ledger.entriesOf(credit.id);
    expect(entry).toMatchObject({ transaction_id: posted.posted_transaction_id, amount_units: 300n, description: 'hold' });
    expect(await ledger.getPendingTransfer(pending.id)).toEqual(posted);
  });

  it('refuses a second post or a void after posting (PENDING_TRANSFER_ALREADY_POSTED)', async () => {
    const { pending } = await held();
    await ledger.postPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: key() });
    await expectRefused(
      () => ledger.postPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: key() }),
      'failed_precondition',
      'PENDING_TRANSFER_ALREADY_POSTED',
    );
    await expectRefused(
      () => ledger.voidPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: key() }),
      'failed_precondition',
      'PENDING_TRANSFER_ALREADY_POSTED',
    );
  });

  it('voids exactly once, releasing the hold without moving money', async () => {
    const { debit, credit, pending } = await held(400n);
    const voidKey = key('void');
    const voided = await ledger.voidPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: voidKey });
    expect(voided.state).toBe('voided');
    expect(await balance(debit)).toEqual({ posted: 1000n, held: 0n, available: 1000n });
    expect(await balance(credit)).toEqual({ posted: 0n, held: 0n, available: 0n });
    expect(await ledger.voidPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: voidKey })).toEqual(voided);
    await expectRefused(
      () => ledger.voidPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: key() }),
      'failed_precondition',
      'PENDING_TRANSFER_ALREADY_VOIDED',
    );
    await expectRefused(
      () => ledger.postPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: key() }),
      'failed_precondition',
      'PENDING_TRANSFER_ALREADY_VOIDED',
    );
  });

  it('refuses to post after expires_at (PENDING_TRANSFER_EXPIRED) but still voids', async () => {
    const { debit, pending } = await held(100n, 1);
    expect(pending.expires_at).toBeInstanceOf(Date);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, pending.expires_at!.getTime() - Date.now()) + 300));
    await expectRefused(
      () => ledger.postPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: key() }),
      'failed_precondition',
      'PENDING_TRANSFER_EXPIRED',
    );
    await ledger.voidPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: key() });
    expect(await balance(debit)).toMatchObject({ held: 0n, posted: 1000n });
  });

  it('answers PENDING_TRANSFER_NOT_FOUND for an unknown or malformed id', async () => {
    await expectRefused(() => ledger.postPendingTransfer({ pending_transfer_id: randomUUID(), idempotency_key: key() }), 'not_found', 'PENDING_TRANSFER_NOT_FOUND');
    await expectRefused(() => ledger.voidPendingTransfer({ pending_transfer_id: 'nope', idempotency_key: key() }), 'not_found', 'PENDING_TRANSFER_NOT_FOUND');
    await expect(ledger.getPendingTransfer(randomUUID())).rejects.toMatchObject({ reason: 'PENDING_TRANSFER_NOT_FOUND' });
  });

  it('refuses a hold across currencies, beyond the available balance, of a bad amount or timeout', async () => {
    const usd = await wallet('USD');
    const khr = await wallet('KHR');
    const other = await wallet('USD');
    await fund(usd, 100n);
    const base = { debit_account_id: usd.id, credit_account_id: other.id, amount_units: 10n, description: 'h' };
    await expectRefused(
      () => ledger.createPendingTransfer({ ...base, idempotency_key: key(), credit_account_id: khr.id }),
      'invalid_argument',
      'CURRENCY_MISMATCH',
    );
    await expectRefused(
      () => ledger.createPendingTransfer({ ...base, idempotency_key: key(), amount_units: 101n }),
      'failed_precondition',
      'INSUFFICIENT_FUNDS',
    );
    await expectRefused(() => ledger.createPendingTransfer({ ...base, idempotency_key: key(), amount_units: 0n }), 'invalid_argument', 'INVALID_AMOUNT');
    await expectRefused(() => ledger.createPendingTransfer({ ...base, idempotency_key: key(), amount_units: -5n }), 'invalid_argument', 'INVALID_AMOUNT');
    await expectRefused(
      () => ledger.createPendingTransfer({ ...base, idempotency_key: key(), credit_account_id: usd.id }),
      'invalid_argument',
      'VALIDATION_FAILED',
    );
    await expectRefused(() => ledger.createPendingTransfer({ ...base, idempotency_key: key(), timeout_seconds: 0 }), 'invalid_argument', 'VALIDATION_FAILED');
    await expectRefused(() => ledger.createPendingTransfer({ ...base, idempotency_key: key(), id: 'not-a-uuid' }), 'invalid_argument', 'VALIDATION_FAILED');
    await expectRefused(
      () => ledger.createPendingTransfer({ ...base, idempotency_key: key(), credit_account_id: randomUUID() }),
      'not_found',
      'ACCOUNT_NOT_FOUND',
    );
  });

  it('refuses a post or void key already used for another request (IDEMPOTENCY_CONFLICT)', async () => {
    const { pending } = await held();
    const { pending: other } = await held();
    const voidKey = key();
    await ledger.voidPendingTransfer({ pending_transfer_id: other.id, idempotency_key: voidKey });
    await expectRefused(
      () => ledger.postPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: voidKey }),
      'already_exists',
      'IDEMPOTENCY_CONFLICT',
    );
    await expectRefused(
      () => ledger.voidPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: voidKey }),
      'already_exists',
      'IDEMPOTENCY_CONFLICT',
    );
    expect((await ledger.getPendingTransfer(pending.id)).state).toBe('pending');
  });

  it('posts exactly once when many posts and voids race', async () => {
    const { debit, credit, pending } = await held(500n);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 }, (_, index) =>
        index % 2 === 0
          ? ledger.postPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: key() })
          : ledger.voidPendingTransfer({ pending_transfer_id: pending.id, idempotency_key: key() }),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    const final = await ledger.getPendingTransfer(pending.id);
    const moved = final.state === 'posted' ? 500n : 0n;
    expect(await balance(debit)).toEqual({ posted: 1000n - moved, held: 0n, available: 1000n - moved });
    expect(await balance(credit)).toMatchObject({ posted: moved });
  });
});

describe('entries', () => {
  it('lists an account entries newest first and pages with before_transaction_id', async () => {
    const a = await wallet();
    await fund(a, 1n);
    await fund(a, 2n);
    await fund(a, 3n);
    const all = await ledger.entriesOf(a.id);
    expect(all.map((entry) => entry.amount_units)).toEqual([3n, 2n, 1n]);
    const page = await ledger.entriesOf(a.id, { limit: 1, before_transaction_id: all[0]!.transaction_id });
    expect(page.map((entry) => entry.amount_units)).toEqual([2n]);
    await expect(ledger.entriesOf(a.id, { limit: 0 })).rejects.toMatchObject({ reason: 'VALIDATION_FAILED' });
    await expect(ledger.entriesOf(a.id, { before_transaction_id: randomUUID() })).rejects.toMatchObject({ reason: 'VALIDATION_FAILED' });
  });
});

describe('caller transactions (trx)', () => {
  it('runs inside the caller transaction: a rollback undoes the posting', async () => {
    const a = await wallet();
    const b = await wallet();
    await fund(a, 100n);
    const before = await snapshot();
    await expect(
      platform.deps.database.transaction(async (trx) => {
        await ledger.transfer(
          {
            idempotency_key: key(),
            description: 'rolled back',
            postings: [
              { account_id: a.id, amount_units: -50n },
              { account_id: b.id, amount_units: 50n },
            ],
          },
          trx,
        );
        throw new Error('caller fails later');
      }),
    ).rejects.toThrow('caller fails later');
    expect(await snapshot()).toEqual(before);
  });

  it('leaves the caller transaction usable after a refused posting', async () => {
    const a = await wallet();
    const b = await wallet();
    await fund(a, 100n);
    await platform.deps.database.transaction(async (trx) => {
      await expect(
        ledger.transfer(
          {
            idempotency_key: key(),
            description: 'too much',
            postings: [
              { account_id: a.id, amount_units: -500n },
              { account_id: b.id, amount_units: 500n },
            ],
          },
          trx,
        ),
      ).rejects.toMatchObject({ reason: 'INSUFFICIENT_FUNDS' });
      const hold = await ledger.createPendingTransfer(
        { idempotency_key: key(), debit_account_id: a.id, credit_account_id: b.id, amount_units: 30n, description: 'h' },
        trx,
      );
      await ledger.postPendingTransfer({ pending_transfer_id: hold.id, idempotency_key: key() }, trx);
    });
    expect(await balance(b)).toMatchObject({ posted: 30n });
  });
});

describe('invariants', () => {
  it('check() reports a corrupted balance and the database refuses a negative wallet', async () => {
    const a = await wallet();
    await fund(a, 100n);
    expect((await ledger.check()).ok).toBe(true);
    const database = platform.deps.database;
    await database.raw('UPDATE ledger_accounts SET posted_units = posted_units + 1 WHERE id = ?', [a.id]);
    try {
      const result = await ledger.check();
      expect(result.ok).toBe(false);
      expect(result.imbalances.join('\n')).toContain(a.id);
    } finally {
      await database.raw('UPDATE ledger_accounts SET posted_units = posted_units - 1 WHERE id = ?', [a.id]);
    }
    await expect(database.raw('UPDATE ledger_accounts SET posted_units = -1 WHERE id = ?', [a.id])).rejects.toThrow(
      /ledger_accounts_available_non_negative/,
    );
    const result = await ledger.check();
    expect(result).toMatchObject({ ok: true, imbalances: [] });
    expect(result.entries).toBeGreaterThan(0);
  });
});

/** The PostgreSQL store, but each lock reads an account's posted balance one unit off (as a lost update would). */
function skewedLocks(store: LedgerStore): LedgerStore {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'atomically') {
        return (...[trx, join, work]: Parameters<LedgerStore['atomically']>) => target.atomically(trx, join, (tx) => work(skewedLocks(tx)));
      }
      if (property === 'lockAccounts') {
        return async (ids: string[]) => (await target.lockAccounts(ids)).map((row) => ({ ...row, posted_units: row.posted_units + 1n }));
      }
      // The transfer's one-statement path reports its locks with its outcome: skewed alike.
      if (property === 'tryTransfer') {
        return async (...args: Parameters<LedgerStore['tryTransfer']>) => {
          const tried = await target.tryTransfer(...args);
          return { ...tried, locked: tried.locked.map((row) => ({ ...row, posted_units: row.posted_units + 1n })) };
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe('assertions', () => {
  it('a write whose balance update is not its locked balance plus the change fails as a programmer error and changes nothing', async () => {
    const store = skewedLocks(createPostgresLedgerStore(platform.deps.database));
    const [a, b] = [await wallet(), await wallet()];
    await fund(a, 100n);
    const postings = [
      { account_id: a.id, amount_units: -10n },
      { account_id: b.id, amount_units: 10n },
    ];
    const before = await snapshot();
    const error = await transferThrough(store, { idempotency_key: key(), description: 'skewed', postings }, { join: 'savepoint' }).then(
      () => undefined,
      (caught: unknown) => caught as Error,
    );
    expect(error?.message).toMatch(/^assertion failed: account .* not its locked balances plus the change$/);
    expect(error?.name).not.toBe('DomainError');
    expect(await snapshot()).toEqual(before);
  });
});

describe('test platform stop()', () => {
  it('fails (throws) when the ledger does not balance, after still stopping the platform', async () => {
    const other = await startTestPlatform({ roles: ['api'] });
    const account = await other.deps.ledger.openAccount({ owner_type: 'user', owner_id: 'broken', currency: 'USD', kind: 'wallet' });
    await other.deps.database.raw('UPDATE ledger_accounts SET posted_units = 5 WHERE id = ?', [account.id]);
    await expect(other.stop()).rejects.toThrow(/ledger invariants broken: USD account balances sum to 5/);
  });
});

describe('LedgerService over RPC', () => {
  async function rpcFailure(work: Promise<unknown>) {
    const error = await work.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(ConnectError);
    return readRpcFailure(error);
  }

  it('transfers, holds, posts, lists balances and entries, and checks invariants', async () => {
    const client = platform.clients.ledger;
    const a = await wallet();
    const b = await wallet();
    await fund(a, 1000n);
    const { transaction } = await client.transfer({
      idempotencyKey: key(),
      description: 'rpc',
      postings: [
        { accountId: a.id, amountUnits: -100n },
        { accountId: b.id, amountUnits: 100n },
      ],
      metadataJson: '{"n":1}',
    });
    expect(transaction?.postings.map((posting) => posting.amountUnits)).toEqual([-100n, 100n]);
    expect(JSON.parse(transaction!.metadataJson)).toEqual({ n: 1 });
    const { pendingTransfer } = await client.createPendingTransfer({
      idempotencyKey: key(),
      debitAccountId: a.id,
      creditAccountId: b.id,
      amountUnits: 200n,
      timeoutSeconds: 60,
      description: 'rpc hold',
    });
    expect(pendingTransfer).toMatchObject({ state: 'pending', amountUnits: 200n });
    expect(pendingTransfer!.expiresAt).not.toBe('');
    const posted = await client.postPendingTransfer({ pendingTransferId: pendingTransfer!.id, idempotencyKey: key() });
    expect(posted.pendingTransfer?.state).toBe('posted');
    const { accounts } = await client.getBalances({ accountIds: [a.id, b.id] });
    expect(accounts.map((account) => [account.postedUnits, account.heldUnits, account.availableUnits])).toEqual([
      [700n, 0n, 700n],
      [300n, 0n, 300n],
    ]);
    const byOwner = await client.getBalances({ ownerType: 'user', ownerId: a.owner_id });
    expect(byOwner.accounts.map((account) => account.id)).toEqual([a.id]);
    const { entries } = await client.listEntries({ accountId: b.id, limit: 10 });
    expect(entries.map((entry) => entry.amountUnits)).toEqual([200n, 100n]);
    const hold = await client.createPendingTransfer({ idempotencyKey: key(), debitAccountId: a.id, creditAccountId: b.id, amountUnits: 5n, description: 'v' });
    expect((await client.voidPendingTransfer({ pendingTransferId: hold.pendingTransfer!.id, idempotencyKey: key() })).pendingTransfer?.state).toBe('voided');
    expect(await client.checkInvariants({})).toMatchObject({ ok: true, imbalances: [] });
  });

  it('maps ledger errors to Connect codes with the ErrorDetail reason', async () => {
    const client = platform.clients.ledger;
    const a = await wallet();
    const b = await wallet();
    await fund(a, 10n);
    const postings = (amount: bigint) => [
      { accountId: a.id, amountUnits: -amount },
      { accountId: b.id, amountUnits: amount },
    ];
    expect(await rpcFailure(client.transfer({ idempotencyKey: key(), description: 'x', postings: postings(0n) }))).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'INVALID_AMOUNT',
    });
    expect(await rpcFailure(client.transfer({ idempotencyKey: key(), description: 'x', postings: postings(11n) }))).toMatchObject({
      code: Code.FailedPrecondition,
      reason: 'INSUFFICIENT_FUNDS',
    });
    expect(
      await rpcFailure(
        client.transfer({
          idempotencyKey: key(),
          description: 'x',
          postings: [
            { accountId: a.id, amountUnits: -1n },
            { accountId: b.id, amountUnits: 2n },
          ],
        }),
      ),
    ).toMatchObject({ code: Code.InvalidArgument, reason: 'UNBALANCED_POSTINGS' });
    expect(
      await rpcFailure(client.transfer({ idempotencyKey: key(), description: 'x', postings: [{ accountId: randomUUID(), amountUnits: -1n }, { accountId: b.id, amountUnits: 1n }] })),
    ).toMatchObject({ code: Code.NotFound, reason: 'ACCOUNT_NOT_FOUND' });
    const reused = key();
    await client.transfer({ idempotencyKey: reused, description: 'x', postings: postings(1n) });
    expect(await rpcFailure(client.transfer({ idempotencyKey: reused, description: 'y', postings: postings(1n) }))).toMatchObject({
      code: Code.AlreadyExists,
      reason: 'IDEMPOTENCY_CONFLICT',
    });
    const emptyKey = await rpcFailure(client.transfer({ idempotencyKey: '', description: 'x', postings: postings(1n) }));
    expect(emptyKey).toMatchObject({ code: Code.InvalidArgument, reason: 'VALIDATION_FAILED', fields: { idempotency_key: expect.any(Array) } });
    expect(await rpcFailure(client.transfer({ idempotencyKey: key(), description: 'x', postings: postings(1n), metadataJson: '[1]' }))).toMatchObject({
      code: Code.InvalidArgument,
      reason: 'VALIDATION_FAILED',
      fields: { metadata_json: expect.any(Array) },
    });
    const hold = await client.createPendingTransfer({ idempotencyKey: key(), debitAccountId: a.id, creditAccountId: b.id, amountUnits: 1n, description: 'h' });
    await client.postPendingTransfer({ pendingTransferId: hold.pendingTransfer!.id, idempotencyKey: key() });
    expect(await rpcFailure(client.voidPendingTransfer({ pendingTransferId: hold.pendingTransfer!.id, idempotencyKey: key() }))).toMatchObject({
      code: Code.FailedPrecondition,
      reason: 'PENDING_TRANSFER_ALREADY_POSTED',
    });
    expect(await rpcFailure(client.postPendingTransfer({ pendingTransferId: randomUUID(), idempotencyKey: key() }))).toMatchObject({
      code: Code.NotFound,
      reason: 'PENDING_TRANSFER_NOT_FOUND',
    });
    const khr = await wallet('KHR');
    expect(
      await rpcFailure(client.createPendingTransfer({ idempotencyKey: key(), debitAccountId: a.id, creditAccountId: khr.id, amountUnits: 1n, description: 'h' })),
    ).toMatchObject({ code: Code.InvalidArgument, reason: 'CURRENCY_MISMATCH' });
    expect(await rpcFailure(client.getBalances({}))).toMatchObject({ code: Code.InvalidArgument, reason: 'VALIDATION_FAILED' });
    expect(await rpcFailure(client.getBalances({ accountIds: [randomUUID()] }))).toMatchObject({ code: Code.NotFound, reason: 'ACCOUNT_NOT_FOUND' });
  });
});

describe('balance after each posting', () => {
  it('records on every new entry its account posted balance after it, several postings of one account included', async () => {
    const a = await wallet();
    const b = await wallet();
    await fund(a, 1000n);
    const postings = (...moves: Array<[Account, bigint]>) => moves.map(([account, amount_units]) => ({ account_id: account.id, amount_units }));
    await ledger.transfer({ idempotency_key: key(), description: 'split', postings: postings([a, -100n], [b, 100n], [a, -50n], [b, 50n]) });
    const hold = await ledger.createPendingTransfer({ idempotency_key: key(), debit_account_id: a.id, credit_account_id: b.id, amount_units: 200n, description: 'h' });
    await ledger.postPendingTransfer({ pending_transfer_id: hold.id, idempotency_key: key() });
    // A net-zero account in a transaction still gets its balance after each of its postings.
    await ledger.transfer({ idempotency_key: key(), description: 'round trip', postings: postings([b, -30n], [a, 30n], [a, -30n], [b, 30n]) });
    const after = async (account: Account) => (await ledger.entriesOf(account.id)).map((entry) => [entry.amount_units, entry.balance_after_units]);
    expect(await after(a)).toEqual([[-30n, 650n], [30n, 680n], [-200n, 650n], [-50n, 850n], [-100n, 900n], [1000n, 1000n]]);
    expect(await after(b)).toEqual([[30n, 350n], [-30n, 320n], [200n, 350n], [50n, 150n], [100n, 100n]]);
    const [settlementEntry] = await ledger.entriesOf((await ledger.platformAccount('settlement', 'USD')).id, { limit: 1 });
    expect(settlementEntry!.balance_after_units).toBe((await ledger.platformAccount('settlement', 'USD')).posted_units);
    expect(await ledger.check()).toMatchObject({ ok: true, imbalances: [] });
  });

  it('check() verifies each recorded balance against the running sum; postings from before may leave it null', async () => {
    const a = await wallet();
    await fund(a, 70n);
    const database = platform.deps.database;
    const [entry] = await ledger.entriesOf(a.id);
    const posting = await database.raw('SELECT id FROM ledger_postings WHERE transaction_id = ? AND account_id = ?', [entry!.transaction_id, a.id]);
    const postingId = String(posting.rows[0].id);
    try {
      await database.raw('UPDATE ledger_postings SET balance_after_units = NULL WHERE id = ?', [postingId]);
      expect(await ledger.check()).toMatchObject({ ok: true, imbalances: [] });
      expect((await ledger.entriesOf(a.id))[0]!.balance_after_units).toBeNull();
      await database.raw('UPDATE ledger_postings SET balance_after_units = 71 WHERE id = ?', [postingId]);
      const result = await ledger.check();
      expect(result.ok).toBe(false);
      expect(result.imbalances).toEqual([`posting ${postingId} of account ${a.id} records a balance after it of 71, its running sum is 70`]);
    } finally {
      await database.raw('UPDATE ledger_postings SET balance_after_units = 70 WHERE id = ?', [postingId]);
    }
    expect((await ledger.check()).ok).toBe(true);
  });
});

describe('transfer in one statement', () => {
  /** The statements the platform's pool sends while `work` runs (nothing else uses this test's accounts). */
  async function statementsOf(work: () => Promise<unknown>): Promise<string[]> {
    const sent: string[] = [];
    const listener = (query: { sql: string }) => sent.push(query.sql);
    platform.deps.database.on('query', listener);
    try {
      await work();
    } finally {
      platform.deps.database.off('query', listener);
    }
    return sent;
  }

  it('an accepted transfer on the pool locks, checks and writes in one statement, with no transaction around it', async () => {
    const [a, b] = [await wallet(), await wallet()];
    await fund(a, 100n);
    const sent = await statementsOf(() => move(a.id, b.id, 10n));
    expect(sent.map((sql) => sql.trim().split(/\s+/).slice(0, 2).join(' '))).toEqual(['WITH l']);
    expect(await balance(a)).toEqual({ posted: 90n, held: 0n, available: 90n });
    expect((await ledger.entriesOf(a.id)).map((entry) => entry.balance_after_units)).toEqual([90n, 100n]);
  });

  /** A transfer's input (not sent) of `amount` between two accounts, under a fresh key. */
  const request = (fromAccountId: string, toAccountId: string, amount: bigint) => ({
    idempotency_key: key(),
    description: 'x',
    postings: [
      { account_id: fromAccountId, amount_units: -amount },
      { account_id: toAccountId, amount_units: amount },
    ],
  });

  it('in a caller\'s transaction the same statement runs inside it (BEGIN, SAVEPOINT, it, RELEASE, COMMIT)', async () => {
    const [a, b] = [await wallet(), await wallet()];
    await fund(a, 100n);
    const sent = await statementsOf(() => platform.deps.database.transaction((trx) => ledger.transfer(request(a.id, b.id, 10n), trx)));
    expect(sent.map((sql) => sql.trim().split(/\s+/)[0]!.toUpperCase().replace(';', ''))).toEqual(['BEGIN', 'SAVEPOINT', 'WITH', 'RELEASE', 'COMMIT']);
    expect(await balance(a)).toEqual({ posted: 90n, held: 0n, available: 90n });
  });

  describe('transferAtOnce: the caller\'s rows in the same statement', () => {
    const database = () => platform.deps.database;
    beforeAll(() => database().raw('CREATE TABLE IF NOT EXISTS ledger_test_caller_rows (name text PRIMARY KEY, transaction_id uuid NOT NULL)'));
    afterAll(() => database().raw('DROP TABLE IF EXISTS ledger_test_caller_rows'));
    const callerRow = (name: string, transaction_id: string) => ({
      sql: 'caller_row AS (INSERT INTO ledger_test_caller_rows (name, transaction_id) VALUES (?, ?::uuid) RETURNING 1)',
      bindings: [name, transaction_id],
    });
    const rowsNamed = (name: string) => database()('ledger_test_caller_rows').where({ name });

    it('writes the transfer and the caller\'s row together, in one statement', async () => {
      const [a, b] = [await wallet(), await wallet()];
      await fund(a, 100n);
      const transaction_id = randomUUID();
      const sent = await statementsOf(() => ledger.transferAtOnce(request(a.id, b.id, 10n), { transaction_id, parts: [callerRow(`ok-${transaction_id}`, transaction_id)] }));
      expect(sent).toHaveLength(1);
      expect(await rowsNamed(`ok-${transaction_id}`)).toEqual([{ name: `ok-${transaction_id}`, transaction_id }]);
      expect((await ledger.entriesOf(a.id))[0]).toMatchObject({ transaction_id, amount_units: -10n });
    });

    it('a transfer it would refuse, or a repeat of its key, writes nothing: not the caller\'s row either; the answer is undefined', async () => {
      const [a, b] = [await wallet(), await wallet()];
      await fund(a, 5n);
      const poor = randomUUID();
      expect(await ledger.transferAtOnce(request(a.id, b.id, 6n), { transaction_id: poor, parts: [callerRow(`poor-${poor}`, poor)] })).toBeUndefined();
      expect(await rowsNamed(`poor-${poor}`)).toEqual([]);
      const once = request(a.id, b.id, 1n);
      const first = randomUUID();
      expect(await ledger.transferAtOnce(once, { transaction_id: first, parts: [callerRow(`first-${first}`, first)] })).toMatchObject({ id: first });
      const again = randomUUID();
      expect(await ledger.transferAtOnce(once, { transaction_id: again, parts: [callerRow(`again-${again}`, again)] })).toBeUndefined();
      expect(await rowsNamed(`again-${again}`)).toEqual([]);
      expect(await balance(a)).toEqual({ posted: 4n, held: 0n, available: 4n });
    });

    it('a caller\'s row refused by a unique key writes nothing: not the transfer either', async () => {
      const [a, b] = [await wallet(), await wallet()];
      await fund(a, 100n);
      const taken = randomUUID();
      await database()('ledger_test_caller_rows').insert({ name: `taken-${taken}`, transaction_id: taken });
      const transaction_id = randomUUID();
      expect(await ledger.transferAtOnce(request(a.id, b.id, 10n), { transaction_id, parts: [callerRow(`taken-${taken}`, transaction_id)] })).toBeUndefined();
      expect(await balance(a)).toEqual({ posted: 100n, held: 0n, available: 100n });
      expect(await ledger.check()).toMatchObject({ ok: true });
    });
  });

  it('a refused transfer and a replay still answer as before (the separate steps decide them)', async () => {
    const [a, b] = [await wallet(), await wallet()];
    await fund(a, 5n);
    await expectRefused(() => move(a.id, b.id, 6n), 'failed_precondition', 'INSUFFICIENT_FUNDS');
    const request = { idempotency_key: key(), description: 'once', postings: [{ account_id: a.id, amount_units: -5n }, { account_id: b.id, amount_units: 5n }] };
    const first = await ledger.transfer(request);
    expect(await ledger.transfer(request)).toEqual(first);
    await expectRefused(() => ledger.transfer({ ...request, description: 'other' }), 'already_exists', 'IDEMPOTENCY_CONFLICT');
    expect(await balance(a)).toEqual({ posted: 0n, held: 0n, available: 0n });
  });

  it('transfers waiting on an account while holds on it are voided and posted never fail its below-zero check', async () => {
    // A race: several rounds, so that some transfer waits on the account while a void or post commits.
    for (let round = 0; round < 12; round += 1) {
      const [a, b] = [await wallet(), await wallet()];
      await fund(a, 10n);
      const holds = await Promise.all(
        Array.from({ length: 8 }, () => ledger.createPendingTransfer({ idempotency_key: key(), debit_account_id: a.id, credit_account_id: b.id, amount_units: 1n, description: 'h' })),
      );
      const resolutions = holds.map((hold, index) =>
        index % 2 ? ledger.postPendingTransfer({ pending_transfer_id: hold.id, idempotency_key: key() }) : ledger.voidPendingTransfer({ pending_transfer_id: hold.id, idempotency_key: key() }),
      );
      const moves = await Promise.allSettled(Array.from({ length: 16 }, () => move(a.id, b.id, 1n)));
      await Promise.all(resolutions);
      const failures = moves.flatMap((result) => (result.status === 'rejected' ? [result.reason as Error] : []));
      for (const failure of failures) expect(failure).toMatchObject({ name: 'DomainError', reason: 'INSUFFICIENT_FUNDS' });
      // 10 funded, 4 posted away, the rest moved by the accepted transfers (a transfer refused while holds were
      // still open leaves its unit behind).
      const accepted = BigInt(moves.length - failures.length);
      expect(accepted).toBeLessThanOrEqual(6n);
      expect(await balance(a)).toEqual({ posted: 6n - accepted, held: 0n, available: 6n - accepted });
    }
    expect(await ledger.check()).toMatchObject({ ok: true });
  });
});

describe('group commit (createLedger option)', () => {
  it('writes transfers that arrive together in one transaction; a refused one, a repeated key and a conflict fail no other', async () => {
    const grouped = createLedger(platform.deps.database, { groupCommit: { maxBatch: 16 } });
    const [a, b, poor] = [await wallet(), await wallet(), await wallet()];
    await fund(a, 100n);
    const request = (idempotency_key: string, from: Account, amount: bigint, description = 'g') => ({
      idempotency_key,
      description,
      postings: [
        { account_id: from.id, amount_units: -amount },
        { account_id: b.id, amount_units: amount },
      ],
    });
    const shared = key();
    const begins: string[] = [];
    const listener = (query: { sql: string }) => {
      if (/^BEGIN/.test(query.sql)) begins.push(query.sql);
    };
    platform.deps.database.on('query', listener);
    let settled: Array<PromiseSettledResult<LedgerTransaction>>;
    try {
      settled = await Promise.allSettled([
        ...Array.from({ length: 5 }, () => grouped.transfer(request(key(), a, 10n))),
        grouped.transfer(request(key(), poor, 1n)),
        grouped.transfer(request(shared, a, 1n)),
        grouped.transfer(request(shared, a, 1n)),
        grouped.transfer(request(shared, a, 2n, 'other body')),
      ]);
    } finally {
      platform.deps.database.off('query', listener);
    }
    const outcome = settled.map((result) => (result.status === 'fulfilled' ? 'ok' : (result.reason as { reason: string }).reason));
    expect(outcome).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'INSUFFICIENT_FUNDS', 'ok', 'ok', 'IDEMPOTENCY_CONFLICT']);
    const [first, again] = [settled[6], settled[7]].map((result) => (result as PromiseFulfilledResult<LedgerTransaction>).value);
    expect(again).toEqual(first);
    // One transaction for the group, then one each for the three that ran alone (the refusal, the replay, the conflict).
    expect(begins).toHaveLength(4);
    expect(await balance(a)).toEqual({ posted: 49n, held: 0n, available: 49n });
    expect(await ledger.check()).toMatchObject({ ok: true });
  });
});

/** The `@throws` reasons of each `Ledger` method, as src/ledger/types.ts documents them. */
function documentedErrors(): Record<string, string[]> {
  const file = path.resolve(__dirname, '../../src/ledger/types.ts');
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const named = (name: string) => source.statements.find((statement): statement is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(statement) && statement.name.text === name);
  const contract = named('Ledger');
  // The Ledger's own methods and those of the interfaces it extends (its reads by key).
  const extended = (contract?.heritageClauses ?? []).flatMap((clause) => clause.types.map((type) => named(type.expression.getText(source))));
  const documented: Record<string, string[]> = {};
  for (const member of [contract, ...extended].flatMap((declaration) => declaration?.members ?? [])) {
    const reasons = ts
      .getJSDocTags(member)
      .filter((tag) => tag.tagName.text === 'throws')
      .map((tag) => /^(?:\{DomainError\}\s*)?([A-Z_]+)/.exec(ts.getTextOfJSDocComment(tag.comment) ?? '')?.[1] ?? '(unreadable)');
    documented[(member.name as ts.Identifier).text] = reasons.sort();
  }
  return documented;
}

describe("each Ledger method's documented errors", () => {
  /** Accounts and transfers in every state the drivers need, made once. */
  interface Fixture {
    usd: Account;
    other: Account;
    khr: Account;
    usedKey: string;
    open: PendingTransfer;
    posted: PendingTransfer;
    voided: PendingTransfer;
    expiring: PendingTransfer;
  }
  let fixture: Fixture;

  beforeAll(async () => {
    const usd = await wallet('USD');
    const other = await wallet('USD');
    const khr = await wallet('KHR');
    await fund(usd, 1000n);
    const usedKey = key('used');
    await ledger.transfer({ idempotency_key: usedKey, description: 'used', postings: [{ account_id: usd.id, amount_units: -1n }, { account_id: other.id, amount_units: 1n }] });
    const hold = (timeout_seconds?: number) =>
      ledger.createPendingTransfer({ idempotency_key: key('hold'), debit_account_id: usd.id, credit_account_id: other.id, amount_units: 10n, timeout_seconds, description: 'h' });
    const posted = await hold();
    await ledger.postPendingTransfer({ pending_transfer_id: posted.id, idempotency_key: key() });
    const voided = await hold();
    await ledger.voidPendingTransfer({ pending_transfer_id: voided.id, idempotency_key: key() });
    fixture = { usd, other, khr, usedKey, open: await hold(), posted, voided, expiring: await hold(1) };
  });

  const move = (amount_units: bigint, extra: Partial<Parameters<Ledger['transfer']>[0]> = {}) => ({
    idempotency_key: key(),
    description: 'd',
    postings: [
      { account_id: fixture.usd.id, amount_units: -amount_units },
      { account_id: fixture.other.id, amount_units },
    ],
    ...extra,
  });
  const hold = (extra: Partial<Parameters<Ledger['createPendingTransfer']>[0]> = {}) => ({
    idempotency_key: key(),
    debit_account_id: fixture.usd.id,
    credit_account_id: fixture.other.id,
    amount_units: 5n,
    description: 'h',
    ...extra,
  });
  const resolve = (pending: PendingTransfer, idempotency_key = key()) => ({ pending_transfer_id: pending.id, idempotency_key });
  const address = { owner_type: 'user' as const, owner_id: 'x', currency: 'USD' as const, kind: 'wallet' as const };

  /** One call per documented error of each method that fails with it. */
  const drivers: Record<keyof Ledger, Record<string, () => Promise<unknown>>> = {
    openAccount: { VALIDATION_FAILED: () => ledger.openAccount({ ...address, owner_id: '' }) },
    getAccount: { ACCOUNT_NOT_FOUND: () => ledger.getAccount(randomUUID()) },
    findAccount: { VALIDATION_FAILED: () => ledger.findAccount({ ...address, currency: 'EUR' as never }) },
    accountsOf: {},
    platformAccount: { VALIDATION_FAILED: () => ledger.platformAccount('loan' as never, 'USD') },
    transfer: {
      VALIDATION_FAILED: () => ledger.transfer(move(1n, { description: 'x'.repeat(501) })),
      UNBALANCED_POSTINGS: () => ledger.transfer(move(1n, { postings: [{ account_id: fixture.usd.id, amount_units: 1n }] })),
      INVALID_AMOUNT: () => ledger.transfer(move(0n)),
      ACCOUNT_NOT_FOUND: () => ledger.transfer(move(1n, { postings: [{ account_id: fixture.usd.id, amount_units: -1n }, { account_id: randomUUID(), amount_units: 1n }] })),
      INSUFFICIENT_FUNDS: () => ledger.transfer(move(10_000n)),
      IDEMPOTENCY_CONFLICT: () => ledger.transfer(move(2n, { idempotency_key: fixture.usedKey })),
    },
    // Refusals decided under the locks answer undefined (nothing written): the caller's `transfer` refuses them.
    transferAtOnce: {
      VALIDATION_FAILED: () => ledger.transferAtOnce(move(1n, { description: 'x'.repeat(501) })),
      UNBALANCED_POSTINGS: () => ledger.transferAtOnce(move(1n, { postings: [{ account_id: fixture.usd.id, amount_units: 1n }] })),
      INVALID_AMOUNT: () => ledger.transferAtOnce(move(0n)),
    },
    createPendingTransfer: {
      VALIDATION_FAILED: () => ledger.createPendingTransfer(hold({ timeout_seconds: 1.5 })),
      INVALID_AMOUNT: () => ledger.createPendingTransfer(hold({ amount_units: 10n ** 15n + 1n })),
      ACCOUNT_NOT_FOUND: () => ledger.createPendingTransfer(hold({ debit_account_id: randomUUID() })),
      CURRENCY_MISMATCH: () => ledger.createPendingTransfer(hold({ credit_account_id: fixture.khr.id })),
      INSUFFICIENT_FUNDS: () => ledger.createPendingTransfer(hold({ amount_units: 10_000n })),
      IDEMPOTENCY_CONFLICT: () => ledger.createPendingTransfer(hold({ idempotency_key: fixture.usedKey })),
    },
    postPendingTransfer: {
      VALIDATION_FAILED: () => ledger.postPendingTransfer(resolve(fixture.open, '')),
      PENDING_TRANSFER_NOT_FOUND: () => ledger.postPendingTransfer({ pending_transfer_id: randomUUID(), idempotency_key: key() }),
      PENDING_TRANSFER_ALREADY_POSTED: () => ledger.postPendingTransfer(resolve(fixture.posted)),
      PENDING_TRANSFER_ALREADY_VOIDED: () => ledger.postPendingTransfer(resolve(fixture.voided)),
      PENDING_TRANSFER_EXPIRED: async () => {
        await new Promise((done) => setTimeout(done, Math.max(0, fixture.expiring.expires_at!.getTime() - Date.now()) + 300));
        return ledger.postPendingTransfer(resolve(fixture.expiring));
      },
      IDEMPOTENCY_CONFLICT: () => ledger.postPendingTransfer(resolve(fixture.open, fixture.usedKey)),
    },
    voidPendingTransfer: {
      VALIDATION_FAILED: () => ledger.voidPendingTransfer(resolve(fixture.open, 'k'.repeat(201))),
      PENDING_TRANSFER_NOT_FOUND: () => ledger.voidPendingTransfer({ pending_transfer_id: 'not-a-uuid', idempotency_key: key() }),
      PENDING_TRANSFER_ALREADY_POSTED: () => ledger.voidPendingTransfer(resolve(fixture.posted)),
      PENDING_TRANSFER_ALREADY_VOIDED: () => ledger.voidPendingTransfer(resolve(fixture.voided)),
      IDEMPOTENCY_CONFLICT: () => ledger.voidPendingTransfer(resolve(fixture.open, fixture.usedKey)),
    },
    getPendingTransfer: { PENDING_TRANSFER_NOT_FOUND: () => ledger.getPendingTransfer(randomUUID()) },
    entriesOf: {
      ACCOUNT_NOT_FOUND: () => ledger.entriesOf(randomUUID()),
      VALIDATION_FAILED: () => ledger.entriesOf(fixture.usd.id, { limit: 0 }),
    },
    // The reads by key find nothing rather than fail (test/integration/ledger-key-reads.test.ts).
    transactionsByKey: {},
    postingsOf: {},
    holdsByKey: {},
    usedKeys: {},
    missingTransactions: {},
    check: {},
  };

  it('lists for every method exactly the errors driven below, each a reason of the ledger or VALIDATION_FAILED', () => {
    const documented = documentedErrors();
    const driven = Object.fromEntries(Object.entries(drivers).map(([method, errors]) => [method, Object.keys(errors).sort()]));
    expect(documented).toEqual(driven);
    const known = new Set([...Object.keys(LEDGER_REASONS), 'VALIDATION_FAILED']);
    expect(Object.values(documented).flat().filter((reason) => !known.has(reason))).toEqual([]);
  });

  const cases = Object.entries(drivers).flatMap(([method, errors]) => Object.entries(errors).map(([reason, drive]) => ({ method, reason, drive })));
  it.each(cases)('$method fails with $reason as a DomainError of its kind, changing nothing', async ({ reason, drive }) => {
    const kind = (LEDGER_REASONS as Record<string, string>)[reason] ?? (COMMON_REASONS as Record<string, string>)[reason];
    await expectRefused(drive, kind!, reason);
  });
});
