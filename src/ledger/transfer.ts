/**
 * Ledger.transfer: a balanced set of postings posted atomically, each posting recording its account's posted
 * balance after it. The contract and its errors are in types.ts; the lock/replay steps in kernel.ts.
 */
import { randomUUID } from 'node:crypto';
import { assert } from '../errors';
import { platformAccount } from './accounts';
import { assertBalancesAfter, claimOf, lockAccounts, mapOutcome, postingChanges, recordBalances, resultOf, runWrite, sumsByCurrency, type Plan, type WriteTarget } from './kernel';
import { insufficientFunds, unbalancedPostings } from './refusals';
import { DECLINED_STATEMENT, type KeyClaim, type LedgerStore, type LockedBalances, type NewPosting, type RecordedPosting } from './store';
import type { Ledger, LedgerAlso, LedgerTransaction, PlatformPosting, Posting } from './types';
import {
  accountIdOf,
  amountUnitsOf,
  isUuid,
  namesPlatformAccount,
  platformPostingOf,
  validateDescription,
  validateKey,
  validateMetadata,
  validatePostingCount,
} from './validate';

type TransferInput = Parameters<Ledger['transfer']>[0];

/** A transfer's input once checked, its postings still naming platform accounts where the caller named them. */
interface CheckedTransfer {
  idempotency_key: string;
  description: string;
  metadata: Record<string, unknown>;
  postings: Array<Posting | PlatformPosting>;
}

/** A transfer's input once checked (before any lock), with the key it claims. */
interface TransferRequest {
  claim: KeyClaim;
  description: string;
  metadata: Record<string, unknown>;
  postings: Posting[];
}

interface TransferPlan extends Plan {
  postings: NewPosting[];
  recorded: RecordedPosting[];
}

/**
 * Checks every field of a transfer's input in one order (key, description, metadata, posting count, then each
 * posting's amount and account); account ids compare in lower case.
 */
function checkTransfer(input: TransferInput): CheckedTransfer {
  const idempotency_key = validateKey(input.idempotency_key);
  const description = validateDescription(input.description);
  const metadata = validateMetadata(input.metadata);
  validatePostingCount(input.postings);
  const postings = input.postings.map((posting, index): Posting | PlatformPosting => {
    const amount_units = amountUnitsOf(`postings[${index}].amount_units`, posting.amount_units, 'non_zero');
    if (namesPlatformAccount(posting)) return { ...platformPostingOf(index, posting), amount_units };
    return { account_id: accountIdOf(posting.account_id), amount_units };
  });
  return { idempotency_key, description, metadata, postings };
}

/** A checked transfer whose postings all name account ids, with the key claim its fingerprint makes. */
function fingerprinted(checked: CheckedTransfer): TransferRequest {
  const { idempotency_key, description, metadata } = checked;
  const postings = checked.postings.map((posting) => {
    assert(!namesPlatformAccount(posting), 'a platform posting reached the fingerprint unresolved');
    return posting;
  });
  return { claim: claimOf('transfer', idempotency_key, { description, postings, metadata }), description, metadata, postings };
}

/** Checks a transfer's input whose postings all name account ids, and fingerprints it. */
export function transferRequest(input: TransferInput & { postings: Posting[] }): TransferRequest {
  return fingerprinted(checkTransfer(input));
}

/**
 * The checked postings with each platform posting naming its account's id instead, through `store` (the caller's
 * transaction when there is one): found, or opened on first use. Called after the checks, so that input refused
 * before any lock opens no account. `ids`: the ids resolved before, by name (kind and currency), kept by a caller
 * that resolves them often; the ones found here are added.
 */
async function resolvePlatformPostings(store: LedgerStore, checked: Array<Posting | PlatformPosting>, ids = new Map<string, string>()): Promise<Posting[]> {
  const postings: Posting[] = [];
  for (const posting of checked) {
    if (!namesPlatformAccount(posting)) {
      postings.push(posting);
      continue;
    }
    const { platform, currency, amount_units } = posting;
    const named = `${platform} ${currency}`;
    // One at a time: on the caller's transaction they would queue anyway, and without one they hold one pool
    // connection rather than several.
    if (!ids.has(named)) ids.set(named, (await platformAccount(store, platform, currency)).id);
    postings.push({ account_id: ids.get(named)!, amount_units });
  }
  return postings;
}

/**
 * Ledger.transfer (its contract and errors in types.ts): platform postings resolved to account ids, then the request
 * fingerprinted, locked, checked and written by the kernel's `runWrite`.
 */
