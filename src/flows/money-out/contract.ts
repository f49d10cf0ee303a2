/**
 * The money-out saga's contract (docs/money-out.md): what every flow that sends money out of the platform shares with
 * its workflow and its activities — Area B refunds, Area C deposit refunds, and payouts. Imports nothing but
 * `@temporalio/workflow`, so the workflow bundle, the services and the flows' contracts can all use it.
 *
 * The saga, for one record of a flow (a refund, a deposit refund, a payout), named by its reference (the workflow id):
 *
 *   held ──request──▶ requested ──decision──▶ succeeded (holds posted) | failed (holds voided)
 *     └─────────────────────────────────────▶ succeeded | failed      (the provider answers at once)
 *
 * 1. The flow's service validates the request and, in one transaction, records it `held` with its holds (ledger
 *    pending transfers from the source account, `<prefix>:hold`, one per leg), and its `…created` event; after the
 *    commit it starts its workflow by reference (id = the reference).
 * 2. The workflow runs `runMoneyOutSaga` (below) over the flow's activities: `request` asks the provider under the
 *    saga's own idempotency key (`moneyOutProviderKey`) and applies its answer; `pending` leaves it `requested`.
 * 3. A `requested` record waits for its decision. The outcome is taken only from a record the authenticated path
 *    wrote (the provider's answer, or its signed notification recorded by the upstream's door): a `decided` signal is
 *    a hint to re-read that record (`applyDecision`), never authority. Without a hint the provider is asked again
 *    after the decision timeout, under the same key, the wait doubling up to MAX_ASK_INTERVAL_SECONDS.
 * 4. The deciding activity posts (succeeded) or voids (failed) every hold under `<prefix>:post` / `<prefix>:void`,
 *    writes the decision, its event and its signed webhook in the same transaction, exactly once (the record's row
 *    lock, its status and the ledger keys), then delivers the webhook after the commit.
 *
 * Extension points (docs/money-out.md "Building on the kernel"): the flow's port (src/flows/money-out/activities.ts
 * `MoneyOutPort`: its record, legs, provider and announcements), its keys (`moneyOutLedgerKey` under its own prefix),
 * its fee legs, and the approval step a payout above its merchant's threshold waits in (documented there).
 */
import { ActivityFailure, ApplicationFailure, condition, defineSignal, log, setHandler } from '@temporalio/workflow';

/**
 * The saga's stages, whatever words a flow's record uses for them (a refund's `pending` is `requested`):
 * `held` (recorded, the amount held on the source account, the provider not asked or not answered yet), `requested`
 * (the provider took it and decides later), `succeeded` (holds posted: the money left), `failed` (holds voided:
 * nothing left). A payout's approval adds `awaiting_approval` before `held`'s request (docs/money-out.md "Approval").
 */
export type MoneyOutStage = 'held' | 'requested' | 'succeeded' | 'failed';

/** The two ends of the saga. */
export type MoneyOutEnd = 'succeeded' | 'failed';

/** True for a stage (or a flow's status word) that ends the saga. */
export function isMoneyOutEnd(status: string): status is MoneyOutEnd {
  return status === 'succeeded' || status === 'failed';
}

/** What an activity left the record as: its status (the flow's word) and the webhook its decision recorded, if any. */
export interface MoneyOutStep<S extends string = string> {
  status: S;
  webhook_id: string | null;
}

/** What the saga's run ends with: the decision and every webhook it recorded. */
export interface MoneyOutResult<S extends string = string> {
  status: S;
  webhook_ids: string[];
}

/**
 * A decision as the provider gave it (its answer, or its signed notification as recorded): succeeded with the
 * provider's reference of the money sent (null when it gives none: a card reversal), or failed with its reason
 * (bounded, no control characters).
 */
export type MoneyOutDecision = { status: 'succeeded'; provider_reference: string | null } | { status: 'failed'; failure_reason: string };

/** The provider's answer to a request: a decision, or `pending` (decided later). */
export type MoneyOutAnswer = MoneyOutDecision | { status: 'pending' };

/** The provider's decision arrived and was recorded (sent by the flow after the authenticated path recorded it). A hint only. */
export interface MoneyOutHint {
  status: string;
}

/**
 * The hint a flow sends its run after recording a signed decision: the run re-reads the record (`applyDecision`). Any
 * payload is checked by the flow's `isHint` before it counts; none is authority.
 */
export const decidedSignal = defineSignal<[MoneyOutHint]>('decided');

/** The legs' steps: a hold, and its post or void. */
export type MoneyOutLedgerStep = 'hold' | 'post' | 'void';

/**
 * The ledger idempotency key of one step of one leg: `<prefix>:<step>` for the main leg (the amount on the source
 * account), `<prefix>:<step>-<leg>` for another (`fee`: a refund's fee share on fee_revenue; `commission`: a
 * preorder's commission). The prefix is the flow's, under its business key (docs/architecture.md "One business key":
 * `RFD-…`, `DEP…:refund:DRF…`), so the ledger's `transactionsByKey` finds every leg.
 */
export function moneyOutLedgerKey(prefix: string, step: MoneyOutLedgerStep, leg?: string): string {
  return leg ? `${prefix}:${step}-${leg}` : `${prefix}:${step}`;
}

