/**
 * The deposit flow's contract (Area C deposits and confirmations, platform decisions §7, docs/area-c.md): what the
 * DepositWorkflow, its activities and the DepositService share. Imports nothing but `@temporalio/workflow`.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';

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
} as const;
export type DepositReason = keyof typeof DEPOSIT_REASONS;

/**
 * The ledger idempotency key of a deposit's completion (its one ledger step, a credit or a preorder's payment): the
 * deposit reference itself, so a retried completion never credits twice. It is also the acquirer's authorization
 * key. Every other flow keys its steps `<reference>:<step>`; `ledgerKeysOf` (src/events) finds both forms.
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
