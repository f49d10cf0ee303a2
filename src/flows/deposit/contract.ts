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
} as const;
export type DepositReason = keyof typeof DEPOSIT_REASONS;

/** Patch id: an approved card authorization is captured after the deposit completed, reversed when it failed. */
export const DEPOSIT_CARD_SETTLEMENT = 'deposit-card-capture-or-reverse';

/** The ledger idempotency key of a deposit's completion: a retried completion never credits twice. */
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
  /** Lifetime in seconds from creation (DEPOSIT_TTL_SECONDS at creation). */
  ttl_seconds: number;
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

export const confirmWithPasswordUpdate = defineUpdate<DepositConfirmation, [SealedPassword]>('confirmWithPassword');
export const submitCardConfirmationUpdate = defineUpdate<DepositConfirmation, []>('submitCardConfirmation');
export const depositStateQuery = defineQuery<{ state: DepositWorkflowState; wrong_passwords: number }>('state');


export interface DepositActivities {
  /** The acquirer's OTP check; the password arrives sealed and is opened only inside the activity. */
  verifyDepositPassword(input: { reference: string } & SealedPassword): Promise<{ valid: boolean }>;
  /** The acquirer's decision on the deposit's card (number revealed from the vault, never logged). */
  authorizeDepositCard(input: { reference: string }): Promise<{ approved: boolean; authorization_id?: string }>;
  /**
   * After the completion: captures an approved authorization when the deposit completed, reverses it when it
   * could not (a preorder paid meanwhile), so the payer's card is never held for money the platform did not take.
   * Idempotent at the acquirer (by authorization id).
   */
  settleDepositCard(input: { reference: string; authorization_id: string; capture: boolean }): Promise<void>;
  /**
   * Completes a pending deposit in one database transaction (ledger credit or preorder payment under
   * `depositIdempotencyKey`); a preorder paid meanwhile fails the deposit and moves nothing.
   */
  completeDeposit(input: { reference: string }): Promise<{ state: 'completed' | 'failed' }>;
  /** Ends a pending deposit as declined, cancelled or expired; moves no money. */
  closeDeposit(input: { reference: string; state: 'declined' | 'cancelled' | 'expired' }): Promise<void>;
}
