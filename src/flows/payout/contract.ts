/**
 * The payout flow's contract (docs/payouts.md): what the PayoutWorkflow, its activities, the payout service and the
 * Area B façade share. Imports nothing but `@temporalio/workflow` and the money-out kernel's contract, so the workflow
 * bundle can use it.
 *
 * Lifetime: the service checks the address's format, the merchant's limits and its wallet and, in one database
 * transaction, records the payout (`held`, or `awaiting_approval` above the merchant's approval threshold), places its
 * holds on the merchant's wallet (`<ref>:hold` towards settlement, `<ref>:hold-fee` the payout fee towards
 * fee_revenue) and writes `payout.created` (and `payout.pending_approval`); after the commit it starts the
 * PayoutWorkflow (id = the payout reference). A payout awaiting approval waits for an approval record (an operator's
 * `payments admin payouts approve|reject`), hinted by `approvalSignal`, or is voided after
 * PAYOUT_APPROVAL_TIMEOUT_SECONDS. Then the money-out saga (src/flows/money-out/contract.ts, docs/money-out.md): the
 * provider is asked under the payout's key, its answer or its signed notification decides: succeeded posts both holds
 * (`<ref>:post`, `<ref>:post-fee`), failed voids them.
 */
import { defineSignal, type SignalDefinition } from '@temporalio/workflow';
import { decidedSignal as moneyOutDecidedSignal, moneyOutLedgerKey, moneyOutProviderKey, type MoneyOutLedgerStep, type MoneyOutResult, type MoneyOutStep } from '../money-out/contract';

/** Every reason the payout service, the PayoutWorkflow and its activities fail with, and its kind. */
export const PAYOUT_REASONS = {
  /** The merchant's wallet has less available than the payout and its fee: nothing held. */
  PAYOUT_INSUFFICIENT_BALANCE: 'failed_precondition',
  /** The amount is below the merchant's minimum payout: nothing held. */
  PAYOUT_BELOW_MINIMUM: 'failed_precondition',
  /** The amount is above the merchant's per-payout limit: nothing held. */
  PAYOUT_ABOVE_LIMIT: 'failed_precondition',
  /** The payout would take the merchant's payouts of the day (UTC) above its daily limit: nothing held. */
  PAYOUT_DAILY_LIMIT_EXCEEDED: 'failed_precondition',
  /** No payout of the caller has this reference (or out_trade_no). */
  PAYOUT_NOT_FOUND: 'not_found',
  /** The merchant's out_trade_no names another payout already. */
  PAYOUT_OUT_TRADE_NO_TAKEN: 'already_exists',
  /** No upstream payout provider is configured. */
  PAYOUT_PROVIDER_NOT_CONFIGURED: 'failed_precondition',
  /** The fee schedule has no `fee_payout` for the payout's channel. */
  PAYOUT_FEE_NOT_CONFIGURED: 'failed_precondition',
  /** A decision message with no recorded, signed provider notification of that payout: it decides nothing. */
  PAYOUT_DECISION_NOT_AUTHORIZED: 'failed_precondition',
  /** An approval message with no recorded approval or rejection of that payout: it decides nothing. */
  PAYOUT_APPROVAL_NOT_AUTHORIZED: 'failed_precondition',
  /** An approval or rejection of a payout that is not awaiting approval (decided already, or never needed one). */
  PAYOUT_NOT_AWAITING_APPROVAL: 'failed_precondition',
  /** A signed payout notification whose amount is not the payout's. */
  PAYOUT_NOTIFICATION_MISMATCH: 'failed_precondition',
} as const;
export type PayoutReason = keyof typeof PAYOUT_REASONS;

/**
 * A payout's states: `awaiting_approval` (above the threshold: held, waiting for an operator), `held` (the amount
 * and fee held on the wallet, the provider not asked yet or not answered), `requested` (the provider answered
 * pending), `succeeded` (holds posted: the money left), `failed` (holds voided: nothing left the wallet).
 */
export type PayoutStatus = 'awaiting_approval' | 'held' | 'requested' | 'succeeded' | 'failed';

/** The events of a payout (subject: the payout reference). */
export type PayoutEvent = 'payout.created' | 'payout.pending_approval' | 'payout.succeeded' | 'payout.failed';

/** The failure reason of a payout rejected by an operator. */
export const PAYOUT_REJECTED_REASON = 'rejected by an operator';
/** The failure reason of a payout not approved within PAYOUT_APPROVAL_TIMEOUT_SECONDS. */
export const PAYOUT_APPROVAL_TIMED_OUT = 'approval_timed_out';

