/**
 * WalletService (Area C of payment-services-interface.md, platform decisions §7 and §8): merchant login and
 * per-call authentication (./login.ts), and one RPC per /do-action wallet service: the merchant's users
 * (create_user, update_user), its money movements (pay_by_token, transfer, block_money, cancel_block_money), its
 * preorders and the catalog's pages (./catalog.ts). Every service RPC acts for the merchant its ActionAuth proves,
 * and only as its signed body says (src/merchant-auth); checks its typed fields again (the façade's rules ran before,
 * but a trusted caller's request did not pass them); and a money movement answers every repeat of its signed body
 * (or of its request_id or Idempotency-Key) with its first answer (src/idempotency, docs/idempotency.md).
 *
 * The money movements are synchronous (no workflow), so each RPC sits beside the ledger movement it makes, and this
 * module is the wallet flow's only caller of the ledger: wallet-to-wallet transfers between a merchant's users
 * (optional fee to the platform's fee_revenue), preorders paid by token (through src/preorders), and blocked money
 * (a hold on a user's wallet via a ledger pending transfer to the platform's holds account, voided once by cancel).
 * Tenant isolation (platform decisions §7): a merchant reaches only the users it created and its own preorders and
 * blocked money; any other id is answered exactly like an unknown one. Each movement writes its merchant's event
 * (docs/events.md "Area C") in the database transaction of its posting; its ledger keys start with its public
 * reference (`walletMovementIdempotencyKey`).
 *
 * Errors: WALLET_SERVICE_REASONS (./reasons.ts).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { DomainError, invalidFields, reasonError } from '../../errors';
import { eventRowOf, eventWriteCtes, journaled, numberAfterCommit, numberSoon, recordEvent, type RequestJournal } from '../../events';
import { problem } from '../../field-problems';
import {
  BlockMoneyResponseSchema,
  CancelBlockMoneyResponseSchema,
  PayByTokenResponseSchema,
  TransferResponseSchema,
  type BlockMoneyRequest,
  type CancelBlockMoneyRequest,
  type CreateUserRequest,
  type GeneratePreOrderTokenRequest,
  type ListBanksRequest,
  type PayByTokenRequest,
  type TransferRequest,
  type UpdateUserRequest,
  type WalletService,
} from '../../gen/payments/wallet/v1/wallet_pb';
import { randomUUID } from 'node:crypto';
import { answerIdempotently, movementRequest, newReference, referenceFromKey, type IdempotencyClaim, type IdempotencyCompletion } from '../../idempotency';
import type { LedgerAlso, PlatformPosting, Posting } from '../../ledger/types';
import { isAreaCCurrency, type Currency } from '../../money';
import {
  createUser,
  findUserByPhone,
  findUserByToken,
  merchantUser,
  normalizePhone,
  transferPartyLookup,
  updateUser,
  USER_ID,
  userNotFound,
  type TransferParty,
  type TransferPartyLookup,
  type User,
} from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { findPreorder, generatePreOrder, payPreorder, PREORDER_REASONS, sellerAccountId, type PreorderPayment } from '../../preorders';
import { clientAddressOf } from '../../rpc/client-address';
import { startWebhookDeliveriesAfterCommit } from '../../webhooks';
import { listBanks, listFees } from './catalog';
import { BANK_PAGE_DEFAULT, BANK_PAGE_MAX, WALLET_REASONS, walletMovementIdempotencyKey } from './contract';
import { authenticateAction, login } from './login';
import { insertBlockedMoney, lockBlockedMoney, markBlockedMoneyCancelled } from './store';

// ---- Checks of typed request fields: each refusal is VALIDATION_FAILED with a field problem code on the field ----

/** A currency Area C services accept, else `currency` on `field`. */
function walletCurrency(value: string, field = 'currency'): Currency {
  if (!isAreaCCurrency(value)) throw invalidFields({ [field]: [problem('currency')] });
  return value;
}

