/**
 * Preorders (payment-services-interface.md "Area C" generate_pre_order_token, pay_by_token, deposits with a
 * preorder; platform decisions §7): a merchant's request to be paid an amount into a seller's wallet, paid exactly
 * once by whichever path pays it first (a wallet via pay_by_token, a card or bank account via a deposit, or the
 * hosted page).
 */
import type { Knex } from '../db/knex';
import { randomAlphanumeric } from '../crypto/secrets';
import { reasonError } from '../errors';
import { problem } from '../field-problems';
import type { PlatformPosting, Posting } from '../ledger/types';
import { merchantApiUser } from '../onboarding/merchants';
import { findMerchantUserByWalletRef } from '../onboarding/users';
import type { PlatformDeps } from '../platform-deps';
import { amountJson, percentOf, stringifyJson, type Currency } from '../money';
import { recordEvent } from '../events';
import { recordWebhookEvent } from '../webhooks';
import { PREORDER_REASONS } from './reasons';
import { insertPreorder, lockPreorder, markPreorderPaid, type Preorder } from './store';

export * from './reasons';
export { findPreorder, type Preorder } from './store';

/**
 * The wallet account a preorder's seller_code pays into: the merchant's own id (or its API user's wallet_ref) →
 * the merchant's wallet in the currency; a wallet_ref of one of the merchant's users → that user's wallet.
 * @throws DomainError not_found SELLER_NOT_FOUND on seller_code
 */
export async function sellerAccountId(deps: PlatformDeps, merchantId: string, sellerCode: string, currency: Currency): Promise<string> {
  const unknown = reasonError(PREORDER_REASONS, 'SELLER_NOT_FOUND', 'seller not found', { seller_code: [problem('not_found')] });
  const apiUser = await merchantApiUser(deps.database, merchantId);
  if (sellerCode === merchantId || sellerCode === apiUser.wallet_ref) {
    const account = await deps.ledger.findAccount({ owner_type: 'merchant', owner_id: merchantId, currency, kind: 'wallet' });
    if (!account) throw unknown;
    return account.id;
  }
  const user = await findMerchantUserByWalletRef(deps.database, merchantId, sellerCode);
  if (!user || user.currency !== currency) throw unknown;
  return user.wallet_account_id;
}

/**
 * generate_pre_order_token: records a pending preorder. The seller must resolve (see `sellerAccountId`).
 * @throws DUPLICATE_OUT_TRADE_NO (already_exists, on out_trade_no), SELLER_NOT_FOUND
 */
export async function generatePreOrder(
  deps: PlatformDeps,
  input: {
    merchantId: string; outTradeNo: string; sellerCode: string; description: string; amountUnits: bigint; currency: Currency;
    redirectUrl: string; commissionRate: string; callBackUrl: string;
  },
): Promise<{ token: string; url: string }> {
  await sellerAccountId(deps, input.merchantId, input.sellerCode, input.currency);
  const token = `PO${randomAlphanumeric(30)}`;
  const inserted = await insertPreorder(deps.database, {
    token,
    merchant_id: input.merchantId,
    out_trade_no: input.outTradeNo,
    seller_code: input.sellerCode,
    description: input.description,
    amount_units: input.amountUnits,
    currency: input.currency,
    commission_rate: input.commissionRate || null,
    redirect_url: input.redirectUrl || null,
    call_back_url: input.callBackUrl || null,
  });
  if (!inserted) {
    throw reasonError(PREORDER_REASONS, 'DUPLICATE_OUT_TRADE_NO', 'duplicate out_trade_no', {
      out_trade_no: [problem('taken', 'out_trade_no')],
    });
  }
  return { token, url: `${deps.config.PUBLIC_BASE_URL}${deps.config.MERCHANT_PREFIX}/pre-order/${token}` };
}

/** The commission of paying a preorder: commission_rate % of the amount, half-up; 0 without a rate. */
export function preorderCommission(preorder: { amount_units: bigint | string; commission_rate: string | null }): bigint {
  return preorder.commission_rate ? percentOf(BigInt(preorder.amount_units), preorder.commission_rate) : 0n;
}

/** A payment's outcome; `webhookId` names the recorded preorder.paid call-back, whose delivery starts after commit. */
export type PreorderPayment = { status: 'paid'; transactionId: string; webhookId: string | null } | { status: 'already_paid' };