export interface PayoutWorkflowInput {
  payout_reference: string;
  /** PAYOUT_DECISION_TIMEOUT_SECONDS: how long a requested payout waits for a notification before asking again. */
  decision_timeout_seconds: number;
  /** PAYOUT_APPROVAL_TIMEOUT_SECONDS: how long a payout awaiting approval waits before it is voided. */
  approval_timeout_seconds: number;
  /** The payout was recorded `awaiting_approval`: the run waits for its approval before the saga. */
  awaiting_approval: boolean;
}

export type PayoutWorkflowResult = MoneyOutResult<PayoutStatus>;

/** What an activity left the payout as: its status and the webhook of the event it recorded, if any. */
export type PayoutStep = MoneyOutStep<PayoutStatus>;

/** The decision hint a payout's run takes: the provider's notification status. */
export interface PayoutDecisionHint {
  status: 'payout_succeeded' | 'payout_failed';
}

/** Whether a `decided` message is a payout's hint (any other is logged and dropped). */
export function isPayoutDecisionHint(message: unknown): message is PayoutDecisionHint {
  const status = (message as { status?: unknown } | undefined)?.status;
  return status === 'payout_succeeded' || status === 'payout_failed';
}

/** The saga's `decided` hint, typed for a payout. Not authority: the activity re-reads the recorded notification. */
export const decidedSignal = moneyOutDecidedSignal as SignalDefinition<[PayoutDecisionHint], 'decided'>;

/**
 * The hint sent after an approval or rejection was recorded (`payout_approvals`): the run re-reads the record
 * (`applyPayoutApproval`). A signal without a record changes nothing.
 */
export const approvalSignal = defineSignal<[{ decision: 'approve' | 'reject' }]>('approval');

/** The ledger key of one step of a payout: `<ref>:hold|post|void`, the fee leg's `<ref>:hold-fee|post-fee|void-fee`. */
export function payoutLedgerKey(payout_reference: string, step: MoneyOutLedgerStep, leg?: 'fee'): string {
  return moneyOutLedgerKey(payout_reference, step, leg);
}

/** The key the provider is asked under: the payout reference (one payout, whatever the retries). */
export function payoutProviderKey(payout_reference: string): string {
  return moneyOutProviderKey(payout_reference);
}

/** The PayoutWorkflow's activities (src/flows/payout/activities.ts). */
export interface PayoutActivities {
  /**
   * The saga's `request` (docs/money-out.md). @throws Error retryably when the provider gave no outcome;
   * ApplicationFailure PAYOUT_APPROVAL_NOT_AUTHORIZED (non-retryable) on a payout awaiting approval
   */
  requestPayout(input: { payout_reference: string }): Promise<PayoutStep>;
  /**
   * The saga's `applyDecision`. @throws ApplicationFailure PAYOUT_DECISION_NOT_AUTHORIZED (non-retryable) when none is
   * recorded, PAYOUT_APPROVAL_NOT_AUTHORIZED (non-retryable) on a payout awaiting approval
   */
  applyPayoutDecision(input: { payout_reference: string }): Promise<PayoutStep>;
  /**
   * Applies the approval record of a payout awaiting approval: approved moves it to `held`; rejected fails it,
   * voiding its holds, with `payout.failed`. A payout no longer awaiting answers its status.
   * @throws ApplicationFailure PAYOUT_APPROVAL_NOT_AUTHORIZED (non-retryable) when nothing is recorded
   */
  applyPayoutApproval(input: { payout_reference: string }): Promise<PayoutStep>;
  /**
   * Fails a payout still awaiting approval past its timeout (`approval_timed_out`), voiding its holds, unless an
   * approval record raced the timer (then that record is applied).
   */
  expirePayoutApproval(input: { payout_reference: string }): Promise<PayoutStep>;
}

/** A merchant's scheduled payout run: which merchant, and when the schedule fired (epoch ms, the run's start). */
export interface ScheduledPayoutInput {
  merchant_id: string;
}

/** What a scheduled run did: paid (a payout, new or the period's first), or skipped (below the minimum, no schedule). */
export type ScheduledPayoutResult = { outcome: 'paid'; payout_reference: string } | { outcome: 'skipped'; reason: string };

/** The scheduled payout's activity (src/flows/payout/schedules.ts). */
export interface PayoutScheduleActivities {
  /**
   * Pays the merchant's available balance less its reserve and the fee to its saved address, under the idempotency
   * key of the schedule's period (`schedule:<period>`): a schedule that fires twice in one period pays once.
   * @param fired_at_ms when the schedule fired (the run's start, epoch ms): its period is the UTC day or ISO week
   */
  runScheduledPayout(input: ScheduledPayoutInput & { fired_at_ms: number }): Promise<ScheduledPayoutResult>;
}
