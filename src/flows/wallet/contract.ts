/**
 * The wallet flow's contract (Area C users, transfers, blocked money and payments by token; platform decisions §7):
 * the reasons the WalletService and its movements fail with, and the ledger idempotency keys of each movement.
 * The movements are synchronous (no workflow), so this file holds no define* objects; it imports nothing.
 */

/** Default and bounds of list_banks paging (interface: 20 in the sample). */
export const BANK_PAGE_DEFAULT = 20;
export const BANK_PAGE_MAX = 100;

/** Every reason the WalletService and its movements fail with, and its kind (`DomainErrorKind` of src/errors.ts). */
export const WALLET_REASONS = {
  /** The user id, token or phone is not one of the merchant's active users (answered like an unknown id). */
  USER_NOT_FOUND: 'not_found',
  /** The user's wallet does not hold the currency. */
  WALLET_CURRENCY_MISMATCH: 'failed_precondition',
  /** The paying wallet's available balance is below the amount. */
  INSUFFICIENT_FUNDS: 'failed_precondition',
  /** No blocked money of the merchant with this transaction_ref. */
  BLOCKED_MONEY_NOT_FOUND: 'not_found',
  /** The blocked money was cancelled before. */
  BLOCKED_MONEY_ALREADY_CANCELLED: 'failed_precondition',
  /** pay_by_token: the payer's wallet is the seller's. */
  PAYER_IS_SELLER: 'invalid_argument',
  /** create_user / update_user: another user has this phone number or email. */
  DUPLICATE_PHONE_NUMBER: 'already_exists',
  DUPLICATE_EMAIL: 'already_exists',
} as const;
export type WalletReason = keyof typeof WALLET_REASONS;

/**
 * The steps of the wallet's movements, each keyed under its movement's public reference: a transfer (`TRF…`), a
 * preorder paid by token (`PAY…`), blocked money (`BLK…`) and its cancellation.
 */
export type WalletMovementStep = 'transfer' | 'pay' | 'block' | 'cancel';

/**
 * The ledger idempotency key of one step of a wallet movement, `<reference>:<step>`: a retried movement posts once,
 * and every key of a movement starts with its public reference (docs/architecture.md "One business key").
 */
export function walletMovementIdempotencyKey(step: WalletMovementStep, reference: string): string {
  return `${reference}:${step}`;
}