/** The key the provider is asked under: the record's reference (one request, whatever the retries). */
export function moneyOutProviderKey(reference: string): string {
  return reference;
}

/**
 * The saga's activities, as every money-out flow's workflow proxies them under its own names (the refund's
 * `requestRefund` / `applyRefundDecision`, the deposit refund's `settleDepositRefund`). Built by
 * `createMoneyOutSteps` (src/flows/money-out/activities.ts) over the flow's port.
 */
export interface MoneyOutActivities<S extends string = string> {
  /**
   * Asks the provider under the saga's key and applies its answer: succeeded posts the holds, failed (or a refusal
   * for good) voids them, each with its event and webhook, then delivers the webhook; pending marks the record
   * `requested`. A record without its holds gets them first; a decided one answers its decision again.
   * @throws Error retryably when the provider gave no outcome (the activity's retry policy backs off)
   */
  request(reference: string): Promise<MoneyOutStep<S>>;
  /**
   * Applies the decision the authenticated path recorded (the decision's only authority), then delivers its webhook.
   * @throws ApplicationFailure (non-retryable, the flow's "not authorized" reason) when none is recorded
   */
  applyDecision(reference: string): Promise<MoneyOutStep<S>>;
}

/** Longest wait between two questions to the provider about an undecided record, seconds. */
export const MAX_ASK_INTERVAL_SECONDS = 6 * 3600;

/** How long an undecided record waits before asking again when its flow names no decision timeout, seconds. */
export const DEFAULT_DECISION_TIMEOUT_SECONDS = 60;

/** One run of the saga: the flow's proxied activities and its decision hint. */
export interface MoneyOutSagaSteps<S extends string> {
  reference: string;
  /** The flow's `request` activity. */
  request(): Promise<MoneyOutStep<S>>;
  /** The flow's `applyDecision` activity; absent: its provider always answers at once (or fails retryably). */
  applyDecision?(): Promise<MoneyOutStep<S>>;
  /** Whether a `decided` message is well-formed for this flow (a malformed one is logged and dropped). */
  isHint?(message: unknown): boolean;
  /** How long a `requested` record waits for a hint before asking again, seconds (DEFAULT_DECISION_TIMEOUT_SECONDS). */
  decision_timeout_seconds?: number;
}

interface SagaRun<S extends string> {
  readonly steps: MoneyOutSagaSteps<S>;
  status: S | 'held';
  /** Decision hints received and not yet looked at. */
  hints: number;
  readonly webhook_ids: string[];
}

function take<S extends string>(run: SagaRun<S>, step: MoneyOutStep<S>): void {
  run.status = step.status;
  if (step.webhook_id && !run.webhook_ids.includes(step.webhook_id)) run.webhook_ids.push(step.webhook_id);
}

/** True when the activity refused for good (a hint with no recorded decision behind it). */
function refused(error: unknown): boolean {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure && cause.nonRetryable === true;
}

/** Applies the recorded decision a hint points at; a hint without a record changes nothing. */
async function applyHint<S extends string>(run: SagaRun<S>): Promise<void> {
  run.hints = 0;
  if (!run.steps.applyDecision) return;
  try {
    take(run, await run.steps.applyDecision());
  } catch (error) {
    if (!refused(error)) throw error;
    log.warn('money-out decision hint without a recorded decision ignored', { reference: run.steps.reference });
  }
}

/**
 * Waits for the decision: a hint (applied from its record), else after each timeout the provider is asked again under
 * the same key (it answers the decision once there is one), the wait doubling up to MAX_ASK_INTERVAL_SECONDS. The
 * record stays held meanwhile (reconciliation reports it once past its due time).
 */
async function awaitDecision<S extends string>(run: SagaRun<S>): Promise<void> {
  const timeout_seconds = run.steps.decision_timeout_seconds ?? DEFAULT_DECISION_TIMEOUT_SECONDS;
  let wait_ms = Math.max(1, Math.round(timeout_seconds * 1000));
  while (!isMoneyOutEnd(run.status)) {
    if (await condition(() => run.hints > 0, wait_ms)) {
      await applyHint(run);
      continue;
    }
    take(run, await run.steps.request());
    wait_ms = Math.min(wait_ms * 2, MAX_ASK_INTERVAL_SECONDS * 1000);
  }
}

/**
 * The saga's workflow body, run by each money-out flow's workflow (deterministic: `@temporalio/workflow` only). A
 * hint that came before the run's first task (or a restarted run) is looked at first; then the provider is asked,
 * then the run waits for the decision. The flow's workflow upserts its search attributes and delivers what its
 * activities do not, after this returns.
 */
export async function runMoneyOutSaga<S extends string>(steps: MoneyOutSagaSteps<S>): Promise<MoneyOutResult<S>> {
  const run: SagaRun<S> = { steps, status: 'held', hints: 0, webhook_ids: [] };
  setHandler(decidedSignal, (message) => {
    if (steps.isHint?.(message) ?? false) run.hints += 1;
    else log.warn('money-out decided signal ignored: malformed', { reference: steps.reference });
  });
  if (run.hints > 0) await applyHint(run);
  if (!isMoneyOutEnd(run.status)) take(run, await steps.request());
  await awaitDecision(run);
  return { status: run.status as S, webhook_ids: run.webhook_ids };
}
