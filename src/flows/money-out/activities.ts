/**
 * The money-out saga's activities over a flow's port (docs/money-out.md): the holds placed, the provider asked under
 * the saga's key, and the decision — succeeded posts every hold, failed voids them, with the flow's decision record,
 * event and webhook in the same transaction, exactly once (the record's row lock, its status and the ledger keys) —
 * then the webhook delivered after the commit. A decision is taken only from the provider's own answer or from the
 * decision the authenticated path recorded (`MoneyOutPort.recordedDecision`), never from a workflow message.
 *
 * Each flow brings its port (its record's SQL, its legs and keys, its provider, its announcements) and maps the
 * steps onto its own activity names; the ledger is reached through its public operations only.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from '../../db/knex';
import type { AccountAddress, LedgerJoin, PendingTransfer, PlatformAccountName } from '../../ledger/types';
import type { PlatformDeps } from '../../platform-deps';
import { deliverWebhooks } from '../../webhooks';
import { isMoneyOutEnd, type MoneyOutAnswer, type MoneyOutDecision, type MoneyOutStage, type MoneyOutStep } from './contract';

/** One leg's hold: an amount moved from `debit_account_id` to `credit_account_id` as a ledger pending transfer. Minor units. */
export interface MoneyOutHold {
  /** `moneyOutLedgerKey(prefix, 'hold', leg)`. */
  idempotency_key: string;
  /** Each account by id, or by address for the ledger to resolve (`debit_account`, `credit_account`). */
  debit_account_id?: string;
  debit_account?: AccountAddress;
  credit_account_id?: string;
  credit_account?: AccountAddress | PlatformAccountName;
  amount_units: bigint;
  description: string;
  metadata: Record<string, unknown>;
  /** The pending transfer's id when the caller chose it beforehand (recorded in its row before the hold). */
  id?: string;
}

/** One leg as it settles: its pending transfer (null: the leg has no hold) and the keys its post and void take. */
export interface MoneyOutLeg {
  pending_transfer_id: string | null;
  post_key: string;
  void_key: string;
}

/**
 * What a flow gives the kernel about one of its records (`R`, its row), the flow's status words (`S`).
 * Every method that takes `trx` runs inside the kernel's transaction, on the record's row lock.
 */
export interface MoneyOutPort<R, S extends string> {
  /** An ApplicationFailure (non-retryable) for a record that does not exist. */
  notFound(reference: string): ApplicationFailure;
  /** An ApplicationFailure (non-retryable) for a hint with no recorded decision: the run ignores it. */
  notAuthorized(reference: string): ApplicationFailure;
  read(db: Knex, reference: string): Promise<R | undefined>;
  /**
   * Optional: an ApplicationFailure for a record the saga's steps must not act on yet (a payout awaiting its
   * approval), checked on the record the request reads and on the locked record a decision holds first; undefined lets
   * them go on.
   */
  refuse?(record: R): ApplicationFailure | undefined;
  /** The record, its row locked for the rest of `trx`. */
  lock(trx: Knex.Transaction, reference: string): Promise<R | undefined>;
  stage(record: R): MoneyOutStage;
  /** The flow's status word of the record. */
  status(record: R): S;
  /** The webhook a decided record's decision recorded (answered again by a retried or restarted step), or null. */
  webhookOf(record: R): string | null;
  /** Whether the record has its holds (a record recorded without them gets them before the provider is asked). */
  held(record: R): boolean;
  /** Places the record's holds and records their ids (on its row lock). */
  placeHolds(trx: Knex.Transaction, record: R): Promise<void>;
  /** The record's legs, the main one first. @throws Error when a leg the record must have has no hold (a fault) */
  legs(record: R): MoneyOutLeg[];
  /**
   * Asks the provider under `moneyOutProviderKey(reference)`. An error with `retryable: false` is a refusal for good
   * (nothing was sent: the record fails); any other error gave no outcome and is retried under the same key.
   */
  ask(record: R): Promise<MoneyOutAnswer>;
  /** Marks a held record `requested` (the provider answered pending). @returns its status word now */
  markRequested(trx: Knex.Transaction, record: R): Promise<S>;
  /** The decision the authenticated path recorded (a signed notification), or undefined. */
  recordedDecision(db: Knex, reference: string): Promise<MoneyOutDecision | undefined>;
  /**
   * Records the decision, after its holds were posted or voided (`ledger_transaction_id`: the main leg's, else the
   * first leg's): the row, its event and its webhook, in `trx`. @returns the record as decided and its webhook id
   */
  decided(trx: Knex.Transaction, record: R, decision: MoneyOutDecision, ledger_transaction_id: string | null): Promise<MoneyOutStep<S>>;
  /** Whether the steps deliver the decision's webhook themselves (after the commit); else the workflow does. */
  deliversWebhooks: boolean;
}

/**
 * Places holds as ledger pending transfers in `trx` (a leg of 0 units is skipped: null).
 * @param join how the holds join `trx` (types.ts LedgerJoin): `direct` only for a caller whose transaction rolls back
 *   on any error of this call
 * @returns each hold's pending transfer id, in order
 * @throws DomainError INSUFFICIENT_FUNDS when a debited account has less available (the caller maps it to its reason)
 */
export async function placeMoneyOutHolds(deps: Pick<PlatformDeps, 'ledger'>, trx: Knex.Transaction, holds: MoneyOutHold[], join: LedgerJoin = 'savepoint'): Promise<Array<string | null>> {
  const ids: Array<string | null> = [];
  for (const hold of holds) {
    if (hold.amount_units <= 0n) {
      ids.push(null);
      continue;
    }
    const pending = await deps.ledger.createPendingTransfer(hold, trx, join);
    ids.push(pending.id);
  }
  return ids;
}

