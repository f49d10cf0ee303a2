/**
 * The deposit flow's contract (Area C deposits and confirmations, platform decisions §7, docs/area-c.md): what the
 * DepositWorkflow, its activities and the DepositService share. Imports nothing but `@temporalio/workflow`.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { moneyOutLedgerKey, moneyOutProviderKey, type MoneyOutResult, type MoneyOutStep } from '../money-out/contract';

/**
 * Every reason the DepositService, the DepositWorkflow and its activities fail with, and its kind
 * (`DomainErrorKind` of src/errors.ts). The DepositRejection reasons are also the confirm Updates'
 * `ApplicationFailure.type`.
 */
export const DEPOSIT_REASONS = {
  DEPOSIT_COMPLETED: 'failed_precondition',
  DEPOSIT_DECLINED: 'failed_precondition',
  DEPOSIT_FAILED: 'failed_precondition',
  DEPOSIT_CANCELLED: 'failed_precondition',
  DEPOSIT_EXPIRED: 'failed_precondition',
  DEPOSIT_CONFIRMED_BY_FORM: 'invalid_argument',
  DEPOSIT_CONFIRMED_BY_PASSWORD: 'not_found',
  DEPOSIT_NOT_FOUND: 'not_found',
  DEPOSIT_USER_NOT_FOUND: 'not_found',
  PASSWORD_INCORRECT: 'invalid_argument',
  CARD_EXPIRED: 'invalid_argument',
  INSTRUMENT_NOT_FOUND: 'not_found',
  PREORDER_ALREADY_PAID: 'failed_precondition',
  /** No card acquirer is configured for this kind of deposit (live mode without one). */
  ACQUIRER_NOT_CONFIGURED: 'failed_precondition',
  /**
   * A confirmation step named no confirmation the api recorded for this deposit (or one already taken, or of the
   * other method): an Update sent straight to Temporal carries no authority, so the step moves nothing
   * (docs/security.md "Temporal messages"). Never the caller's doing when it reaches a service.
   */
  CONFIRMATION_NOT_RECORDED: 'permission_denied',
  /** refund_deposit: the deposit is not completed (nothing was credited), so there is nothing to refund. */
  DEPOSIT_REFUND_NOT_COMPLETED: 'failed_precondition',
  /** refund_deposit: a bank-account deposit; the acquirer cannot refund it (nothing held). */
  DEPOSIT_REFUND_NOT_SUPPORTED: 'failed_precondition',
  /** refund_deposit: the amount exceeds what is still refundable (amount less refunds succeeded or held). */
  DEPOSIT_REFUND_AMOUNT_EXCEEDS_REFUNDABLE: 'failed_precondition',
  /** refund_deposit: part of a Visa/Master deposit not captured yet (before capture only the whole is reversed). */
  DEPOSIT_REFUND_PARTIAL_BEFORE_CAPTURE: 'failed_precondition',
  /** refund_deposit: part of a deposit that paid a preorder (a preorder's refund is whole only). */
  DEPOSIT_REFUND_PREORDER_WHOLE_ONLY: 'failed_precondition',
  /** refund_deposit: the credited account (the user's wallet, a preorder's seller) has less available than it. */
  DEPOSIT_REFUND_INSUFFICIENT_BALANCE: 'failed_precondition',
  /** refund_deposit_status: no refund of the caller with this reference. */
  DEPOSIT_REFUND_NOT_FOUND: 'not_found',
} as const;
export type DepositReason = keyof typeof DEPOSIT_REASONS;

/**
 * The ledger idempotency key of a deposit's completion (its one ledger step, a credit or a preorder's payment): the
 * deposit reference itself, so a retried completion never credits twice. It is also the acquirer's authorization
 * key. Every other flow keys its steps `<reference>:<step>`; the ledger's `transactionsByKey` finds both forms.
 */
export function depositIdempotencyKey(reference: string): string {
  return reference;
}

/** pending → completed | declined | failed | cancelled | expired; the same names as the deposits row. */
export type DepositWorkflowState = 'pending' | 'completed' | 'declined' | 'failed' | 'cancelled' | 'expired';

