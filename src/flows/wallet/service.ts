/**
 * WalletService (Area C of payment-services-interface.md, platform decisions §7 and §8): merchant login and
 * per-call authentication, and one RPC per /do-action wallet service. Every service RPC acts for the merchant its
 * ActionAuth proves, and only as its signed body says (src/merchant-auth); a money movement answers every repeat of
 * its signed body with its first answer (src/idempotency, docs/idempotency.md). The service object only wires each
 * RPC to its step: the login (./login.ts), the merchant's users (./users.ts), the money movements (./movements.ts,
 * moving money only through ./activities.ts) and the catalog (./catalog.ts).
 *
 * Errors: WALLET_SERVICE_REASONS (./reasons.ts).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { invalidFields } from '../../errors';
import { problem } from '../../field-problems';
import type { GeneratePreOrderTokenRequest, ListBanksRequest, WalletService } from '../../gen/payments/wallet/v1/wallet_pb';
import { transferPartyLookup } from '../../merchant-users';
import type { PlatformDeps } from '../../platform-deps';
import { generatePreOrder } from '../../preorders';
import { listBanks, listFees } from './catalog';
import { positive, walletCurrency } from './checks';
import { BANK_PAGE_DEFAULT, BANK_PAGE_MAX } from './contract';
import { authenticateAction, login } from './login';
import { blockMoneyIdempotently, cancelBlockMoneyIdempotently, payByTokenIdempotently, transferIdempotently } from './movements';
import { createMerchantUser, updateMerchantUser } from './users';

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