export async function transfer(
  store: LedgerStore,
  input: TransferInput,
  target: WriteTarget,
  also?: LedgerAlso,
  options: { attempt: boolean } = { attempt: true },
): Promise<LedgerTransaction> {
  assert(!also || (target.trx && target.join === 'direct' && isUuid(also.transaction_id)), 'rows written with a transfer need the caller\'s transaction, joined direct, and a uuid');
  const checked = checkTransfer(input);
  const request = fingerprinted({ ...checked, postings: await resolvePlatformPostings(store.within(target.trx), checked.postings) });
  const { claim, description, metadata } = request;
  return runWrite(store, target, {
    claim,
    prepare: (tx) => prepareTransfer(tx, request),
    write: async (tx, plan) => {
      const transaction = { id: also?.transaction_id ?? randomUUID(), description, metadata, postings: plan.recorded };
      const outcome = await tx.writeTransfer(claim, transaction, plan.changes, also);
      return mapOutcome(outcome, ({ id, created_at }) => ({ id, idempotency_key: claim.idempotency_key, description, postings: plan.postings, metadata, created_at }));
    },
    replay: async (tx, key) => {
      const found = await tx.readTransaction(resultOf(key, 'transaction_id'));
      assert(found, `ledger transaction of key ${key.idempotency_key} vanished`);
      return found;
    },
    // Rows of the caller's (`also`) are written only by `write`; a malformed account id is refused by the steps.
    attempt: also || !options.attempt || !request.postings.every((posting) => isUuid(posting.account_id)) ? undefined : async (tx) => {
      const transaction = { id: randomUUID(), description, metadata };
      const { locked, outcome } = await tx.tryTransfer(claim, transaction, request.postings);
      if (!outcome.claimed) return undefined;
      const plan = planOf(request, new Map(locked.map((account) => [account.id, account])));
      return {
        plan,
        outcome: mapOutcome(outcome, ({ id, created_at }) => ({ id, idempotency_key: claim.idempotency_key, description, postings: plan.postings, metadata, created_at })),
      };
    },
  });
}

/** What `transferAtOnce` writes beside the transfer: the caller's rows (LedgerAlso's) and the transaction's id. */
export type AtOnceRows = Pick<LedgerAlso, 'transaction_id' | 'parts'>;

/** PostgreSQL errors after which a one-statement write wrote nothing and the usual steps decide the answer. */
const DECLINED_CODES = new Set([DECLINED_STATEMENT, '23505', '40P01', '40001']);

/**
 * Ledger.transferAtOnce (its contract in types.ts): the transfer, and the caller's rows `also`, in one statement on
 * the pool, its own implicit transaction: one round trip. Platform postings name their accounts through `platformIds`
 * (the ids it resolved before; platform accounts are never closed), emptied when a statement declines, in case an id
 * it held is gone (a test's reset).
 * @returns the transaction, or undefined when nothing at all was written (the caller then runs `transfer`).
 * @throws as `transfer` for input it refuses before any lock; the database's error when it is not a decline.
 */
export async function transferAtOnce(
  store: LedgerStore,
  platformIds: Map<string, string>,
  input: TransferInput,
  also?: AtOnceRows,
): Promise<LedgerTransaction | undefined> {
  assert(!also || isUuid(also.transaction_id), 'the transaction id a caller names its rows with is a uuid');
  const checked = checkTransfer(input);
  const postings = await resolvePlatformPostings(store, checked.postings, platformIds);
  if (!postings.every((posting) => isUuid(posting.account_id))) return undefined;
  const request = fingerprinted({ ...checked, postings });
  const { claim, description, metadata } = request;
  let tried: Awaited<ReturnType<LedgerStore['tryTransfer']>>;
  try {
    tried = await store.tryTransfer(claim, { id: also?.transaction_id ?? randomUUID(), description, metadata }, request.postings, also?.parts);
  } catch (error) {
    if (!DECLINED_CODES.has((error as { code?: string }).code ?? '')) throw error;
    platformIds.clear();
    return undefined;
  }
  if (!tried.outcome.claimed) {
    platformIds.clear();
    return undefined;
  }
  // Committed already: a broken postcondition is reported (an assertion), not undone.
  const plan = planOf(request, new Map(tried.locked.map((account) => [account.id, account])));
  assert(tried.outcome.result !== undefined, `transfer claimed key ${claim.idempotency_key} but wrote no result`);
  assertBalancesAfter(plan, tried.outcome.balances);
  const { id, created_at } = tried.outcome.result;
  return { id, idempotency_key: claim.idempotency_key, description, postings: plan.postings, metadata, created_at };
}

