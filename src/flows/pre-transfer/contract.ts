/**
 * The pre-transfer flow's contract (Area A, payment-services-interface.md "Pre-transfer", platform decisions §6):
 * what the PreTransferWorkflow, its activities, the TransferService and the Area A façade share. Imports nothing
 * but `@temporalio/workflow`, so the workflow bundle can use it.
 *
 * Lifetime: `create` holds the amount on the partner float (a pending ledger transfer) and starts the workflow
 * (id = pre_transfer_id); the `confirm` Update posts the hold to the receiver; the `expire_in` timer voids it.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';

/**
 * Every reason the TransferService, the PreTransferWorkflow and its activities fail with, and its kind
 * (`DomainErrorKind` of src/errors.ts). Workflows reject with `ApplicationFailure.type` = one of these names.
 */
export const PRE_TRANSFER_REASONS = {
  /** The receiver is unknown, inactive, marked not eligible, or has no USD wallet. */
  RECEIVER_NOT_ELIGIBLE: 'failed_precondition',
  /** The partner's available float is below the amount. */
  INSUFFICIENT_PARTNER_BALANCE: 'failed_precondition',
  /** Only USD is transferred. */
  CURRENCY_NOT_ALLOWED: 'invalid_argument',
  /** The same out_trade_no was sent before with other fields. */
  DUPLICATE_OUT_TRADE_NO: 'already_exists',
  /** The partner used this partner_transaction_id on another pre-transfer. */
  DUPLICATE_PARTNER_TRANSACTION_ID: 'already_exists',
  /** Unknown or malformed pre_transfer_id. */
  PRE_TRANSFER_NOT_FOUND: 'not_found',
  /** The pre-transfer was confirmed already. */
  PRE_TRANSFER_USED: 'failed_precondition',
  /** The pre-transfer is past its `expire_in`. */
  PRE_TRANSFER_EXPIRED: 'failed_precondition',
  /** No pre-transfer with this out_trade_no. */
  TRANSFER_NOT_FOUND: 'not_found',
  /**
   * A `confirm` Update for a partner_transaction_id no verified confirm request recorded (one sent straight to
   * Temporal): the post refuses it and nothing moves.
   */
  CONFIRMATION_NOT_RECORDED: 'permission_denied',
} as const;
export type PreTransferReason = keyof typeof PRE_TRANSFER_REASONS;

/** pending → confirming (an accepted confirm Update is posting) → confirmed; pending → expired at the timer. */
export type PreTransferWorkflowState = 'pending' | 'confirming' | 'confirmed' | 'expired';

export interface PreTransferWorkflowInput {
  pre_transfer_id: string;
  /** Lifetime in seconds, counted from creation (PRE_TRANSFER_TTL_SECONDS at creation). */
  ttl_seconds: number;
}

export interface PreTransferWorkflowResult {
  state: PreTransferWorkflowState;
}

export interface ConfirmPreTransferUpdateInput {
  partner_transaction_id: string;
}

export interface ConfirmPreTransferUpdateResult {
  fund_transfer_id: string;
}

/**
 * Posts the hold; rejected with PRE_TRANSFER_USED, PRE_TRANSFER_EXPIRED, DUPLICATE_PARTNER_TRANSACTION_ID, or
 * CONFIRMATION_NOT_RECORDED when the api recorded no verified confirm request with this partner_transaction_id (the
 * Update itself carries no authority: anyone reaching the Temporal frontend can send one).
 */
export const confirmPreTransferUpdate = defineUpdate<ConfirmPreTransferUpdateResult, [ConfirmPreTransferUpdateInput]>('confirm');
/** The workflow's view of the pre-transfer (the Web UI shows it too). */
export const preTransferStateQuery = defineQuery<{ state: PreTransferWorkflowState; fund_transfer_id: string | null }>('state');

/** The ledger steps of one pre-transfer: the hold at creation, then exactly one of post or void. */
export type PreTransferStep = 'hold' | 'post' | 'void';

/** The ledger idempotency key of one step of one pre-transfer: a retried step never moves money twice. */
export function preTransferIdempotencyKey(pre_transfer_id: string, step: PreTransferStep): string {
  return `${pre_transfer_id}:${step}`;
}

export interface PostPreTransferInput {
  pre_transfer_id: string;
  partner_transaction_id: string;
  /** The id given to the transfer when this call is the one that posts it. */
  fund_transfer_id: string;
  idempotency_key: string;
}

export interface VoidPreTransferInput {
  pre_transfer_id: string;
  idempotency_key: string;
}

/** The PreTransferWorkflow's activities (src/flows/pre-transfer/activities.ts). */
export interface PreTransferActivities {
  /**
   * Posts the hold (partner float → receiver wallet) and marks the pre-transfer confirmed, once the api recorded a
   * verified confirm request of the pre-transfer's partner with this partner_transaction_id (read under the row
   * lock). A repeat after success returns the stored fund_transfer_id.
   * @throws ApplicationFailure (non-retryable) PRE_TRANSFER_NOT_FOUND, PRE_TRANSFER_EXPIRED,
   *   DUPLICATE_PARTNER_TRANSACTION_ID, CONFIRMATION_NOT_RECORDED
   */
  postPreTransfer(input: PostPreTransferInput): Promise<{ fund_transfer_id: string }>;
  /** Voids the hold (the amount returns to the partner float) and marks the pre-transfer expired. Repeats are no-ops. */
  voidPreTransfer(input: VoidPreTransferInput): Promise<void>;
}