/**
 * Posts (or voids) every leg's hold, each under its own key. `direct`: any error rolls the decision's whole
 * transaction back, and the statements fewer are taken while the source account is locked.
 * @returns the main leg's settlement transaction id, else the first settled leg's (null without any hold)
 */
async function settleLegs(deps: Pick<PlatformDeps, 'ledger'>, trx: Knex.Transaction, legs: MoneyOutLeg[], step: 'post' | 'void'): Promise<string | null> {
  let transaction_id: string | null = null;
  for (const leg of legs) {
    if (!leg.pending_transfer_id) continue;
    const transfer = { pending_transfer_id: leg.pending_transfer_id, idempotency_key: step === 'post' ? leg.post_key : leg.void_key };
    const settled: PendingTransfer =
      step === 'post' ? await deps.ledger.postPendingTransfer(transfer, trx, 'direct') : await deps.ledger.voidPendingTransfer(transfer, trx, 'direct');
    transaction_id ??= settled.posted_transaction_id;
  }
  return transaction_id;
}

/** The saga's steps over a flow's port: what the flow's activities call. */
export interface MoneyOutSteps<S extends string> {
  request(reference: string): Promise<MoneyOutStep<S>>;
  applyDecision(reference: string): Promise<MoneyOutStep<S>>;
  /** Delivers webhooks a decision recorded (for a flow whose workflow delivers them: `deliversWebhooks` false). */
  deliver(webhook_ids: string[]): Promise<void>;
}

/**
 * The saga's steps for one flow.
 * @param deps the ledger (public operations), the database, the logger, and what the webhooks' delivery uses
 */
export function createMoneyOutSteps<R, S extends string>(deps: PlatformDeps, port: MoneyOutPort<R, S>): MoneyOutSteps<S> {
  const read = async (reference: string): Promise<R> => {
    const record = await port.read(deps.database, reference);
    if (record === undefined) throw port.notFound(reference);
    return record;
  };

  const locked = async (trx: Knex.Transaction, reference: string): Promise<R> => {
    const record = await port.lock(trx, reference);
    if (record === undefined) throw port.notFound(reference);
    return record;
  };

  /**
   * Ends the record with `decision`: posts (succeeded) or voids (failed) its holds, records the decision, its event
   * and webhook, in one transaction. A record already decided the same way answers its webhook again; decided the
   * other way (a provider contradicting itself) keeps its first decision and records nothing.
   */
  const decide = (reference: string, decision: MoneyOutDecision): Promise<MoneyOutStep<S>> =>
    deps.database.transaction(async (trx) => {
      const record = await locked(trx, reference);
      const stage = port.stage(record);
      if (isMoneyOutEnd(stage)) {
        if (stage !== decision.status) deps.logger.error({ reference, kept: stage }, 'money-out decided twice, differently; the first decision stands');
        return { status: port.status(record), webhook_id: stage === decision.status ? port.webhookOf(record) : null };
      }
      const ledger_transaction_id = await settleLegs(deps, trx, port.legs(record), decision.status === 'succeeded' ? 'post' : 'void');
      return port.decided(trx, record, decision, ledger_transaction_id);
    });

  /** Delivers the webhook a step recorded, after its commit (first attempt inline, else its delivery workflow). */
  const announce = async (step: MoneyOutStep<S>): Promise<MoneyOutStep<S>> => {
    if (port.deliversWebhooks && step.webhook_id) await deliverWebhooks(deps, [step.webhook_id]);
    return step;
  };

  /** Places the record's holds unless it has them (or is decided); in a transaction of its own, on its lock. */
  const hold = (reference: string): Promise<void> =>
    deps.database.transaction(async (trx) => {
      const record = await locked(trx, reference);
      const refusal = port.refuse?.(record);
      if (refusal) throw refusal;
      if (!port.held(record) && !isMoneyOutEnd(port.stage(record))) await port.placeHolds(trx, record);
    });

  const markRequested = (reference: string): Promise<MoneyOutStep<S>> =>
    deps.database.transaction(async (trx) => {
      const record = await locked(trx, reference);
      return { status: port.stage(record) === 'held' ? await port.markRequested(trx, record) : port.status(record), webhook_id: null };
    });

  return {
    async request(reference) {
      const record = await read(reference);
      const refusal = port.refuse?.(record);
      if (refusal) throw refusal;
      // Decided (a restarted run, or a retry after the decision committed): its webhook, recorded with the decision.
      if (isMoneyOutEnd(port.stage(record))) return announce({ status: port.status(record), webhook_id: port.webhookOf(record) });
      // The holds before the provider is asked: the service placed them with the record; one without gets them now.
      if (!port.held(record)) await hold(reference);
      let answer: MoneyOutAnswer;
      try {
        answer = await port.ask(record);
      } catch (error) {
        // Refused for good (a 4xx that is not "not now"): nothing was sent, the holds are released.
        if ((error as { retryable?: unknown }).retryable === false) return announce(await decide(reference, { status: 'failed', failure_reason: 'refused by the provider' }));
        throw error;
      }
      if (answer.status === 'pending') return markRequested(reference);
      return announce(await decide(reference, answer));
    },

    async applyDecision(reference) {
      const decision = await port.recordedDecision(deps.database, reference);
      if (!decision) throw port.notAuthorized(reference);
      // A decision that came before the run's first request (a record recorded without its holds): held first.
      await hold(reference);
      return announce(await decide(reference, decision));
    },

    deliver: (webhook_ids) => deliverWebhooks(deps, webhook_ids),
  };
}
