/**
 * The card acquirer port (platform decisions §7): what a deposit needs of whoever authorizes cards and checks the
 * payer's one-time passwords, and what a deposit's refund needs of it (docs/refunds.md "Providers"). The composition
 * root chooses the implementation; the sandbox (src/sandbox/acquirer.ts) is the one for test mode. Every operation
 * is idempotent by its key (an authorization's id for capture and reversal), so a retried step never charges or
 * refunds twice.
 */

export interface CardAuthorization {
  approved: boolean;
  /** "OK" or the decline message shown to the payer. */
  message: string;
  /** The acquirer's id of the authorization (captures, reversals and refunds name it). */
  authorization_id: string;
}

/**
 * A reversal's outcome: `reversed` (the hold on the card is released, nothing was taken; also the answer to a
 * repeat), or `failed` with the acquirer's message (the authorization was captured: refund it instead, or the
 * acquirer does not know it).
 */
export type AcquirerReversal = { status: 'reversed' } | { status: 'failed'; message: string };

/**
 * A refund's outcome:
 *   succeeded    the money goes back to the payer's instrument; `refund_id` is the acquirer's reference
 *   failed       nothing goes back, for good (declined by the issuer, not captured, above what was captured, the key
 *                used with other parameters); `message` is the acquirer's
 *   unsupported  this kind of deposit cannot be refunded at this acquirer (nothing was asked of anyone): the service
 *                answers it with its documented error instead of trying
 * A repeat with the same idempotency key answers the first outcome.
 */
export type AcquirerRefundOutcome =
  | { status: 'succeeded'; refund_id: string }
  | { status: 'failed'; message: string }
  | { status: 'unsupported'; message: string };

/**
 * What a refund names at the acquirer: a Visa/Master deposit by its captured authorization; a local-card or
 * bank-account deposit (confirmed by OTP, never authorized at the acquirer) by the deposit's reference.
 */
export type AcquirerRefundTarget = { instrument: 'visa_master'; authorization_id: string } | { instrument: 'local_card' | 'bank_account'; deposit_reference: string };

export type AcquirerRefundRequest = AcquirerRefundTarget & {
  /** The refund's key: a repeat answers the first outcome and refunds nothing more. */
  idempotency_key: string;
  /** Minor units of `currency`, > 0: all or part of what was captured. */
  amount_units: bigint;
  currency: string;
};

export interface Acquirer {
  /**
   * Authorizes `amount_units` (minor units of `currency`) on a card. A repeat with the same `idempotency_key`
   * answers the first decision.
   */
  authorize(input: { idempotency_key: string; card_number: string; amount_units: bigint; currency: string }): Promise<CardAuthorization>;
  /** Captures an approved authorization (moves the money at the acquirer). Repeats are no-ops. */
  capture(input: { authorization_id: string }): Promise<void>;
  /**
   * Reverses an approved authorization before it is captured (a deposit that will not complete, or a refund before
   * capture): the payer's card is no longer held. Repeats answer `reversed` again.
   */
  reverse(input: { authorization_id: string }): Promise<AcquirerReversal>;
  /**
   * Refunds all or part of a captured deposit (after capture; before it, `reverse`).
   * @returns the outcome; `unsupported` for a kind of deposit this acquirer cannot refund
   */
  refund(input: AcquirerRefundRequest): Promise<AcquirerRefundOutcome>;
  /** True when `password` is the payer's one-time password for this deposit. */
  verifyOtp(input: { reference: string; password: string }): Promise<boolean>;
}
