/** Every reason the preorder capability fails with, and its kind (`DomainErrorKind` of src/errors.ts). */
export const PREORDER_REASONS = {
  /** No preorder of the merchant with this token. */
  PREORDER_NOT_FOUND: 'not_found',
  /** The preorder was paid before (by any path). */
  PREORDER_ALREADY_PAID: 'failed_precondition',
  /** The seller_code is neither the merchant nor one of its users in the currency. */
  SELLER_NOT_FOUND: 'not_found',
  /** The merchant used this out_trade_no for another preorder. */
  DUPLICATE_OUT_TRADE_NO: 'already_exists',
} as const;
export type PreorderReason = keyof typeof PREORDER_REASONS;
