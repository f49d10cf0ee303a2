/**
 * Area C wallet movements, the wallet flow's only caller of the ledger (called by the WalletService directly: these
 * movements are synchronous): wallet-to-wallet transfers between a merchant's users (optional fee to the
 * platform's fee_revenue), preorders paid by token (through src/preorders), and blocked money (a hold on a user's
 * wallet via a ledger pending transfer to the platform's holds account, voided once by cancel).
 *
 * Tenant isolation (platform decisions §7): a merchant reaches only the users it created and its own preorders
 * and blocked money; any other id is answered exactly like an unknown one.
 *
 * Each movement writes its merchant's event (docs/events.md "Area C") in the database transaction of its posting;
 * its ledger keys start with its public reference (`walletMovementIdempotencyKey`).
 */
import { DomainError, reasonError } from '../../errors';
import { findUserByToken, type User } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import type { Currency } from '../../money';
import { findPreorder, payPreorder, PREORDER_REASONS, sellerAccountId, type PreorderPayment } from '../../preorders';
import { WALLET_REASONS, walletMovementIdempotencyKey } from './contract';
import { insertBlockedMoney, lockBlockedMoney, markBlockedMoneyCancelled } from './store';
import { merchantUser, USER_ID, userNotFound, type TransferParty, type TransferPartyLookup } from '../../merchant-users';
import { newReference } from '../../idempotency';
import { problem } from '../../field-problems';
import { startWebhookDeliveriesAfterCommit } from '../../webhooks';
import { recordEvent, recordEventOnce } from '../../events';

/** Both parties of a transfer; each must be the merchant's own active user, else USER_NOT_FOUND on its field (from first). */
async function transferParties(
  parties: TransferPartyLookup,
  merchantId: string,
  fromUserId: string,
  toUserId: string,
): Promise<[TransferParty, TransferParty]> {
  const rows = await parties([fromUserId, toUserId]);
  const party = (userId: string, field: string): TransferParty => {
    const user = USER_ID.test(userId) ? rows.find((row) => row.id === BigInt(userId).toString()) : undefined;
    if (!user || user.merchant_id !== merchantId || user.status !== 'active') throw userNotFound(field);
    return user;
  };
  return [party(fromUserId, 'from_user_id'), party(toUserId, 'to_user_id')];
}

function checkWalletCurrency(user: Pick<User, 'currency'>, currency: string, field: string): void {
  if (user.currency !== currency) {
    throw reasonError(WALLET_REASONS, 'WALLET_CURRENCY_MISMATCH', 'wallet currency differs', {
      [field]: [problem('wallet_currency', currency)],
    });
  }
}

/** Re-throws the ledger's INSUFFICIENT_FUNDS under the request field `amount`. */
function mapLedgerError(error: unknown): never {
  if (error instanceof DomainError && error.reason === 'INSUFFICIENT_FUNDS') {
    throw reasonError(WALLET_REASONS, 'INSUFFICIENT_FUNDS', 'insufficient funds', { amount: [problem('insufficient_funds')] });
  }
  throw error;
}

/**
 * transfer: `from` pays `amount_units` to `to` and `fees_amount_units` (may be 0) to the platform, one ledger
 * transaction. @returns the reference. @throws USER_NOT_FOUND, WALLET_CURRENCY_MISMATCH, INSUFFICIENT_FUNDS (on amount)
 */
