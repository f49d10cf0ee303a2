/**
 * The ledger's lock/replay kernel: what every write (transfer, create, post and void a pending transfer) does the
 * same way, written once. `runWrite` runs a write's three steps:
 *
 * 1. Atomically: in its own transaction, or joined to the caller's (`savepoint` or `direct`; store.atomically).
 * 2. `prepare`: lock what the write reads in the one stable order (accounts by id, `lockAccounts`; a pending
 *    transfer before its accounts) and check the request against it. A refusal (DomainError) yields to a replay: a
 *    key that holds this request's result answers with it (a retried transfer whose first attempt spent the funds
 *    returns its first result), a key that holds another request answers IDEMPOTENCY_CONFLICT.
 *    A write may first `attempt` steps 2 and 3 in one statement (transfer does): the accounts stay locked for one
 *    round trip less. It writes only what the separate steps would accept; anything else runs them.
 * 3. `write`: one statement claims the key and, only if it did, writes the result and the balance changes. When a
 *    concurrent writer claimed the key first (and committed), its result or IDEMPOTENCY_CONFLICT, as above.
 *
 * Assertions (programmer errors, never bad input: the operations refuse bad input with a DomainError first):
 * postings sum to zero per currency before a write; the balance update touched exactly the accounts the write
 * changes, each of them locked, and left each at its locked balance plus the change, none that may not go
 * negative below zero; a write that claimed its key wrote its result.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { assert, DomainError } from '../errors';
import type { Currency } from '../money';
import { accountNotFound, idempotencyConflict } from './refusals';
import type { AccountRow, Balances, KeyRow, Operation } from './rows';
import type { BalanceChange, KeyClaim, LedgerStore, NewPosting, RecordedPosting, WriteOutcome } from './store';
import type { LedgerJoin } from './types';
import { isUuid } from './validate';

/** Where a write runs: in the caller's transaction `trx` (joined as `join` says) or, without one, in its own. */
export interface WriteTarget {
  trx?: Knex.Transaction;
  join: LedgerJoin;
}

/** What a write will change, decided under its locks. */
export interface Plan {
  /** The accounts the write locked, by id, as the lock read them. */
  locked: ReadonlyMap<string, Balances>;
  /** One change per account the write changes (minor units). */
  changes: BalanceChange[];
  /** The postings it writes, with the balance each records after it (`recordBalances`). */
  recorded?: readonly RecordedPosting[];
}

/** One write operation, as the kernel runs it. */
export interface WriteSpec<P extends Plan, R> {
  claim: KeyClaim;
  /** Locks and checks; a DomainError refuses the request (unless its key replays). */
  prepare(store: LedgerStore): Promise<P>;
  /** The one statement claiming the key and writing the result and `plan.changes`. */
  write(store: LedgerStore, plan: P): Promise<WriteOutcome<R>>;
  /** The first result of the request that claimed the key. */
  replay(store: LedgerStore, key: KeyRow): Promise<R>;
  /**
   * Optional, tried first: locks, checks and writes in one statement when the request is one the write accepts.
   * Claimed: its plan (as the statement's locks read it) and outcome, asserted like `write`'s. Otherwise (nothing
   * written; the locks stay held) or undefined: the separate steps run and decide the refusal, replay or conflict.
   */
  attempt?(store: LedgerStore): Promise<{ plan: P; outcome: WriteOutcome<R> } | undefined>;
}

/** Runs a write: atomically, locked, replayed or refused, written once, its postconditions asserted. */
export function runWrite<P extends Plan, R>(store: LedgerStore, target: WriteTarget, spec: WriteSpec<P, R>): Promise<R> {
  return store.atomically(target.trx, target.join, async (tx) => {
    const attempted = spec.attempt ? await spec.attempt(tx) : undefined;
    if (attempted?.outcome.claimed) {
      assert(attempted.outcome.result !== undefined, `${spec.claim.operation} claimed key ${spec.claim.idempotency_key} but wrote no result`);
      assertBalancesAfter(attempted.plan, attempted.outcome.balances);
      return attempted.outcome.result;
    }
    let plan: P;
    try {
      plan = await spec.prepare(tx);
    } catch (error) {
      return replayOr(tx, spec, error);
    }
    const outcome = await spec.write(tx, plan);
    if (!outcome.claimed) {
      // A concurrent writer claimed this key first and committed: same request → its result.
      const existing = await keyHolding(tx, spec.claim);
      assert(existing, `idempotency key ${spec.claim.idempotency_key} neither claimed nor found`);
      return spec.replay(tx, existing);
    }
    assert(outcome.result !== undefined, `${spec.claim.operation} claimed key ${spec.claim.idempotency_key} but wrote no result`);
    assertBalancesAfter(plan, outcome.balances);
    return outcome.result;
  });
}

/** The outcome with its result mapped (the store's row → the contract's type). */
export function mapOutcome<A, B>(outcome: WriteOutcome<A>, map: (result: A) => B): WriteOutcome<B> {
  return { ...outcome, result: outcome.result === undefined ? undefined : map(outcome.result) };
}

/** After a refusal: the key's result when it holds this request, IDEMPOTENCY_CONFLICT for another, else the refusal. */
async function replayOr<R>(store: LedgerStore, spec: WriteSpec<Plan, R>, error: unknown): Promise<R> {
  if (!(error instanceof DomainError)) throw error;
  const existing = await keyHolding(store, spec.claim);
  if (existing) return spec.replay(store, existing);
  throw error;
}

