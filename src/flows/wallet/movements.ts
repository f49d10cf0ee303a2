/**
 * The WalletService's money movements as RPCs (interface "Area C" pay_by_token, transfer, block_money,
 * cancel_block_money): each acts for the merchant its request proves, checks its typed fields, and answers every
 * repeat of its signed body (or of its request_id or Idempotency-Key) with its first answer (src/idempotency,
 * docs/idempotency.md). The movements themselves are in ./activities.ts.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { invalidFields } from '../../errors';
import { problem } from '../../field-problems';
import {
  BlockMoneyResponseSchema,
  CancelBlockMoneyResponseSchema,
  PayByTokenResponseSchema,
  TransferResponseSchema,
  type BlockMoneyRequest,
  type CancelBlockMoneyRequest,
  type PayByTokenRequest,
  type TransferRequest,
} from '../../gen/payments/wallet/v1/wallet_pb';
import { answerIdempotently, movementRequest, referenceFromKey } from '../../idempotency';
import type { TransferPartyLookup } from '../../merchant-users';
import type { PlatformDeps } from '../../platform-deps';
import { blockMoney, cancelBlockMoney, payByToken, transfer } from './activities';
import { positive, walletCurrency } from './checks';

/**
 * pay_by_token: the merchant's user pays a preorder of the merchant.
 * @throws DomainError PREORDER_NOT_FOUND, PREORDER_ALREADY_PAID, USER_NOT_FOUND, PAYER_IS_SELLER, INSUFFICIENT_FUNDS
 */
export async function payByTokenIdempotently(deps: PlatformDeps, request: PayByTokenRequest, context: HandlerContext) {
  const act = await deps.merchantAuth.requireMerchant(request, context);
  const pay = (reference?: string) => payByToken(deps, { merchantId: act.merchantId, preOrderToken: request.preOrderToken, payerUserId: request.userId, reference });
  return answerIdempotently(
    deps.idempotency,
    movementRequest(act, request.idempotencyKey, 'area-c.pay_by_token', [request.preOrderToken, request.userId]),
    PayByTokenResponseSchema,
    async (ownKey) => ({ reference: await pay(ownKey && referenceFromKey('PAY', ownKey)) }),
  );
}

/** A transfer's fee fields: not negative, and in the transfer's currency when there is a fee. */
function checkFees(request: TransferRequest, currency: string): void {
  if (request.feesAmountUnits < 0n) throw invalidFields({ fees_amount: [problem('not_negative')] });
  if (request.feesAmountUnits > 0n && request.feesCurrency !== currency) {
    throw invalidFields({ fees_currency: [problem(request.feesCurrency ? 'fees_currency_mismatch' : 'fees_currency_required')] });
  }
}

/**
 * transfer: between two of the merchant's users, with an optional fee to the platform.
 * @throws DomainError VALIDATION_FAILED, USER_NOT_FOUND, WALLET_CURRENCY_MISMATCH, INSUFFICIENT_FUNDS
 */
export async function transferIdempotently(deps: PlatformDeps, parties: TransferPartyLookup, request: TransferRequest, context: HandlerContext) {
  const act = await deps.merchantAuth.requireMerchant(request, context);
  const currency = walletCurrency(request.currency);
  checkFees(request, currency);
  if (request.fromUserId === request.toUserId) throw invalidFields({ to_user_id: [problem('same_user')] });
  const amountUnits = positive(request.amountUnits, 'amount');
  const { fromUserId, toUserId, feesAmountUnits } = request;
  const move = (reference?: string) => transfer(deps, parties, { merchantId: act.merchantId, fromUserId, toUserId, amountUnits, currency, feesAmountUnits, reference });
  return answerIdempotently(
    deps.idempotency,
    movementRequest(act, request.idempotencyKey, 'area-c.transfer', [fromUserId, toUserId, amountUnits, currency, feesAmountUnits, request.feesCurrency]),
    TransferResponseSchema,
    async (ownKey) => ({ reference: await move(ownKey && referenceFromKey('TRF', ownKey)) }),
  );
}

/**
 * block_money: a hold on the user's wallet.
 * @throws DomainError VALIDATION_FAILED, USER_NOT_FOUND, WALLET_CURRENCY_MISMATCH, INSUFFICIENT_FUNDS
 */
export async function blockMoneyIdempotently(deps: PlatformDeps, request: BlockMoneyRequest, context: HandlerContext) {
  const act = await deps.merchantAuth.requireMerchant(request, context);
  const amountUnits = positive(request.amountUnits, 'amount');
  const currency = walletCurrency(request.currency);
  const { userToken, reference } = request;
  const block = (transactionRef?: string) => blockMoney(deps, { merchantId: act.merchantId, userToken, amountUnits, currency, reference, transactionRef });
  return answerIdempotently(
    deps.idempotency,
    movementRequest(act, request.idempotencyKey, 'area-c.block_money', [userToken, amountUnits, currency, reference]),
    BlockMoneyResponseSchema,
    async (ownKey) => ({ transactionRef: await block(ownKey && referenceFromKey('BLK', ownKey)) }),
  );
}

/**
 * cancel_block_money: releases a hold once; a repeat of the same signed body answers its first answer.
 * @throws DomainError BLOCKED_MONEY_NOT_FOUND, BLOCKED_MONEY_ALREADY_CANCELLED
 */
export async function cancelBlockMoneyIdempotently(deps: PlatformDeps, request: CancelBlockMoneyRequest, context: HandlerContext) {
  const act = await deps.merchantAuth.requireMerchant(request, context);
  return answerIdempotently(
    deps.idempotency,
    movementRequest(act, request.idempotencyKey, 'area-c.cancel_block_money', [request.transactionRef]),
    CancelBlockMoneyResponseSchema,
    async () => {
      await cancelBlockMoney(deps, { merchantId: act.merchantId, transactionRef: request.transactionRef });
      return {};
    },
  );
}
