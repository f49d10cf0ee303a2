/**
 * The refund flow's contract (docs/refunds.md): what the RefundWorkflow, its activities, the refund service and the
 * Area B façade share. Imports nothing but `@temporalio/workflow`, so the workflow bundle can use it.
 *
 * Lifetime: the service validates the refundable amount and, in one database transaction, records the refund
 * (`held`), places the hold on the merchant's wallet (ledger pending transfer `<refund reference>:hold`) and writes
 * `refund.created`; after the commit it starts the RefundWorkflow (id = the refund reference). The run asks the
 * provider under the refund's idempotency key; an answer decides it, a `pending` answer waits for the provider's
 * signed notification (the `decided` signal, whose authority the activity re-reads from the notification record) or
 * asks again after REFUND_DECISION_TIMEOUT_SECONDS. Succeeded: the hold is posted (`<ref>:post`); failed: voided
 * (`<ref>:void`); either with its event and webhook in the same transaction. A refund made under the merchant's
 * `refund_fee: returned` holds its share of the payin fee on fee_revenue too (`<ref>:hold-fee`, the wallet holding
 * the rest), posted or voided with the wallet's (`<ref>:post-fee`, `<ref>:void-fee`).
 *
 * A refund is a client of the money-out saga (src/flows/money-out/contract.ts, docs/money-out.md): its `held` and
 * `pending` are the saga's `held` and `requested`; its provider is the upstream's refund request; its fee leg the
 * payin fee's share.
 */
import type { SignalDefinition } from '@temporalio/workflow';
import { decidedSignal as moneyOutDecidedSignal, moneyOutLedgerKey, moneyOutProviderKey, type MoneyOutResult, type MoneyOutStep } from '../money-out/contract';

/** Every reason the refund service, the RefundWorkflow and its activities fail with, and its kind. */
export const REFUND_REASONS = {
  /** No settled payin of the caller with this out_trade_no or invoice_reference. */
  REFUND_PAYIN_NOT_FOUND: 'not_found',
  /** The payin is not settled (nothing was credited): nothing to refund. */
  REFUND_PAYIN_NOT_SETTLED: 'failed_precondition',
  /** The amount asked exceeds what is still refundable (credited less refunds succeeded or held); nothing held. */
  REFUND_AMOUNT_EXCEEDS_REFUNDABLE: 'failed_precondition',
  /** The merchant's wallet has less available than the refund: nothing held. */
  REFUND_INSUFFICIENT_BALANCE: 'failed_precondition',
  /** No refund of the caller has this reference. */
  REFUND_NOT_FOUND: 'not_found',
  /** No upstream refund provider is configured. */
  REFUND_PROVIDER_NOT_CONFIGURED: 'failed_precondition',
  /**
   * A decision message with no recorded, signed provider notification of that refund: a `decided` signal sent
   * straight to Temporal decides nothing.
   */
  REFUND_DECISION_NOT_AUTHORIZED: 'failed_precondition',
  /** A signed refund notification whose amount is not the refund's. */
  REFUND_NOTIFICATION_MISMATCH: 'failed_precondition',
} as const;
export type RefundReason = keyof typeof REFUND_REASONS;

/**
 * A refund's states: `held` (recorded, money held on the merchant's wallet, the provider not asked yet or not
 * answered), `pending` (the provider answered pending: decided later), `succeeded` (hold posted: the money left),
 * `failed` (hold voided: nothing left the wallet).
 */
export type RefundStatus = 'held' | 'pending' | 'succeeded' | 'failed';

/** The events of a refund (subject: the payment's invoice_reference; the refund reference in their data). */
export type RefundEvent = 'refund.created' | 'refund.succeeded' | 'refund.failed';

export interface RefundWorkflowInput {
  refund_reference: string;
  /** REFUND_DECISION_TIMEOUT_SECONDS: how long a pending refund waits for a notification before asking again. */
  decision_timeout_seconds: number;
}

export type RefundWorkflowResult = MoneyOutResult<RefundStatus>;