/** A positive amount (minor units), else `positive` on `field`. */
function positive(units: bigint, field: string): bigint {
  if (units <= 0n) throw invalidFields({ [field]: [problem('positive')] });
  return units;
}

/** A phone in any KH form, normalized; undefined when none was sent; else `format` on phone_number. */
function phoneOrFail(text: string | undefined): string | undefined {
  if (text === undefined || text === '') return undefined;
  const phone = normalizePhone(text);
  if (!phone) throw invalidFields({ phone_number: [problem('format')] });
  return phone;
}

// ---- The merchant's users ----

/** `YYYY-MM-DD HH:MM:SS` in UTC (interface "User record"). */
function formatDateTime(date: Date): string {
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

/** The interface's user record plus user_token and wallet_ref (a column left empty is absent). */
function userRecord(user: User) {
  const { email, phone_number, gender, address, birthday } = user;
  return {
    id: BigInt(user.id), avatar: user.avatar, currency: user.currency, userToken: user.user_token, walletRef: user.wallet_ref,
    firstName: user.first_name, lastName: user.last_name, fullName: user.full_name,
    createdAt: formatDateTime(user.created_at), updatedAt: formatDateTime(user.updated_at),
    email: email ?? undefined, phoneNumber: phone_number ?? undefined, gender: gender ?? undefined, address: address ?? undefined, birthday: birthday ?? undefined,
  };
}

/** The profile fields create_user and update_user both give onboarding. */
function profileOf(request: CreateUserRequest | UpdateUserRequest) {
  const { firstName: first_name, lastName: last_name, address, birthday, gender, description } = request;
  return { first_name, last_name, address, birthday, gender, description };
}

/**
 * create_user for the merchant the request proves: one of phone_number and email is required.
 * @throws DomainError VALIDATION_FAILED, DUPLICATE_PHONE_NUMBER, DUPLICATE_EMAIL
 */
async function createMerchantUser(deps: PlatformDeps, request: CreateUserRequest, context: HandlerContext) {
  const { merchantId } = await deps.merchantAuth.requireMerchant(request, context);
  if (!request.phoneNumber && !request.email) {
    throw invalidFields({ phone_number: [problem('required_without', 'phone_number', 'email')], email: [problem('required_without', 'email', 'phone_number')] });
  }
  const user = await createUser(deps, {
    ...profileOf(request),
    phone_number: phoneOrFail(request.phoneNumber),
    email: request.email || undefined,
    currency: walletCurrency(request.currency),
    merchant_id: merchantId,
  });
  return { user: userRecord(user) };
}

/**
 * The user an update_user names: `user_id` when sent, else the merchant's user with this phone number.
 * @throws DomainError USER_NOT_FOUND (on user_id, or on phone_number)
 */
async function userToUpdate(deps: PlatformDeps, merchantId: string, userId: string, phone: string | undefined): Promise<string> {
  if (userId) {
    await merchantUser(deps.database, merchantId, userId, 'user_id');
    return userId;
  }
  const found = phone ? await findUserByPhone(deps.database, phone) : undefined;
  if (!found || found.merchant_id !== merchantId) throw reasonError(WALLET_REASONS, 'USER_NOT_FOUND', 'user not found', { phone_number: [problem('not_found')] });
  return found.id;
}

/**
 * update_user for the merchant the request proves: the given fields of one of its users.
 * @throws DomainError VALIDATION_FAILED, USER_NOT_FOUND, DUPLICATE_PHONE_NUMBER, DUPLICATE_EMAIL
 */
async function updateMerchantUser(deps: PlatformDeps, request: UpdateUserRequest, context: HandlerContext) {
  const { merchantId } = await deps.merchantAuth.requireMerchant(request, context);
  walletCurrency(request.currency);
  const phone = phoneOrFail(request.phoneNumber);
  const user = await updateUser(deps, {
    ...profileOf(request),
    user_id: await userToUpdate(deps, merchantId, request.userId, phone),
    merchant_id: merchantId,
    phone_number: phone,
    email: request.email,
  });
  return { user: userRecord(user) };
}

// ---- Money movements: each RPC beside the ledger movement it makes ----

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

/** A wallet transfer's input, its parties still named by the request's user ids. */
interface TransferInput {
  merchantId: string;
  fromUserId: string;
  toUserId: string;
  amountUnits: bigint;
  currency: Currency;
  feesAmountUnits: bigint;
  /** The movement's public reference when the request's idempotency key fixed it; else a new one. */
  reference?: string;
}

/**
 * A transfer's ledger request and its event, once both parties are found and hold wallets in its currency:
 * `from` pays `amount_units` to `to` and `fees_amount_units` (may be 0) to the platform, one ledger transaction.
 * @throws USER_NOT_FOUND, WALLET_CURRENCY_MISMATCH
 */
async function transferMovement(parties: TransferPartyLookup, input: TransferInput) {
  const [from, to] = await transferParties(parties, input.merchantId, input.fromUserId, input.toUserId);
  checkWalletCurrency(from, input.currency, 'from_user_id');
  checkWalletCurrency(to, input.currency, 'to_user_id');
  const reference = input.reference ?? newReference('TRF');
  const postings: Array<Posting | PlatformPosting> = [
    { account_id: from.wallet_account_id, amount_units: -(input.amountUnits + input.feesAmountUnits) },
    { account_id: to.wallet_account_id, amount_units: input.amountUnits },
  ];
  if (input.feesAmountUnits > 0n) postings.push({ platform: 'fee_revenue', currency: input.currency, amount_units: input.feesAmountUnits });
  const owner = { type: 'merchant' as const, id: input.merchantId };
  const event = eventRowOf({
    owner,
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
  });
  const ledgerInput = {
    idempotency_key: walletMovementIdempotencyKey('transfer', reference),
    description: `wallet transfer ${reference}`,
    postings,
    metadata: { merchant_id: input.merchantId, reference, from_user_id: from.id, to_user_id: to.id },
  };
  return { reference, owner, event, ledgerInput };
}

/**
 * transfer: the movement (transferMovement) in one database transaction. Its event, and with `tail` the request's
 * stored answer and its journal row, are written in the ledger write's own statement (LedgerAlso): the transfer's
 * database work is BEGIN, the account locks, one write, COMMIT.
 * @returns the reference. @throws USER_NOT_FOUND, WALLET_CURRENCY_MISMATCH, INSUFFICIENT_FUNDS (on amount)
 */
async function transfer(
  deps: PlatformDeps,
  parties: TransferPartyLookup,
  input: TransferInput,
  tail: { completion?: IdempotencyCompletion<{ reference: string }>; journal?: RequestJournal } = {},
): Promise<string> {
  const { reference, owner, event, ledgerInput } = await transferMovement(parties, input);
  // The posting, its event, the stored answer and the journal row commit together. A re-run of the same request
  // (same reference) waits for the first on the accounts' locks, replays the posting under its key and finds its
  // event written (the event is written once: NOT EXISTS, read after those locks).
  await deps.database.transaction(async (trx) => {
    const also: LedgerAlso = { transaction_id: randomUUID(), parts: [], written: false };
    also.parts.push(
      eventWriteCtes(
        { ...event, ledger_transaction_id: also.transaction_id },
        { sql: 'NOT EXISTS (SELECT 1 FROM events WHERE owner_type = ? AND owner_id = ? AND subject = ? AND type = ?)', bindings: [owner.type, owner.id, reference, event.type] },
      ),
    );
    const answered = tail.completion?.part({ reference });
    if (answered) also.parts.push(answered);
    const journaledRow = tail.journal?.part?.(reference);
    if (journaledRow) also.parts.push(journaledRow);
    try {
      await deps.ledger.transfer(ledgerInput, trx, 'direct', also);
    } catch (error) {
      mapLedgerError(error);
    }
    // Answered from its key (a re-run): the rows are written here, the event still only once.
    if (!also.written) {
      await trx.raw(`WITH ${also.parts.map((part) => part.sql).join(', ')} SELECT 1`, also.parts.flatMap((part) => part.bindings) as never[]);
    }
    numberAfterCommit(trx, owner);
  });
  return reference;
}

/**
 * transfer in one statement (Ledger.transferAtOnce): the posting, its event, the request's keys claimed completed
 * with the answer, and its journal row: one round trip, no transaction around it. Anything that statement would not
 * accept (a refusal, a repeat of the request or of its keys) writes nothing and answers undefined: `transfer` then
 * answers it. Its event is written without looking for an earlier one: an event of this reference exists only
 * beside the ledger key the statement claims, so with it the statement writes nothing.
 * @returns the reference, or undefined. @throws USER_NOT_FOUND, WALLET_CURRENCY_MISMATCH (before any write)
 */
async function transferAtOnce(
  deps: PlatformDeps,
  parties: TransferPartyLookup,
  input: TransferInput,
  tail: { claim: IdempotencyClaim<{ reference: string }>; journal: RequestJournal },
): Promise<string | undefined> {
  const { reference, owner, event, ledgerInput } = await transferMovement(parties, input);
  const transaction_id = randomUUID();
  const parts = [eventWriteCtes({ ...event, ledger_transaction_id: transaction_id }), tail.claim.part({ reference })];
  const journaledRow = tail.journal.part?.(reference);
  if (journaledRow) parts.push(journaledRow);
  let written = false;
  try {
    written = (await deps.ledger.transferAtOnce(ledgerInput, { transaction_id, parts })) !== undefined;
  } finally {
    if (!written) tail.journal.notWritten?.();
  }
  if (!written) return undefined;
  numberSoon(deps.database, owner);
  return reference;
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
async function transferIdempotently(deps: PlatformDeps, parties: TransferPartyLookup, request: TransferRequest, context: HandlerContext) {
  const act = await deps.merchantAuth.requireMerchant(request, context);
  const currency = walletCurrency(request.currency);
  checkFees(request, currency);
  if (request.fromUserId === request.toUserId) throw invalidFields({ to_user_id: [problem('same_user')] });
  const amountUnits = positive(request.amountUnits, 'amount');
  const { fromUserId, toUserId, feesAmountUnits } = request;
  const input = (reference: string | undefined): TransferInput => ({ merchantId: act.merchantId, fromUserId, toUserId, amountUnits, currency, feesAmountUnits, reference });
  return journaled(
    deps,
    { owner_kind: 'merchant', owner_id: act.merchantId, action: 'area-c.transfer', idempotency_key: request.idempotencyKey, client_address: clientAddressOf(context) },
    (journal) =>
      answerIdempotently(
        deps.idempotency,
        movementRequest(act, request.idempotencyKey, 'area-c.transfer', [fromUserId, toUserId, amountUnits, currency, feesAmountUnits, request.feesCurrency]),
        TransferResponseSchema,
        async (ownKey, completion) => ({ reference: await transfer(deps, parties, input(ownKey && referenceFromKey('TRF', ownKey)), { completion, journal }) }),
        // First in one statement; a refusal or a repeat falls back to the steps above, which answer it.
        async (ownKey, claim) => {
          const reference = await transferAtOnce(deps, parties, input(referenceFromKey('TRF', ownKey)), { claim, journal });
          return reference === undefined ? undefined : { reference };
        },
      ),
    (answer) => answer.reference,
  );
}

/** The wallet paying a preorder: its ledger account, the paying user (null for the merchant), the field naming it. */
interface PreorderPayer {
  walletAccountId: string;
  userId: string | null;
  field: 'user_id' | 'pre_order_token';
}

/**
 * The merchant's own wallet in `currency` as a preorder's payer: the wallet the login answers (`wallet_ref`,
 * `balance`). The interface's pay_by_token names no payer (pre_order_token only), so without `user_id` the calling
 * merchant pays, on its own signed proof. @throws INSUFFICIENT_FUNDS (on amount) when it holds no such wallet
 */
async function merchantPayer(deps: PlatformDeps, merchantId: string, currency: Currency): Promise<PreorderPayer> {
  const account = await deps.ledger.findAccount({ owner_type: 'merchant', owner_id: merchantId, currency, kind: 'wallet' });
  if (!account) throw reasonError(WALLET_REASONS, 'INSUFFICIENT_FUNDS', 'no merchant wallet in the currency', { amount: [problem('insufficient_funds')] });
  return { walletAccountId: account.id, userId: null, field: 'pre_order_token' };
}

/**
 * pay_by_token: the payer pays the preorder: payer −amount, seller +(amount − commission), platform fee_revenue
 * +commission (commission_rate % half-up), one ledger transaction, in the same database transaction that marks the
 * preorder paid. The payer is the merchant's user `payerUserId` when sent (a platform extension), else the merchant's
 * own wallet (interface "pay by token": pre_order_token only). @returns the payment reference.
 * @throws PREORDER_NOT_FOUND, PREORDER_ALREADY_PAID (on pre_order_token), USER_NOT_FOUND (user_id), PAYER_IS_SELLER
 *   (on user_id, or pre_order_token for the merchant's own preorder), INSUFFICIENT_FUNDS (on amount)
 */
async function payByToken(
  deps: PlatformDeps,
  input: { merchantId: string; preOrderToken: string; payerUserId: string; reference?: string },
): Promise<string> {
  const user = input.payerUserId ? await merchantUser(deps.database, input.merchantId, input.payerUserId, 'user_id') : undefined;
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
  if (user) checkWalletCurrency(user, found.currency, 'user_id');
  const payer: PreorderPayer = user
    ? { walletAccountId: user.wallet_account_id, userId: user.id, field: 'user_id' }
    : await merchantPayer(deps, input.merchantId, found.currency);
  const sellerAccount = await sellerAccountId(deps, input.merchantId, found.seller_code, found.currency);
  if (sellerAccount === payer.walletAccountId) {
    throw reasonError(WALLET_REASONS, 'PAYER_IS_SELLER', 'payer is the seller', { [payer.field]: [problem('payer_is_seller')] });
  }
  const reference = input.reference ?? newReference('PAY');
  const webhookId = await deps.database.transaction(async (trx) => {
    let paid: PreorderPayment;
    try {
      paid = await payPreorder(deps, trx, {
        preOrderToken: found.token,
        sourceAccountId: payer.walletAccountId,
        sellerAccountId: sellerAccount,
        reference,
        idempotencyKey: walletMovementIdempotencyKey('pay', reference),
        paidByUserId: payer.userId,
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

/**
 * pay_by_token: the merchant's user (`user_id`), or the merchant itself without one, pays a preorder of the merchant.
 * @throws DomainError PREORDER_NOT_FOUND, PREORDER_ALREADY_PAID, USER_NOT_FOUND, PAYER_IS_SELLER, INSUFFICIENT_FUNDS
 */
async function payByTokenIdempotently(deps: PlatformDeps, request: PayByTokenRequest, context: HandlerContext) {
  const act = await deps.merchantAuth.requireMerchant(request, context);
  const pay = (reference?: string) => payByToken(deps, { merchantId: act.merchantId, preOrderToken: request.preOrderToken, payerUserId: request.userId, reference });
  return answerIdempotently(
    deps.idempotency,
    movementRequest(act, request.idempotencyKey, 'area-c.pay_by_token', [request.preOrderToken, request.userId]),
    PayByTokenResponseSchema,
    async (ownKey) => ({ reference: await pay(ownKey && referenceFromKey('PAY', ownKey)) }),
  );
}

// ---- Blocked money ----

/**
 * block_money: holds `amountUnits` on the user's wallet (pending transfer user wallet → platform holds).
 * @returns transaction_ref. @throws USER_NOT_FOUND (on user_token), INSUFFICIENT_FUNDS (on amount)
 */
async function blockMoney(
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
 * block_money: a hold on the user's wallet.
 * @throws DomainError VALIDATION_FAILED, USER_NOT_FOUND, WALLET_CURRENCY_MISMATCH, INSUFFICIENT_FUNDS
 */
async function blockMoneyIdempotently(deps: PlatformDeps, request: BlockMoneyRequest, context: HandlerContext) {
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
 * cancel_block_money: voids the hold, exactly once.
 * @throws BLOCKED_MONEY_NOT_FOUND, BLOCKED_MONEY_ALREADY_CANCELLED (both on transaction_ref)
 */
async function cancelBlockMoney(deps: PlatformDeps, input: { merchantId: string; transactionRef: string }): Promise<void> {
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

/**
 * cancel_block_money: releases a hold once; a repeat of the same signed body answers its first answer.
 * @throws DomainError BLOCKED_MONEY_NOT_FOUND, BLOCKED_MONEY_ALREADY_CANCELLED
 */
async function cancelBlockMoneyIdempotently(deps: PlatformDeps, request: CancelBlockMoneyRequest, context: HandlerContext) {
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

// ---- Preorders, the banks page and the service ----

/**
 * generate_pre_order_token: a pending preorder of the merchant, paid later by any path.
 * @throws DomainError VALIDATION_FAILED (currency, amount, a call_back_url that is no public destination),
 *   SELLER_NOT_FOUND, DUPLICATE_OUT_TRADE_NO
 */
async function generatePreOrderToken(deps: PlatformDeps, request: GeneratePreOrderTokenRequest, context: HandlerContext) {
  const { merchantId } = await deps.merchantAuth.requireMerchant(request, context);
  const currency = walletCurrency(request.currency);
  // The platform calls call_back_url itself once the preorder is paid: it must be a public destination.
  if (request.callBackUrl && deps.outbound.checkUrl(request.callBackUrl)) throw invalidFields({ call_back_url: [problem('public_url')] });
  const { token, url } = await generatePreOrder(deps, {
    merchantId,
    outTradeNo: request.outTradeNo,
    sellerCode: request.sellerCode,
    description: request.description,
    amountUnits: positive(request.amountUnits, 'amount'),
    currency,
    redirectUrl: request.redirectUrl,
    commissionRate: request.commissionRate,
    callBackUrl: request.callBackUrl,
  });
  return { preOrderToken: token, preOrderUrl: url };
}

/** list_banks: one page of the bank catalog. @throws DomainError VALIDATION_FAILED (page, per_page) */
async function listBankPage(deps: PlatformDeps, request: ListBanksRequest, context: HandlerContext) {
  await deps.merchantAuth.requireMerchant(request, context);
  const page = request.page || 1;
  const perPage = request.perPage || BANK_PAGE_DEFAULT;
  const problems: Record<string, string[]> = {};
  if (page < 1) problems.page = [problem('min', 1)];
  if (perPage < 1 || perPage > BANK_PAGE_MAX) problems.per_page = [perPage < 1 ? problem('min', 1) : problem('max', BANK_PAGE_MAX)];
  if (Object.keys(problems).length) throw invalidFields(problems);
  return listBanks(deps.database, page, perPage);
}

export function createWalletService(deps: PlatformDeps): ServiceImpl<typeof WalletService> {
  const parties = transferPartyLookup(deps);
  return {
    login: (request, context) => login(deps, request, context),
    authenticateAction: (request) => authenticateAction(deps, request),
    async listFees(request, context) {
      await deps.merchantAuth.requireMerchant(request, context);
      return listFees(deps.database);
    },
    generatePreOrderToken: (request, context) => generatePreOrderToken(deps, request, context),
    createUser: (request, context) => createMerchantUser(deps, request, context),
    updateUser: (request, context) => updateMerchantUser(deps, request, context),
    payByToken: (request, context) => payByTokenIdempotently(deps, request, context),
    transfer: (request, context) => transferIdempotently(deps, parties, request, context),
    listBanks: (request, context) => listBankPage(deps, request, context),
    blockMoney: (request, context) => blockMoneyIdempotently(deps, request, context),
    cancelBlockMoney: (request, context) => cancelBlockMoneyIdempotently(deps, request, context),
  };
}
