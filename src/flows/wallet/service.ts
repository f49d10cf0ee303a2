/**
 * WalletService (Area C of payment-services-interface.md, platform decisions §7 and §8): merchant login and
 * per-call authentication, and one RPC per /do-action wallet service. Every service RPC acts for the merchant its
 * ActionAuth proves, and only as its signed body says (src/merchant-auth); a money movement answers every repeat of
 * its signed body with its first answer (src/idempotency, docs/idempotency.md). Business rules live here and in
 * catalog.ts; money moves only through activities.ts.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { DomainError, invalidFields, reasonError } from '../../errors';
import {
  BlockMoneyResponseSchema,
  CancelBlockMoneyResponseSchema,
  PayByTokenResponseSchema,
  TransferResponseSchema,
  type WalletService,
} from '../../gen/payments/wallet/v1/wallet_pb';
import { answerIdempotently } from '../../idempotency';
import { referenceFromKey } from '../../references';
import { isCurrency, type Currency } from '../../money';
import { createUser, findUserByPhone, normalizePhone, updateUser, verifyMerchantApiLogin, type User } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
import { listBanks, listFees } from './catalog';
import { MERCHANT_AUTH_REASONS, movementKeys, openSession } from '../../merchant-auth';
import { merchantApiUser, merchantUser, transferPartyLookup } from '../../merchant-users';
import { generatePreOrder } from '../../preorders';
import { blockMoney, cancelBlockMoney, payByToken, transfer } from './activities';
import { BANK_PAGE_DEFAULT, BANK_PAGE_MAX, WALLET_CURRENCIES, WALLET_REASONS } from './contract';
import { problem } from '../../field-problems';

/** `YYYY-MM-DD HH:MM:SS` in UTC (interface "User record"). */
export function formatDateTime(date: Date): string {
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

/** The interface's user record plus user_token and wallet_ref. */
export function userRecord(user: User) {
  return {
    id: BigInt(user.id),
    email: user.email ?? undefined,
    avatar: user.avatar,
    createdAt: formatDateTime(user.created_at),
    updatedAt: formatDateTime(user.updated_at),
    phoneNumber: user.phone_number ?? undefined,
    gender: user.gender ?? undefined,
    firstName: user.first_name,
    lastName: user.last_name,
    fullName: user.full_name,
    address: user.address ?? undefined,
    birthday: user.birthday ?? undefined,
    currency: user.currency,
    userToken: user.user_token,
    walletRef: user.wallet_ref,
  };
}


function walletCurrency(value: string, field = 'currency'): Currency {
  if (!isCurrency(value) || !WALLET_CURRENCIES.includes(value)) throw invalidFields({ [field]: [problem('currency')] });
  return value;
}

function positive(units: bigint, field: string): bigint {
  if (units <= 0n) throw invalidFields({ [field]: [problem('positive')] });
  return units;
}

/** Normalizes a phone in any KH form, else invalid on phone_number. */
function phoneOrFail(text: string | undefined): string | undefined {
  if (text === undefined || text === '') return undefined;
  const phone = normalizePhone(text);
  if (!phone) throw invalidFields({ phone_number: [problem('format')] });
  return phone;
}

export function createWalletService(deps: PlatformDeps): ServiceImpl<typeof WalletService> {
  const { database } = deps;
  const parties = transferPartyLookup(deps);
  // The merchant each request acts for is the one its ActionAuth proves (src/merchant-auth), never an asserted id.
  const { requireMerchant } = deps.merchantAuth;
  return {
    /**
     * C1. The signed body must carry a `timestamp` within MERCHANT_LOGIN_WINDOW_SECONDS and is accepted once
     * (src/merchant-auth `authenticateLogin`), so a captured login opens no session later. Failed logins are counted
     * per merchant-id header and per client address (src/abuse); past the limit every attempt, right or wrong,
     * answers RATE_LIMITED until the window ends.
     * @throws DomainError MERCHANT_UNAUTHENTICATED, INVALID_SIGNATURE, LOGIN_TIMESTAMP_INVALID, LOGIN_REPLAYED,
     *   LOGIN_FAILED, RATE_LIMITED
     */
    async login(request, context) {
      const envelope = request.envelope;
      const address = clientAddressOf(context);
      const credential = envelope?.merchantId ?? '';
      const attempt = await deps.abuse.beginAttempt('merchant_login', credential, address);
      let merchant;
      try {
        merchant = await deps.merchantAuth.authenticateLogin(request);
        const merchantId = merchant.id;
        const ok = await deps.abuse.hashing(
          () => verifyMerchantApiLogin(database, merchantId, { user_name: request.userName, password: request.password }),
          context.signal,
        );
        if (!ok) {
          throw reasonError(MERCHANT_AUTH_REASONS, 'LOGIN_FAILED', 'login failed', { user_name_password: [problem('login')] });
        }
      } catch (error) {
        await (error instanceof DomainError && error.kind !== 'internal' ? attempt.failed() : attempt.withdrawn());
        throw error;
      }
      await attempt.succeeded();
      const ttl = deps.config.MERCHANT_SESSION_TTL_SECONDS;
      const token = await openSession(database, merchant.id, ttl);
      const profile = await merchantApiUser(database, merchant.id);
      const account = await deps.ledger.findAccount({ owner_type: 'merchant', owner_id: merchant.id, currency: 'USD', kind: 'wallet' });
      return {
        token,
        expiresInSeconds: BigInt(ttl),
        user: {
          id: BigInt(profile.id),
          avatar: profile.avatar,
          fkSoc: BigInt(profile.fk_soc),
          timeZone: profile.time_zone ?? undefined,
          fullName: merchant.name,
          balanceUnits: account?.available_units ?? 0n,
          walletRef: profile.wallet_ref,
          walletId: BigInt(profile.wallet_id),
          currency: 'USD',
        },
      };
    },

    /** An action the façade answers itself (no or unknown service, unreadable fields): counted like any other. */
    async authenticateAction(request) {
      const { merchantId } = await deps.merchantAuth.authenticateAction(request.envelope, request.sessionToken);
      await deps.abuse.consumeRequest(`merchant:${merchantId}`);
      return { merchantId };
    },

    async listFees(request, context) {
      await requireMerchant(request, context);
      return listFees(database);
    },

    async generatePreOrderToken(request, context) {
      const { merchantId } = await requireMerchant(request, context);
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
    },

    async createUser(request, context) {
      const { merchantId } = await requireMerchant(request, context);
      if (!request.phoneNumber && !request.email) {
        throw invalidFields({ phone_number: [problem('required_without', 'phone_number', 'email')], email: [problem('required_without', 'email', 'phone_number')] });
      }
      const user = await createUser(deps, {
        phone_number: phoneOrFail(request.phoneNumber),
        email: request.email || undefined,
        first_name: request.firstName,
        last_name: request.lastName,
        address: request.address,
        birthday: request.birthday,
        gender: request.gender,
        description: request.description,
        currency: walletCurrency(request.currency),
        merchant_id: merchantId,
      });
      return { user: userRecord(user) };
    },

    async updateUser(request, context) {
      const { merchantId } = await requireMerchant(request, context);
      walletCurrency(request.currency);
      const phone = phoneOrFail(request.phoneNumber);
      let userId = request.userId;
      if (!userId) {
        // No user_id: the user is the merchant's user with this phone number.
        const found = phone ? await findUserByPhone(database, phone) : undefined;
        if (!found || found.merchant_id !== merchantId) {
          throw reasonError(WALLET_REASONS, 'USER_NOT_FOUND', 'user not found', { phone_number: [problem('not_found')] });
        }
        userId = found.id;
      } else {
        await merchantUser(database, merchantId, userId, 'user_id');
      }
      const user = await updateUser(deps, {
        user_id: userId,
        merchant_id: merchantId,
        phone_number: phone,
        first_name: request.firstName,
        last_name: request.lastName,
        address: request.address,
        birthday: request.birthday,
        gender: request.gender,
        description: request.description,
        email: request.email,
      });
      return { user: userRecord(user) };
    },

    async payByToken(request, context) {
      const act = await requireMerchant(request, context);
      const { merchantId } = act;
      const pay = (reference?: string) => payByToken(deps, { merchantId, preOrderToken: request.preOrderToken, payerUserId: request.userId, reference });
      return answerIdempotently(
        deps.idempotency,
        {
          scope: `merchant:${merchantId}`,
          ...movementKeys(act, request.idempotencyKey),
          operation: 'area-c.pay_by_token',
          parameters: [request.preOrderToken, request.userId],
        },
        PayByTokenResponseSchema,
        async (ownKey) => ({ reference: await pay(ownKey && referenceFromKey('PAY', ownKey)) }),
      );
    },

    async transfer(request, context) {
      const act = await requireMerchant(request, context);
      const { merchantId } = act;
      const currency = walletCurrency(request.currency);
      if (request.feesAmountUnits < 0n) throw invalidFields({ fees_amount: [problem('not_negative')] });
      if (request.feesAmountUnits > 0n && request.feesCurrency !== currency) {
        throw invalidFields({ fees_currency: [problem(request.feesCurrency ? 'fees_currency_mismatch' : 'fees_currency_required')] });
      }
      if (request.fromUserId === request.toUserId) throw invalidFields({ to_user_id: [problem('same_user')] });
      const amountUnits = positive(request.amountUnits, 'amount');
      const move = (reference?: string) =>
        transfer(deps, parties, { merchantId, fromUserId: request.fromUserId, toUserId: request.toUserId, amountUnits, currency, feesAmountUnits: request.feesAmountUnits, reference });
      return answerIdempotently(
        deps.idempotency,
        {
          scope: `merchant:${merchantId}`,
          ...movementKeys(act, request.idempotencyKey),
          operation: 'area-c.transfer',
          parameters: [request.fromUserId, request.toUserId, amountUnits, currency, request.feesAmountUnits, request.feesCurrency],
        },
        TransferResponseSchema,
        async (ownKey) => ({ reference: await move(ownKey && referenceFromKey('TRF', ownKey)) }),
      );
    },

    async listBanks(request, context) {
      await requireMerchant(request, context);
      const page = request.page || 1;
      const perPage = request.perPage || BANK_PAGE_DEFAULT;
      const problems: Record<string, string[]> = {};
      if (page < 1) problems.page = [problem('min', 1)];
      if (perPage < 1 || perPage > BANK_PAGE_MAX) problems.per_page = [perPage < 1 ? problem('min', 1) : problem('max', BANK_PAGE_MAX)];
      if (Object.keys(problems).length) throw invalidFields(problems);
      return listBanks(database, page, perPage);
    },

    async blockMoney(request, context) {
      const act = await requireMerchant(request, context);
      const { merchantId } = act;
      const amountUnits = positive(request.amountUnits, 'amount');
      const currency = walletCurrency(request.currency);
      const block = (transactionRef?: string) =>
        blockMoney(deps, { merchantId, userToken: request.userToken, amountUnits, currency, reference: request.reference, transactionRef });
      return answerIdempotently(
        deps.idempotency,
        {
          scope: `merchant:${merchantId}`,
          ...movementKeys(act, request.idempotencyKey),
          operation: 'area-c.block_money',
          parameters: [request.userToken, amountUnits, currency, request.reference],
        },
        BlockMoneyResponseSchema,
        async (ownKey) => ({ transactionRef: await block(ownKey && referenceFromKey('BLK', ownKey)) }),
      );
    },

    /** Releases a hold once; a repeat of the same signed body answers its first answer. */
    async cancelBlockMoney(request, context) {
      const act = await requireMerchant(request, context);
      const { merchantId } = act;
      return answerIdempotently(
        deps.idempotency,
        { scope: `merchant:${merchantId}`, ...movementKeys(act, request.idempotencyKey), operation: 'area-c.cancel_block_money', parameters: [request.transactionRef] },
        CancelBlockMoneyResponseSchema,
        async () => {
          await cancelBlockMoney(deps, { merchantId, transactionRef: request.transactionRef });
          return {};
        },
      );
    },
  };
}
