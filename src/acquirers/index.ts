/**
 * The card acquirer port (platform decisions §7): what a deposit needs of whoever authorizes cards and checks the
 * payer's one-time passwords. The composition root chooses the implementation; the sandbox (src/sandbox/acquirer.ts)
 * is the one for test mode. Every operation is idempotent by its key, so a retried step never charges twice.
 */

export interface CardAuthorization {
  approved: boolean;
  /** "OK" or the decline message shown to the payer. */
  message: string;
  /** The acquirer's id of the authorization (captures and reversals name it). */
  authorization_id: string;
}

export interface Acquirer {
  /**
   * Authorizes `amount_units` (minor units of `currency`) on a card. A repeat with the same `idempotency_key`
   * answers the first decision.
   */
  authorize(input: { idempotency_key: string; card_number: string; amount_units: bigint; currency: string }): Promise<CardAuthorization>;
  /** Captures an approved authorization (moves the money at the acquirer). Repeats are no-ops. */
  capture(input: { authorization_id: string }): Promise<void>;
  /** Reverses an approved authorization that will not be captured. Repeats are no-ops. */
  reverse(input: { authorization_id: string }): Promise<void>;
  /** True when `password` is the payer's one-time password for this deposit. */
  verifyOtp(input: { reference: string; password: string }): Promise<boolean>;
}