export interface DepositWorkflowInput {
  /** The deposit reference (DEP…), also this workflow's id. */
  reference: string;
  /** How the payer confirms: an OTP / soft token (local card, bank account) or the card confirmation form. */
  confirmation: 'password' | 'card_form';
  /** Lifetime in seconds from creation (DEPOSIT_TTL_SECONDS at creation): the timer when `expires_at` is absent. */
  ttl_seconds: number;
  /**
   * ISO 8601 instant the deposit expires (the row's `expires_at`). The timer runs to it, so a workflow started late
   * (by the first confirmation, when the start after creation did not reach Temporal) still expires on time.
   */
  expires_at?: string;
  /** Wrong passwords accepted before the deposit is cancelled (DEPOSIT_MAX_OTP_ATTEMPTS at creation). */
  max_password_attempts: number;
  /**
   * Seconds between a Visa/Master deposit's completion and its capture (DEPOSIT_CAPTURE_DELAY_SECONDS at creation):
   * a refund within them reverses the authorization instead. Absent or 0: captured right after the completion.
   */
  capture_delay_seconds?: number;
}

/** What a confirmation did. `attempts_left` counts the wrong passwords still allowed. */
export interface DepositConfirmation {
  outcome: 'completed' | 'wrong_password' | 'cancelled' | 'declined' | 'failed';
  attempts_left: number;
}

/**
 * Why a confirmation was refused before anything ran (ApplicationFailure.type): the deposit is already in an end
 * state, its lifetime ran out, or it is confirmed the other way.
 */
export type DepositRejection =
  | 'DEPOSIT_COMPLETED'
  | 'DEPOSIT_DECLINED'
  | 'DEPOSIT_FAILED'
  | 'DEPOSIT_CANCELLED'
  | 'DEPOSIT_EXPIRED'
  | 'DEPOSIT_CONFIRMED_BY_FORM'
  | 'DEPOSIT_CONFIRMED_BY_PASSWORD';

/**
 * The payer's password travels sealed (AES-256-GCM under the platform data key, the deposit reference as associated
 * data): workflow history keeps every Update and activity argument, and a password must never be readable there.
 */
export interface SealedPassword {
  sealed_password: string;
}

/**
 * Names the confirmation the api recorded (`deposit_confirmations.id`, `dcf_…`) before it sent the Update: the
 * authority of the step is that record, re-read by the activity, never the Update itself.
 */
export interface ConfirmationProof {
  confirmation_id: string;
}

/** How a recorded confirmation was decided (`deposit_confirmations.outcome`). */
export type ConfirmationOutcome = 'approved' | 'declined' | 'password_valid' | 'password_wrong';

export const confirmWithPasswordUpdate = defineUpdate<DepositConfirmation, [SealedPassword & ConfirmationProof]>('confirmWithPassword');
export const submitCardConfirmationUpdate = defineUpdate<DepositConfirmation, [ConfirmationProof]>('submitCardConfirmation');
export const depositStateQuery = defineQuery<{ state: DepositWorkflowState; wrong_passwords: number }>('state');


/**
 * The DepositWorkflow's activities (src/flows/deposit/activities.ts). Every step that decides or moves money takes
 * the recorded confirmation it acts on (`confirmation_id`) and refuses without it (CONFIRMATION_NOT_RECORDED,
 * non-retryable).
 */