/** The plan of a transfer the statement accepted: its postings with their currencies, changes and recorded balances. */
function planOf(request: TransferRequest, locked: ReadonlyMap<string, LockedBalances>): TransferPlan {
  const postings = request.postings.map((posting) => {
    const account = locked.get(posting.account_id);
    assert(account, `account ${posting.account_id} posted to without its lock`);
    return { ...posting, currency: account.currency };
  });
  return { locked, changes: postingChanges(postings), postings, recorded: recordBalances(postings, locked) };
}

/** Locks the accounts; refuses postings not summing to zero per currency, or a non-negative account going below zero. */
async function prepareTransfer(store: LedgerStore, request: TransferRequest): Promise<TransferPlan> {
  const locked = await lockAccounts(store, request.postings.map((posting) => posting.account_id));
  const postings = request.postings.map((posting) => ({ ...posting, currency: locked.get(posting.account_id)!.currency }));
  const unbalanced = [...sumsByCurrency(postings)].filter(([, sum_units]) => sum_units !== 0n);
  if (unbalanced.length > 0) {
    const sums = unbalanced.map(([currency, sum_units]) => `${currency} ${sum_units}`).join(', ');
    throw unbalancedPostings(`postings do not sum to zero: ${sums}`, 'must sum to zero per currency');
  }
  const changes = postingChanges(postings);
  for (const change of changes) {
    const account = locked.get(change.account_id)!;
    const available_units = account.posted_units - account.held_units;
    if (change.posted_units < 0n && !account.allows_negative && available_units + change.posted_units < 0n) {
      throw insufficientFunds(account, -change.posted_units);
    }
  }
  return { locked, changes, postings, recorded: recordBalances(postings, locked) };
}

/** A transfer waiting for its group's commit. */
interface Queued {
  input: TransferInput;
  request: TransferRequest;
  resolve(transaction: LedgerTransaction): void;
  reject(error: unknown): void;
}

/**
 * Ledger.transfer with group commit (an option of createLedger, off by default): transfers that arrive together
 * (in the same turn of the event loop, at most `maxBatch`) are written in one database transaction, each still with
 * its own one-statement lock-check-write and postconditions, and each caller is answered only after that commit.
 * The group first locks every account it touches in id order (the one lock order). A transfer the statement does
 * not accept (a refusal, a replay, a conflict, a key repeated in the group) writes nothing there and runs alone after
 * the commit, through `transfer`, so it answers exactly as without grouping and fails no other; should the group's
 * transaction fail, every transfer of it runs alone. Only transfers on the pool qualify (no caller transaction, no
 * caller rows, account ids only); others go through `transfer` at once.
 */
export function groupedTransfer(store: LedgerStore, maxBatch: number): (input: TransferInput) => Promise<LedgerTransaction> {
  const queue: Queued[] = [];
  const flush = () => {
    const group = queue.splice(0, maxBatch);
    if (queue.length > 0) setImmediate(flush);
    void commitGroup(store, group);
  };
  return async (input) => {
    const checked = checkTransfer(input);
    if (checked.postings.some((posting) => namesPlatformAccount(posting) || !isUuid(posting.account_id))) {
      return transfer(store, input, { join: 'savepoint' });
    }
    const request = fingerprinted(checked);
    return new Promise<LedgerTransaction>((resolve, reject) => {
      queue.push({ input, request, resolve, reject });
      if (queue.length === 1) setImmediate(flush);
    });
  };
}

async function commitGroup(store: LedgerStore, group: Queued[]): Promise<void> {
  const written = new Map<Queued, LedgerTransaction>();
  try {
    await store.atomically(undefined, 'savepoint', async (tx) => {
      await tx.lockAccounts([...new Set(group.flatMap((queued) => queued.request.postings.map((posting) => posting.account_id)))].sort());
      for (const queued of group) {
        const { claim, description, metadata } = queued.request;
        const { locked, outcome } = await tx.tryTransfer(claim, { id: randomUUID(), description, metadata }, queued.request.postings);
        if (!outcome.claimed) continue;
        assert(outcome.result !== undefined, `transfer claimed key ${claim.idempotency_key} but wrote no result`);
        const plan = planOf(queued.request, new Map(locked.map((account) => [account.id, account])));
        assertBalancesAfter(plan, outcome.balances);
        const { id, created_at } = outcome.result;
        written.set(queued, { id, idempotency_key: claim.idempotency_key, description, postings: plan.postings, metadata, created_at });
      }
    });
  } catch {
    // Nothing of the group committed: each transfer runs alone below (and fails there if it must).
    written.clear();
  }
  for (const queued of group) {
    const transaction = written.get(queued);
    if (transaction) queued.resolve(transaction);
    else transfer(store, queued.input, { join: 'savepoint' }).then(queued.resolve, queued.reject);
  }
}
