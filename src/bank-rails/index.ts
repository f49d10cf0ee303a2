/**
 * The bank-rails port (docs/payouts.md "Bank payouts"): what an Area C bank payout needs of whoever moves money to a
 * bank account. The composition root chooses the implementation; the sandbox (src/sandbox/bank-rails.ts) is the one
 * for test mode. Idempotent by its key: a repeat answers the first outcome and never pays twice.
 */

/** A payout to a tokenized bank account. Amount in minor units of `currency`. */
export interface BankPayoutRequest {
  /** The platform's reference (also the PayoutWorkflow's id). */
  payout_reference: string;
  amount_units: bigint;
  currency: string;
  /** The bank account's token (the rails resolve it; the number never leaves the vault here). */
  account_token: string;
  holder_name: string;
  bank_name: string;
}

/**
 * A bank payout's outcome: `succeeded` with the rails' transfer id, or `failed` for good with the bank's message.
 * Rails answer at once (no notification).
 */
export type BankPayoutOutcome = { status: 'succeeded'; transfer_id: string } | { status: 'failed'; message: string };

export interface BankRails {
  /**
   * Sends a payout under `idempotency_key` (a repeat answers the first outcome).
   * @throws Error when no outcome was answered (the caller retries under the same key)
   */
  payout(input: BankPayoutRequest, idempotency_key: string): Promise<BankPayoutOutcome>;
}
