/**
 * The /do-action service table of Area C. Each entry reads its fields from the body (field rules in
 * src/wallet/contract.ts), calls one WalletService RPC and shapes `data`. Another engineer adds services (e.g.
 * tokenization, deposits, confirm_payments) by exporting a table of the same type from their own file and listing
 * it in `service-tables.ts`.
 */
import type { CallOptions } from '@connectrpc/connect';
import { parseJsonLossless } from '../../src/money';
import type { PlatformClients } from '../../src/rpc/clients';
import {
  readBlockMoney,
  readCancelBlockMoney,
  readCreateUser,
  readGeneratePreOrderToken,
  readListBanks,
  readPayByToken,
  readTransfer,
  readUpdateUser,
} from './wallet-fields';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { ActionAuthSchema, UserRecord } from '../../src/gen/payments/wallet/v1/wallet_pb';

/**
 * What a service handler gets: the parsed (lossless) body and `caller`, to spread into the RPC request: it carries
 * the call's authentication (ActionAuth: merchant headers, session token and the raw signed body), which the service
 * verifies and binds its typed fields to before acting, so a /do-action call costs one RPC.
 */
export interface MerchantActionContext {
  body: Record<string, unknown>;
  caller: { merchantId: string; auth: MessageInitShape<typeof ActionAuthSchema> };
  clients: PlatformClients;
  /** Pass on every RPC (carries the request id header). */
  callOptions: CallOptions;
  /**
   * The `Idempotency-Key` header ("" when none), for money-moving services. The api answers a repeat of the signed
   * body (and of its signed `request_id`) with its first answer whatever this header; the header may only narrow.
   */
  idempotencyKey: string;
  /** `<PUBLIC_BASE_URL><MERCHANT_PREFIX>`: where the hosted pages' forms post (html_confirm_payment). */
  pageBaseUrl: string;
}

/** Returns the success `data`; throws DomainError (field violations) or an RPC error. */
export type MerchantServiceHandler = (context: MerchantActionContext) => Promise<unknown>;

/** service name → handler. */
export type MerchantServiceTable = Readonly<Record<string, MerchantServiceHandler>>;

/** The user record as the interface lists it, plus user_token and wallet_ref. */
export function userRecordJson(user: UserRecord | undefined): Record<string, unknown> {
  if (!user) return {};
  return {
    id: user.id,
    email: user.email ?? null,
    avatar: user.avatar,
    created_at: user.createdAt,
    updated_at: user.updatedAt,
    phone_number: user.phoneNumber ?? null,
    gender: user.gender ?? null,
    first_name: user.firstName,
    last_name: user.lastName,
    full_name: user.fullName,
    address: user.address ?? null,
    birthday: user.birthday ?? null,
    currency: user.currency,
    user_token: user.userToken,
    wallet_ref: user.walletRef,
  };
}

/** The core wallet services. */
export const coreMerchantServices: MerchantServiceTable = {
  async list_fees({ caller, clients, callOptions }) {
    const answer = await clients.wallet.listFees({ ...caller }, callOptions);
    return { FEE: parseJsonLossless(answer.feeJson), EXCHANGE_RATE: parseJsonLossless(answer.exchangeRateJson) };
  },

  async generate_pre_order_token({ body, caller, clients, callOptions }) {
    const fields = readGeneratePreOrderToken(body);
    const answer = await clients.wallet.generatePreOrderToken({ ...caller, ...fields }, callOptions);
    return { pre_order_token: answer.preOrderToken, pre_order_url: answer.preOrderUrl };
  },

  async create_user({ body, caller, clients, callOptions }) {
    const fields = readCreateUser(body);
    const answer = await clients.wallet.createUser({ ...caller, ...fields }, callOptions);
    return userRecordJson(answer.user);
  },

  async update_user({ body, caller, clients, callOptions }) {
    const fields = readUpdateUser(body);
    const answer = await clients.wallet.updateUser({ ...caller, ...fields }, callOptions);
    return userRecordJson(answer.user);
  },

  async pay_by_token({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = readPayByToken(body);
    const answer = await clients.wallet.payByToken({ ...caller, ...fields, idempotencyKey }, callOptions);
    return { reference: answer.reference };
  },

  async transfer({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = readTransfer(body);
    const answer = await clients.wallet.transfer({ ...caller, ...fields, idempotencyKey }, callOptions);
    return { reference: answer.reference };
  },

  async list_banks({ body, caller, clients, callOptions }) {
    const fields = readListBanks(body);
    const answer = await clients.wallet.listBanks({ ...caller, ...fields }, callOptions);
    return {
      current_page: answer.currentPage,
      data: answer.data.map((bank) => ({ id: bank.id, name: bank.name, region: bank.region, city: bank.city, logo: bank.logo })),
      from: answer.from ?? null,
      last_page: answer.lastPage,
      per_page: answer.perPage,
      to: answer.to ?? null,
      total: answer.total,
    };
  },

  async block_money({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = readBlockMoney(body);
    const answer = await clients.wallet.blockMoney({ ...caller, ...fields, idempotencyKey }, callOptions);
    return { transaction_ref: answer.transactionRef };
  },

  async cancel_block_money({ body, caller, clients, callOptions, idempotencyKey }) {
    const fields = readCancelBlockMoney(body);
    await clients.wallet.cancelBlockMoney({ ...caller, ...fields, idempotencyKey }, callOptions);
    return [];
  },
};