/** The event a preorder's call_back_url receives once it is paid (docs/area-c.md "Preorders", docs/events.md). */
export const PREORDER_PAID_EVENT = 'preorder.paid' as const;

/** The stable webhook id of a preorder's paid call-back (one per preorder, ever). */
export function preorderWebhookId(token: string): string {
  return `WH-PO-${token}`;
}

/**
 * Records the merchant's preorder.paid event (subject: the paying reference, `PAY…` or the deposit's `DEP…`) inside
 * the payment's transaction, and the call-back produced from it when the preorder has a call_back_url.
 * @returns the call-back's webhook id, null without a call_back_url
 */
async function recordPaidEvent(
  trx: Knex.Transaction,
  preorder: Preorder,
  payment: { reference: string; transactionId: string; commission: bigint; paidByUserId: string | null },
): Promise<string | null> {
  const { reference } = payment;
  const data = {
    reference,
    pre_order_token: preorder.token,
    out_trade_no: preorder.out_trade_no,
    seller_code: preorder.seller_code,
    amount_units: String(preorder.amount_units),
    commission_units: payment.commission.toString(),
    currency: preorder.currency,
    payer_user_id: payment.paidByUserId,
  };
  if (!preorder.call_back_url) {
    await recordEvent(trx, { owner: { type: 'merchant', id: preorder.merchant_id }, subject: reference, type: PREORDER_PAID_EVENT, data, ledger_transaction_id: payment.transactionId });
    return null;
  }
  const body = stringifyJson({
    event: PREORDER_PAID_EVENT,
    pre_order_token: preorder.token,
    out_trade_no: preorder.out_trade_no,
    amount: amountJson(BigInt(preorder.amount_units), preorder.currency),
    currency: preorder.currency,
    reference,
    status: 'paid',
  });
  return recordWebhookEvent(trx, {
    id: preorderWebhookId(preorder.token),
    merchant_id: preorder.merchant_id,
    subject_reference: reference,
    event: PREORDER_PAID_EVENT,
    body,
    url: preorder.call_back_url,
    data,
    ledger_transaction_id: payment.transactionId,
  });
}

/**
 * Pays a preorder inside `trx`, exactly once across every path that pays preorders (pay_by_token, deposits): locks
 * the preorder row (FOR UPDATE); a paid one answers `already_paid` and writes nothing; otherwise one ledger
 * transaction source −amount, seller +(amount − commission), platform fee_revenue +commission
 * (`preorderCommission`), the row marked paid with `reference`, and the merchant's preorder.paid event recorded
 * (subject: `reference`), with the call-back produced from it when the preorder has a call_back_url (the caller
 * starts its delivery after the commit).
 * @param input.paidByUserId the paying user, null for a guest card. @throws ledger errors (INSUFFICIENT_FUNDS…)
 */
export async function payPreorder(
  deps: PlatformDeps,
  trx: Knex.Transaction,
  input: {
    preOrderToken: string; sourceAccountId: string; sellerAccountId: string; reference: string; idempotencyKey: string;
    paidByUserId: string | null;
  },
): Promise<PreorderPayment> {
  const preorder = await lockPreorder(trx, input.preOrderToken);
  if (preorder.status !== 'pending') return { status: 'already_paid' };
  const amount = BigInt(preorder.amount_units);
  const commission = preorderCommission(preorder);
  const postings: Array<Posting | PlatformPosting> = [
    { account_id: input.sourceAccountId, amount_units: -amount },
    { account_id: input.sellerAccountId, amount_units: amount - commission },
  ];
  if (commission > 0n) postings.push({ platform: 'fee_revenue', currency: preorder.currency, amount_units: commission });
  const posted = await deps.ledger.transfer(
    {
      idempotency_key: input.idempotencyKey,
      description: `preorder ${preorder.out_trade_no} paid`,
      postings: postings.filter((posting) => posting.amount_units !== 0n),
      metadata: {
        merchant_id: preorder.merchant_id, pre_order_token: preorder.token, reference: input.reference, payer_user_id: input.paidByUserId,
      },
    },
    trx,
  );
  await markPreorderPaid(trx, preorder.token, { paid_transaction_id: posted.id, paid_by_user_id: input.paidByUserId, payment_reference: input.reference });
  const webhookId = await recordPaidEvent(trx, preorder, { reference: input.reference, transactionId: posted.id, commission, paidByUserId: input.paidByUserId });
  return { status: 'paid', transactionId: posted.id, webhookId };
}