export async function transfer(
  deps: PlatformDeps,
  parties: TransferPartyLookup,
  input: {
    merchantId: string;
    fromUserId: string;
    toUserId: string;
    amountUnits: bigint;
    currency: Currency;
    feesAmountUnits: bigint;
    /** The movement's public reference when the request's idempotency key fixed it; else a new one. */
    reference?: string;
  },
): Promise<string> {
  const [from, to] = await transferParties(parties, input.merchantId, input.fromUserId, input.toUserId);
  checkWalletCurrency(from, input.currency, 'from_user_id');
  checkWalletCurrency(to, input.currency, 'to_user_id');
  const reference = input.reference ?? newReference('TRF');
  const postings = [
    { account_id: from.wallet_account_id, amount_units: -(input.amountUnits + input.feesAmountUnits) },
    { account_id: to.wallet_account_id, amount_units: input.amountUnits },
  ];
  if (input.feesAmountUnits > 0n) {
    const revenue = await deps.ledger.platformAccount('fee_revenue', input.currency);
    postings.push({ account_id: revenue.id, amount_units: input.feesAmountUnits });
  }
  // The posting and its event commit together. A re-run of the same request (same reference) replays the posting
  // under its key, which serializes the runs, and finds its event written.
  await deps.database.transaction(async (trx) => {
    let posted;
    try {
      posted = await deps.ledger.transfer(
        {
          idempotency_key: walletMovementIdempotencyKey('transfer', reference),
          description: `wallet transfer ${reference}`,
          postings,
          metadata: { merchant_id: input.merchantId, reference, from_user_id: from.id, to_user_id: to.id },
        },
        trx,
        'direct',
      );
    } catch (error) {
      mapLedgerError(error);
    }
    await recordEventOnce(trx, {
      owner: { type: 'merchant', id: input.merchantId },
      subject: reference,
      type: 'wallet_transfer.completed',
      data: {
        reference,
        from_user_id: from.id,
        to_user_id: to.id,
        amount_units: input.amountUnits.toString(),
        fee_units: input.feesAmountUnits.toString(),
        currency: input.currency,
      },
      ledger_transaction_id: posted.id,
    });
  });
  return reference;
}

/**
 * pay_by_token: the merchant's user `payerUserId` pays the preorder: payer −amount, seller +(amount − commission),
 * platform fee_revenue +commission (commission_rate % half-up), one ledger transaction, in the same database
 * transaction that marks the preorder paid. @returns the payment reference.
 * @throws PREORDER_NOT_FOUND, PREORDER_ALREADY_PAID (on pre_order_token), USER_NOT_FOUND (user_id), INSUFFICIENT_FUNDS
 */
export async function payByToken(
  deps: PlatformDeps,
  input: { merchantId: string; preOrderToken: string; payerUserId: string; reference?: string },
): Promise<string> {
  const payer = await merchantUser(deps.database, input.merchantId, input.payerUserId, 'user_id');
  const unknown = () =>
    reasonError(PREORDER_REASONS, 'PREORDER_NOT_FOUND', 'preorder not found', { pre_order_token: [problem('not_found')] });
  const alreadyPaid = () =>
    reasonError(PREORDER_REASONS, 'PREORDER_ALREADY_PAID', 'preorder already paid', {
      pre_order_token: [problem('preorder_paid')],
    });
  // Resolve everything that needs other connections first; the transaction then only locks, posts and marks.
  const found = await findPreorder(deps.database, input.preOrderToken);
  if (!found || found.merchant_id !== input.merchantId) throw unknown();
  if (found.status !== 'pending') throw alreadyPaid();
  checkWalletCurrency(payer, found.currency, 'user_id');
  const sellerAccount = await sellerAccountId(deps, input.merchantId, found.seller_code, found.currency);
  if (sellerAccount === payer.wallet_account_id) {
    throw reasonError(WALLET_REASONS, 'PAYER_IS_SELLER', 'payer is the seller', { user_id: [problem('payer_is_seller')] });
  }
  const reference = input.reference ?? newReference('PAY');
  const webhookId = await deps.database.transaction(async (trx) => {
    let paid: PreorderPayment;
    try {
      paid = await payPreorder(deps, trx, {
        preOrderToken: found.token,
        sourceAccountId: payer.wallet_account_id,
        sellerAccountId: sellerAccount,
        reference,
        idempotencyKey: walletMovementIdempotencyKey('pay', reference),
        paidByUserId: payer.id,
      });
    } catch (error) {
      mapLedgerError(error);
    }
    if (paid.status === 'already_paid') throw alreadyPaid();
    return paid.webhookId;
  });
  await startWebhookDeliveriesAfterCommit(deps, webhookId ? [webhookId] : []);
  return reference;
}