/** What an activity left the refund as: its status and the webhook of the event it recorded, if any. */
export type RefundStep = MoneyOutStep<RefundStatus>;

/** The decision hint a refund's run takes: the provider's notification status. */
export interface RefundDecisionHint {
  status: 'refund_succeeded' | 'refund_failed';
}

/** Whether a `decided` message is a refund's hint (any other is logged and dropped). */
export function isRefundDecisionHint(message: unknown): message is RefundDecisionHint {
  const status = (message as { status?: unknown } | undefined)?.status;
  return status === 'refund_succeeded' || status === 'refund_failed';
}

/**
 * The provider notified a decision (sent by the refund flow after recording the signed notification): the saga's
 * `decided` hint. Not authority: the activity decides from the recorded notification, never from this message.
 */
export const decidedSignal = moneyOutDecidedSignal as SignalDefinition<[RefundDecisionHint], 'decided'>;

/**
 * The ledger idempotency key of one step of a refund (`<reference>:hold|post|void`, docs/architecture.md); a refund
 * that returns the payin fee's share holds, posts or voids it under `<reference>:hold-fee|post-fee|void-fee` (the
 * saga's `fee` leg).
 */
export function refundIdempotencyKey(refund_reference: string, step: 'hold' | 'post' | 'void' | 'hold-fee' | 'post-fee' | 'void-fee'): string {
  const [base, leg] = step.split('-') as ['hold' | 'post' | 'void', 'fee' | undefined];
  return moneyOutLedgerKey(refund_reference, base, leg);
}

/** The idempotency key the provider is asked under: the refund reference (one refund, whatever the retries). */
export function refundProviderKey(refund_reference: string): string {
  return moneyOutProviderKey(refund_reference);
}

/**
 * The RefundWorkflow's activities (src/flows/refund/activities.ts). Each that decides the refund delivers the
 * decision's webhook after its commit, in the same activity (its first attempt inline, else its delivery workflow).
 */
export interface RefundActivities {
  /**
   * Asks the provider under the refund's key and applies its answer: succeeded posts the hold, failed (or a
   * refusal for good) voids it, each with its event and webhook, then delivers the webhook; pending marks the refund
   * pending. A refund recorded without its hold gets it first, committed before the provider is asked; a refund
   * already decided answers its decision (and hands its webhook over again). @returns the refund's status and webhook
   * @throws Error retryably when the provider gave no outcome (the activity's retry policy backs off)
   */
  requestRefund(input: { refund_reference: string }): Promise<RefundStep>;
  /**
   * Applies the provider's recorded signed notification of the refund (the decision's only authority), then delivers
   * its webhook.
   * @throws ApplicationFailure REFUND_DECISION_NOT_AUTHORIZED (non-retryable) when none is recorded
   */
  applyRefundDecision(input: { refund_reference: string }): Promise<RefundStep>;
}

/** What a refund is made with: a merchant's request or an outcome policy's decision. Amount in minor units of `currency`. */
export interface RefundFields {
  /** `RFD-` + 20 uppercase letters and digits (a policy's is derived from the payin and the payment). */
  refund_reference: string;
  merchant_id: string;
  invoice_reference: string;
  out_trade_no: string;
  /** The refunded payment's upstream trx_ref. */
  trx_ref: string;
  amount_units: bigint;
  currency: 'USDT';
  /** The payer's TRON address the money goes back to (a policy's: the one the upstream reported with the payment). */
  address: string;
  /** Why, ≤ 255 characters ("outcome policy: underpaid"). */
  reason: string;
  /** The merchant's refund fee setting when the refund is made (stored with it: a later change does not alter it). */
  refund_fee: RefundFeeSetting;
}

/**
 * Whether a refund returns the payin fee's share (docs/refunds.md "What can be refunded (fees)"): `kept` (default:
 * the wallet is debited by the refund's amount, the platform keeps the fee) or `returned` (the fee share comes from
 * fee_revenue, the rest from the wallet).
 */
export type RefundFeeSetting = 'kept' | 'returned';