export interface DepositActivities {
  /**
   * The acquirer's OTP check; the password arrives sealed and is opened only inside the activity. Takes the recorded
   * password confirmation (once) and records whether the password was right.
   */
  verifyDepositPassword(input: { reference: string } & SealedPassword & ConfirmationProof): Promise<{ valid: boolean }>;
  /**
   * The acquirer's decision on the deposit's card (number revealed from the vault, never logged). Takes the recorded
   * card-form confirmation (once) and records the decision.
   */
  authorizeDepositCard(input: { reference: string } & ConfirmationProof): Promise<{ approved: boolean; authorization_id?: string }>;
  /**
   * After the completion: captures an approved authorization when the deposit completed, reverses it when it
   * could not (a preorder paid meanwhile), so the payer's card is never held for money the platform did not take.
   * Idempotent at the acquirer (by authorization id).
   */
  settleDepositCard(input: { reference: string; authorization_id: string; capture: boolean }): Promise<void>;
  /**
   * Completes a pending deposit in one database transaction (ledger credit or preorder payment under
   * `depositIdempotencyKey`) when the named confirmation is this deposit's and was decided `approved` /
   * `password_valid`; a preorder paid meanwhile fails the deposit and moves nothing.
   */
  completeDeposit(input: { reference: string } & ConfirmationProof): Promise<{ state: 'completed' | 'failed' }>;
  /**
   * Ends a pending deposit as declined (the named confirmation was declined), cancelled (its recorded wrong
   * passwords reached the deposit's limit) or expired; moves no money.
   */
  closeDeposit(input: { reference: string; state: 'declined' | 'cancelled' | 'expired'; confirmation_id?: string }): Promise<void>;
}

// ---- Refunds of deposits (docs/refunds.md "Area C"): the DepositRefundWorkflow (workflows/deposit-refund.ts) ----
// A client of the money-out saga (src/flows/money-out/contract.ts, docs/money-out.md): its provider, the card acquirer,
// answers at once (no `requested` stage); its commission leg a preorder's commission on fee_revenue.

/**
 * A deposit refund's states: `held` (recorded, the amount held on the credited account, the acquirer not answered
 * yet), `succeeded` (the holds posted: the money left), `failed` (the holds voided: nothing left).
 */
export type DepositRefundStatus = 'held' | 'succeeded' | 'failed';

/**
 * How the payer's money goes back: `reversal` (the authorization of a Visa/Master deposit not captured yet is
 * released, whole; its capture never happens) or `refund` (the acquirer refunds a captured or OTP deposit).
 */
export type DepositRefundMethod = 'reversal' | 'refund';

/** The DepositRefundWorkflow's input; its id is the refund reference. */
export interface DepositRefundWorkflowInput {
  refund_reference: string;
}

export type DepositRefundWorkflowResult = MoneyOutResult<DepositRefundStatus>;

/** What the acquirer step left the refund as: its status and the webhook of its decision, if one was produced. */
export type DepositRefundStep = MoneyOutStep<DepositRefundStatus>;

/**
 * The ledger idempotency key of one step of a deposit's refund: `<deposit reference>:refund:<refund reference>:<step>`,
 * under the deposit's reference so that the deposit's timeline (the ledger's reads by key) shows its refunds' holds and postings.
 * The `-commission` steps are a preorder refund's hold on fee_revenue (the saga's `commission` leg).
 */
export function depositRefundIdempotencyKey(
  deposit_reference: string,
  refund_reference: string,
  step: 'hold' | 'post' | 'void' | 'hold-commission' | 'post-commission' | 'void-commission',
): string {
  const [base, leg] = step.split('-') as ['hold' | 'post' | 'void', 'commission' | undefined];
  return moneyOutLedgerKey(`${deposit_reference}:refund:${refund_reference}`, base, leg);
}

/** The key the acquirer is asked to refund under: the refund reference (one refund, whatever the retries). */
export function depositRefundAcquirerKey(refund_reference: string): string {
  return moneyOutProviderKey(refund_reference);
}

/** The DepositRefundWorkflow's activities (src/flows/deposit/refund-activities.ts). */
export interface DepositRefundActivities {
  /**
   * Asks the acquirer (reverses the authorization, or refunds under the refund's key) and applies its answer:
   * succeeded posts the holds, failed voids them, each with its event (and webhook) in one transaction.
   * @throws Error retryably while the deposit's capture is running (`capturing`) or the acquirer gave no answer
   */
  settleDepositRefund(input: { refund_reference: string }): Promise<DepositRefundStep>;
  /** Delivers the refund's webhooks (first attempt, then their delivery workflows). */
  startDepositRefundWebhooks(input: { webhook_ids: string[] }): Promise<void>;
}
