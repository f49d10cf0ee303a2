/**
 * WalletService (Area C of payment-services-interface.md, platform decisions §7 and §8): merchant login and
 * per-call authentication (./login.ts), and one RPC per /do-action wallet service: the merchant's users
 * (create_user, update_user), its money movements (pay_by_token, transfer, block_money, cancel_block_money), its
 * preorders and the catalog's pages (./catalog.ts). Every service RPC acts for the merchant its ActionAuth proves,
 * and only as its signed body says (src/merchant-auth); checks its typed fields again (the façade's rules ran before,
 * but a trusted caller's request did not pass them); and a money movement answers every repeat of its signed body
 * (or of its request_id or Idempotency-Key) with its first answer (src/idempotency, docs/idempotency.md), moving
 * money only through ./activities.ts.
 *
 * Errors: WALLET_SERVICE_REASONS (./reasons.ts).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { invalidFields, reasonError } from '../../errors';
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
import { journaled } from '../../events';
import { answerIdempotently, movementRequest, referenceFromKey } from '../../idempotency';
import { merchantUser, transferPartyLookup, type TransferPartyLookup } from '../../merchant-users';
import { isCurrency, type Currency } from '../../money';
import { createUser, findUserByPhone, normalizePhone, updateUser, type User } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { generatePreOrder } from '../../preorders';
import { clientAddressOf } from '../../rpc/client-address';
import { blockMoney, cancelBlockMoney, payByToken, transfer } from './activities';
import { listBanks, listFees } from './catalog';
import { BANK_PAGE_DEFAULT, BANK_PAGE_MAX, WALLET_CURRENCIES, WALLET_REASONS } from './contract';
import { authenticateAction, login } from './login';

// ---- Checks of typed request fields: each refusal is VALIDATION_FAILED with a field problem code on the field ----

/** A currency Area C services accept, else `currency` on `field`. */
function walletCurrency(value: string, field = 'currency'): Currency {
  if (!isCurrency(value) || !WALLET_CURRENCIES.includes(value)) throw invalidFields({ [field]: [problem('currency')] });
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

// ---- Money movements ----

/**
 * pay_by_token: the merchant's user pays a preorder of the merchant.
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
  const move = (reference?: string) => transfer(deps, parties, { merchantId: act.merchantId, fromUserId, toUserId, amountUnits, currency, feesAmountUnits, reference });
  return journaled(
    deps,
    { owner_kind: 'merchant', owner_id: act.merchantId, action: 'area-c.transfer', idempotency_key: request.idempotencyKey, client_address: clientAddressOf(context) },
    () =>
      answerIdempotently(
        deps.idempotency,
        movementRequest(act, request.idempotencyKey, 'area-c.transfer', [fromUserId, toUserId, amountUnits, currency, feesAmountUnits, request.feesCurrency]),
        TransferResponseSchema,
        async (ownKey) => ({ reference: await move(ownKey && referenceFromKey('TRF', ownKey)) }),
      ),
    (answer) => answer.reference,
  );
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