/** The stored key row when it holds this request; IDEMPOTENCY_CONFLICT when it holds another. */
async function keyHolding(store: LedgerStore, claim: KeyClaim): Promise<KeyRow | undefined> {
  const row = await store.readKey(claim.idempotency_key);
  if (row && (row.operation !== claim.operation || row.request_fingerprint !== claim.request_fingerprint)) {
    throw idempotencyConflict(claim.idempotency_key);
  }
  return row;
}

/** The id of the result a key row holds (its transaction or pending transfer). */
export function resultOf(key: KeyRow, field: 'transaction_id' | 'pending_transfer_id'): string {
  const id = key[field];
  assert(id, `idempotency key ${key.idempotency_key} (${key.operation}) holds no ${field}`);
  return id;
}

/** Locks the accounts in id order; ACCOUNT_NOT_FOUND naming every missing (or malformed) one. */
export async function lockAccounts(store: LedgerStore, ids: readonly string[]): Promise<Map<string, AccountRow>> {
  const unique = [...new Set(ids)].sort();
  const malformed = unique.filter((id) => !isUuid(id));
  if (malformed.length > 0) throw accountNotFound(malformed);
  const found = new Map((await store.lockAccounts(unique)).map((row) => [row.id, row]));
  const missing = unique.filter((id) => !found.has(id));
  if (missing.length > 0) throw accountNotFound(missing);
  return found;
}

/** Per currency, the sum of the postings' amounts (minor units). */
export function sumsByCurrency(postings: readonly NewPosting[]): Map<Currency, bigint> {
  const sums = new Map<Currency, bigint>();
  for (const posting of postings) sums.set(posting.currency, (sums.get(posting.currency) ?? 0n) + posting.amount_units);
  return sums;
}

/** The balance changes of postings, one per account (posted only); asserts they sum to zero per currency. */
export function postingChanges(postings: readonly NewPosting[]): BalanceChange[] {
  for (const [currency, sum_units] of sumsByCurrency(postings)) {
    assert(sum_units === 0n, `postings to write sum to ${sum_units} ${currency} units, not 0`);
  }
  const byAccount = new Map<string, bigint>();
  for (const posting of postings) byAccount.set(posting.account_id, (byAccount.get(posting.account_id) ?? 0n) + posting.amount_units);
  return [...byAccount].map(([account_id, posted_units]) => ({ account_id, posted_units, held_units: 0n }));
}

/**
 * Each posting with its account's posted balance right after it: the locked balance plus the account's postings up
 * to it. The postcondition (`assertBalancesAfter`) proves each account's last one is what the update left.
 */
export function recordBalances(postings: readonly NewPosting[], locked: ReadonlyMap<string, Balances>): RecordedPosting[] {
  const running = new Map<string, bigint>();
  return postings.map((posting) => {
    const before_units = running.get(posting.account_id) ?? locked.get(posting.account_id)?.posted_units;
    assert(before_units !== undefined, `account ${posting.account_id} posted to without its lock`);
    running.set(posting.account_id, before_units + posting.amount_units);
    return { ...posting, balance_after_units: before_units + posting.amount_units };
  });
}

/**
 * Asserts what a write's balance update did: it touched exactly the accounts of `plan.changes`, each locked, and
 * left each at its locked balance plus its change, an account that may not go negative not below zero, and the
 * balance each account's last posting records after it.
 */
export function assertBalancesAfter(plan: Plan, balances: readonly Balances[]): void {
  assert(balances.length === plan.changes.length, `balance update touched ${balances.length} accounts, the write changes ${plan.changes.length}`);
  const after = new Map(balances.map((row) => [row.id, row]));
  for (const change of plan.changes) {
    const locked = plan.locked.get(change.account_id);
    const row = after.get(change.account_id);
    assert(locked, `account ${change.account_id} changed without its lock`);
    assert(row, `account ${change.account_id} was not updated`);
    assert(
      row.posted_units === locked.posted_units + change.posted_units && row.held_units === locked.held_units + change.held_units,
      `account ${row.id} holds ${row.posted_units} posted and ${row.held_units} held units, not its locked balances plus the change`,
    );
    assert(row.allows_negative || row.posted_units - row.held_units >= 0n, `account ${row.id} that may not go negative is below zero`);
  }
  const lastRecorded = new Map((plan.recorded ?? []).map((posting) => [posting.account_id, posting.balance_after_units]));
  for (const [account_id, recorded_units] of lastRecorded) {
    const left_units = after.get(account_id)?.posted_units;
    assert(left_units === recorded_units, `account ${account_id}'s last posting records ${recorded_units} units after it, the update left ${left_units}`);
  }
}

/** The key a write claims, with the fingerprint of its request (`request` names stay: stored fingerprints use them). */
export function claimOf(operation: Operation, idempotency_key: string, request: Record<string, unknown>): KeyClaim {
  return { idempotency_key, operation, request_fingerprint: fingerprint(operation, request) };
}

/** JSON with sorted object keys and bigints as strings: the basis of request fingerprints. */
function canonicalJson(value: unknown): string {
  if (typeof value === 'bigint') return JSON.stringify(value.toString());
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
}

function fingerprint(operation: Operation, request: unknown): string {
  return createHash('sha256').update(`${operation}\n${canonicalJson(request)}`).digest('hex');
}