// ---- blocked money ----

/**
 * block_money: holds `amountUnits` on the user's wallet (pending transfer user wallet → platform holds).
 * @returns transaction_ref. @throws USER_NOT_FOUND (on user_token), INSUFFICIENT_FUNDS (on amount)
 */
export async function blockMoney(
  deps: PlatformDeps,
  input: { merchantId: string; userToken: string; amountUnits: bigint; currency: Currency; reference: string; transactionRef?: string },
): Promise<string> {
  const user = await findUserByToken(deps.database, input.userToken);
  if (!user || user.merchant_id !== input.merchantId || user.status !== 'active') throw userNotFound('user_token');
  checkWalletCurrency(user, input.currency, 'currency');
  const transactionRef = input.transactionRef ?? newReference('BLK');
  const holds = await deps.ledger.platformAccount('holds', input.currency);
  await deps.database.transaction(async (trx) => {
    let pendingId: string;
    try {
      const pending = await deps.ledger.createPendingTransfer(
        {
          idempotency_key: walletMovementIdempotencyKey('block', transactionRef),
          debit_account_id: user.wallet_account_id,
          credit_account_id: holds.id,
          amount_units: input.amountUnits,
          description: `blocked money ${transactionRef}`,
          metadata: { merchant_id: input.merchantId, user_id: user.id, reference: input.reference },
        },
        trx,
      );
      pendingId = pending.id;
    } catch (error) {
      mapLedgerError(error);
    }
    await insertBlockedMoney(trx, {
      transaction_ref: transactionRef,
      merchant_id: input.merchantId,
      user_id: user.id,
      pending_transfer_id: pendingId,
      amount_units: input.amountUnits,
      currency: input.currency,
      reference: input.reference,
    });
    await recordEvent(trx, {
      owner: { type: 'merchant', id: input.merchantId },
      subject: transactionRef,
      type: 'blocked_money.blocked',
      data: { transaction_ref: transactionRef, user_id: user.id, amount_units: input.amountUnits.toString(), currency: input.currency, reference: input.reference },
    });
  });
  return transactionRef;
}

/**
 * cancel_block_money: voids the hold, exactly once.
 * @throws BLOCKED_MONEY_NOT_FOUND, BLOCKED_MONEY_ALREADY_CANCELLED (both on transaction_ref)
 */
export async function cancelBlockMoney(deps: PlatformDeps, input: { merchantId: string; transactionRef: string }): Promise<void> {
  await deps.database.transaction(async (trx) => {
    const row = await lockBlockedMoney(trx, input.transactionRef);
    if (!row || row.merchant_id !== input.merchantId) {
      throw reasonError(WALLET_REASONS, 'BLOCKED_MONEY_NOT_FOUND', 'blocked money not found', {
        transaction_ref: [problem('not_found')],
      });
    }
    if (row.state !== 'blocked') {
      throw reasonError(WALLET_REASONS, 'BLOCKED_MONEY_ALREADY_CANCELLED', 'already cancelled', {
        transaction_ref: [problem('blocked_money_cancelled')],
      });
    }
    await deps.ledger.voidPendingTransfer(
      { pending_transfer_id: row.pending_transfer_id, idempotency_key: walletMovementIdempotencyKey('cancel', input.transactionRef) },
      trx,
    );
    await markBlockedMoneyCancelled(trx, input.transactionRef);
    await recordEvent(trx, {
      owner: { type: 'merchant', id: input.merchantId },
      subject: input.transactionRef,
      type: 'blocked_money.cancelled',
      data: { transaction_ref: input.transactionRef, user_id: String(row.user_id), amount_units: String(row.amount_units), currency: row.currency },
    });
  });
}
