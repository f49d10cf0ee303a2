/**
 * The ledger kernel's pure parts (src/ledger/kernel.ts): the assertions fire on every broken postcondition they
 * name (they are programmer errors, not DomainErrors), and the request fingerprints stay those of the keys already
 * stored (values computed by the ledger before its split into per-operation modules).
 */
import { DomainError } from '../../src/errors';
import { createPendingRequest } from '../../src/ledger/create-pending';
import { assertBalancesAfter, postingChanges, recordBalances, type Plan } from '../../src/ledger/kernel';
import { resolveRequest } from '../../src/ledger/resolve-pending';
import type { Balances } from '../../src/ledger/rows';
import { transferRequest } from '../../src/ledger/transfer';

const A = '00000000-0000-4000-8000-000000000001';
const B = '00000000-0000-4000-8000-000000000002';
const PENDING = '00000000-0000-4000-8000-000000000003';

/** The error `work` throws (fails the test when it throws none). */
function thrown(work: () => unknown): Error {
  try {
    work();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

function expectAssertion(work: () => unknown, message: RegExp): void {
  const error = thrown(work);
  expect(error).not.toBeInstanceOf(DomainError);
  expect(error.message).toMatch(/^assertion failed: /);
  expect(error.message).toMatch(message);
}

describe('postingChanges', () => {
  it('sums postings per account, in their order, posted units only', () => {
    const changes = postingChanges([
      { account_id: A, amount_units: -100n, currency: 'USD' },
      { account_id: B, amount_units: 100n, currency: 'USD' },
      { account_id: A, amount_units: 30n, currency: 'USD' },
      { account_id: B, amount_units: -30n, currency: 'USD' },
    ]);
    expect(changes).toEqual([
      { account_id: A, posted_units: -70n, held_units: 0n },
      { account_id: B, posted_units: 70n, held_units: 0n },
    ]);
  });

  it('asserts that the postings sum to zero per currency', () => {
    expectAssertion(
      () =>
        postingChanges([
          { account_id: A, amount_units: -100n, currency: 'USD' },
          { account_id: B, amount_units: 100n, currency: 'KHR' },
        ]),
      /postings to write sum to -100 USD units, not 0/,
    );
  });
});

describe('assertBalancesAfter', () => {
  const locked = new Map<string, Balances>([
    [A, { id: A, posted_units: 500n, held_units: 100n, allows_negative: false }],
    [B, { id: B, posted_units: 0n, held_units: 0n, allows_negative: false }],
  ]);
  const plan: Plan = {
    locked,
    changes: [
      { account_id: A, posted_units: -300n, held_units: -100n },
      { account_id: B, posted_units: 300n, held_units: 0n },
    ],
  };
  const after = (a: Partial<Balances> = {}, b: Partial<Balances> = {}): Balances[] => [
    { id: A, posted_units: 200n, held_units: 0n, allows_negative: false, ...a },
    { id: B, posted_units: 300n, held_units: 0n, allows_negative: false, ...b },
  ];

  it('accepts an update that left each account at its locked balance plus its change', () => {
    expect(() => assertBalancesAfter(plan, after())).not.toThrow();
  });

  it('asserts the update touched exactly the accounts the write changes', () => {
    expectAssertion(() => assertBalancesAfter(plan, after().slice(0, 1)), /touched 1 accounts, the write changes 2/);
    expectAssertion(() => assertBalancesAfter(plan, [...after(), { id: PENDING, posted_units: 0n, held_units: 0n, allows_negative: true }]), /touched 3/);
    expectAssertion(() => assertBalancesAfter(plan, [after()[0]!, { ...after()[1]!, id: PENDING }]), new RegExp(`account ${B} was not updated`));
  });

  it('asserts every changed account was locked', () => {
    const unlocked: Plan = { ...plan, locked: new Map([[A, locked.get(A)!]]) };
    expectAssertion(() => assertBalancesAfter(unlocked, after()), new RegExp(`account ${B} changed without its lock`));
  });

  it('asserts each balance is the locked one plus the change (no lost or doubled update)', () => {
    expectAssertion(() => assertBalancesAfter(plan, after({ posted_units: 199n })), /not its locked balances plus the change/);
    expectAssertion(() => assertBalancesAfter(plan, after({}, { held_units: 1n })), /not its locked balances plus the change/);
  });

  it('asserts no account that may not go negative is below zero after the write', () => {
    const overdrawn: Plan = { locked, changes: [{ account_id: A, posted_units: -600n, held_units: -100n }] };
    expectAssertion(() => assertBalancesAfter(overdrawn, [{ id: A, posted_units: -100n, held_units: 0n, allows_negative: false }]), /below zero/);
    const settlement: Plan = { locked: new Map([[A, { ...locked.get(A)!, allows_negative: true }]]), changes: overdrawn.changes };
    expect(() => assertBalancesAfter(settlement, [{ id: A, posted_units: -100n, held_units: 0n, allows_negative: true }])).not.toThrow();
  });
});

describe('recordBalances', () => {
  const locked = new Map<string, Balances>([
    [A, { id: A, posted_units: 500n, held_units: 0n, allows_negative: false }],
    [B, { id: B, posted_units: -20n, held_units: 0n, allows_negative: true }],
  ]);

  it("records after each posting its account's locked balance plus its postings so far", () => {
    const recorded = recordBalances(
      [
        { account_id: A, amount_units: -100n, currency: 'USD' },
        { account_id: B, amount_units: 100n, currency: 'USD' },
        { account_id: A, amount_units: -50n, currency: 'USD' },
        { account_id: B, amount_units: 50n, currency: 'USD' },
      ],
      locked,
    );
    expect(recorded.map((posting) => posting.balance_after_units)).toEqual([400n, 80n, 350n, 130n]);
  });

  it('asserts every account posted to is locked', () => {
    expectAssertion(() => recordBalances([{ account_id: PENDING, amount_units: 1n, currency: 'USD' }], locked), /posted to without its lock/);
  });

  it("is a postcondition: each account's last recorded balance is what the update left", () => {
    const postings = [
      { account_id: A, amount_units: -100n, currency: 'USD' as const },
      { account_id: B, amount_units: 100n, currency: 'USD' as const },
    ];
    const plan: Plan = { locked, changes: postingChanges(postings), recorded: recordBalances(postings, locked) };
    const left = (a_units: bigint): Balances[] => [
      { id: A, posted_units: a_units, held_units: 0n, allows_negative: false },
      { id: B, posted_units: 80n, held_units: 0n, allows_negative: true },
    ];
    expect(() => assertBalancesAfter(plan, left(400n))).not.toThrow();
    const misrecorded: Plan = { ...plan, recorded: plan.recorded!.map((posting) => ({ ...posting, balance_after_units: posting.balance_after_units + 1n })) };
    expectAssertion(() => assertBalancesAfter(misrecorded, left(400n)), new RegExp(`account ${A}'s last posting records 401 units after it, the update left 400`));
  });
});

describe('request fingerprints', () => {
  it('stay those of the keys already stored, for every write', () => {
    const transfer = transferRequest({
      idempotency_key: 'k',
      description: 'pay',
      postings: [
        { account_id: A.toUpperCase(), amount_units: -250n },
        { account_id: B, amount_units: 250n },
      ],
      metadata: { order: 'A-1', n: 1 },
    });
    expect(transfer.claim).toEqual({
      idempotency_key: 'k',
      operation: 'transfer',
      request_fingerprint: 'c26acf76d9bf0ccc09b4833d3c4eecd8dbed32364c0ebb0d915116635450eb5c',
    });
    const hold = { idempotency_key: 'k', debit_account_id: A, credit_account_id: B, amount_units: 300n, description: 'hold' };
    expect(createPendingRequest(hold).claim.request_fingerprint).toBe('3e32ae2ae38fd78318252bd3cd10b179104d3273f8374908650dd15e4c8296f4');
    expect(createPendingRequest({ ...hold, timeout_seconds: 60, metadata: { a: [1, { b: 2n }] } }).claim.request_fingerprint).toBe(
      'ccd9bfd698d56b3a0b1eb7a2e3131d50007dbb83c258a1ca989b1a05408b3417',
    );
    const resolve = { pending_transfer_id: PENDING, idempotency_key: 'k' };
    expect(resolveRequest('post_pending', resolve).claim.request_fingerprint).toBe('37e63d170763b3a83cc6d3eb3880afaae9bc9de5e1b404f30161bfd9b6914e0b');
    expect(resolveRequest('void_pending', resolve).claim.request_fingerprint).toBe('4a8b3506cca5c0c6f8c825f7b8c56a56e8b27e5ae923d66a74931f8f3a19d88e');
  });
});
