/**
 * PayinService (Area B, platform decisions §4, §5, §8): the business rules of the crypto payin portal. Payins are
 * recorded with a workflow-start outbox row and forwarded upstream; status and balances are answered from the
 * database and the ledger; upstream notifications are verified, recorded once and handed to the PayinWorkflow
 * (id = invoice_reference) by reference, with Update-with-Start, within the upstream's patience (platform decisions
 * §4: it waits 10 s); what did not get through is handed over by the dispatcher (./outbox.ts).
 *
 * The service object authenticates the merchant's API key and wires each RPC to its step: B1 (./create.ts), the
 * upstream's notifications (./notifications.ts), status and balances (here).
 *
 * Errors: PAYIN_SERVICE_REASONS (./reasons.ts). The Area B façade turns them into the documented messages
 * (rest-facade/payin/contract.ts).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { changeAwareCache } from '../../auth-changes';
import { sha256Hex } from '../../crypto/secrets';
import { COMMON_REASONS, invalidFields, reasonError } from '../../errors';
import { problem } from '../../field-problems';
import { CreatePayinResponseSchema, type PayinService } from '../../gen/payments/payin/v1/payin_pb';
import { journaled } from '../../events';
import { answerIdempotently } from '../../idempotency';
import { CURRENCIES, decimalsOf } from '../../money';
import { findMerchantByApiKey, type Merchant } from '../../onboarding/merchants';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
import { listWebhookDeliveries, redeliverWebhook } from '../../webhooks';
import { PAYIN_REASONS } from './contract';
import { createPayin } from './create';
import { applyUpstreamNotification } from './notifications';
import { findLatestPayin, type PayinRow } from './store';
import type { RefundNotificationReceiver } from './upstream-refunds';

export { newInvoiceReference } from './create';
export { applyRecordedNotification, notifyPayin, type PayinNotification } from './notifications';

/** Most API keys remembered by one process. */
const API_KEY_CACHE_MAX = 10_000;

function payinMessage(row: PayinRow) {
  return {
    invoiceReference: row.invoice_reference,
    outTradeNo: row.out_trade_no,
    amountUnits: row.amount_units,
    paidAmountUnits: row.paid_amount_units ?? 0n,
    feeUnits: row.fee_units,
    currency: row.currency,
    status: row.status,
    trxRef: row.trx_ref ?? '',
    late: row.late,
    paymentMatchStatus: row.payment_match_status ?? '',
  };
}

/** Checks a merchant's API key (see apiKeyAuthentication). */
export type ApiKeyAuthentication = (api_key: string, context: HandlerContext) => Promise<Merchant>;

/**
 * The merchant owning an API key. Active merchants are remembered by SHA-256 of their key for AUTH_CACHE_SECONDS
 * (an unknown or suspended key is looked up every time; a suspension announced through `authChanges` empties the
 * cache at once). Unknown keys are counted per key and per client address (src/abuse): past the limit the address's
 * next unknown keys answer RATE_LIMITED; a verified merchant's calls count against its request rate.
 * @throws DomainError UNAUTHENTICATED (unknown or missing key), MERCHANT_SUSPENDED, RATE_LIMITED
 */
export function apiKeyAuthentication(deps: PlatformDeps): ApiKeyAuthentication {
  const apiKeys = changeAwareCache<Merchant>(deps.authChanges, { ttlSeconds: deps.config.AUTH_CACHE_SECONDS, max: API_KEY_CACHE_MAX });
  const merchantOfApiKey = (api_key: string) =>
    apiKeys.get(sha256Hex(api_key), () => findMerchantByApiKey(deps.database, api_key), (merchant) => merchant.status === 'active');
  return async (api_key, context) => {
    const merchant = api_key ? await merchantOfApiKey(api_key) : undefined;
    if (!merchant) {
      // A key is 256 random bits: only a wrong one is counted (a valid key is no guess), and an address past its
      // failures gets RATE_LIMITED instead of another "unknown key". Only a digest of the key names it.
      await (await deps.abuse.beginAttempt('api_key', sha256Hex(api_key).slice(0, 32), clientAddressOf(context))).failed();
      throw reasonError(COMMON_REASONS, 'UNAUTHENTICATED', 'invalid or missing API key');
    }
    if (merchant.status !== 'active') throw reasonError(PAYIN_REASONS, 'MERCHANT_SUSPENDED');
    await deps.abuse.consumeRequest(`merchant:${merchant.id}`);
    return merchant;
  };
}

/** B3: the merchant's wallets, in the order of CURRENCIES (minor units). */
async function balances(deps: PlatformDeps, merchant: Merchant) {
  const accounts = (await deps.ledger.accountsOf('merchant', merchant.id)).filter((account) => account.kind === 'wallet');
  accounts.sort((a, b) => CURRENCIES.indexOf(a.currency) - CURRENCIES.indexOf(b.currency));
  return {
    wallets: accounts.map((account) => ({
      currency: account.currency,
      availableUnits: account.available_units,
      postedUnits: account.posted_units,
      decimals: decimalsOf(account.currency),
    })),
  };
}

/**
 * @param authenticate the API-key check, shared with the EventsService's Area B proof by the composition root (one
 *   cache of keys); built here when not given
 * @param refunds where verified refund notifications go (the refund flow); absent: every notification is a payin's
 */
export function createPayinService(
  deps: PlatformDeps,
  authenticate: ApiKeyAuthentication = apiKeyAuthentication(deps),
  refunds?: RefundNotificationReceiver,
): ServiceImpl<typeof PayinService> {
  return {
    async authenticateApiKey(request, context) {
      await authenticate(request.apiKey, context);
      return {};
    },

    async createPayin(request, context) {
      const merchant = await authenticate(request.apiKey, context);
      // A retry with the same Idempotency-Key answers the first payin (its QR included) instead of a "taken" 422.
      const parameters = [request.amountUnits, request.currency, request.memo ?? null, request.outTradeNo];
      const idempotent = { scope: `merchant:${merchant.id}`, key: request.idempotencyKey, operation: 'area-b.create_payin', parameters };
      const origin = { owner_kind: 'merchant' as const, owner_id: merchant.id, action: 'area-b.create_payin', idempotency_key: request.idempotencyKey, client_address: clientAddressOf(context) };
      return journaled(
        deps,
        origin,
        () => answerIdempotently(deps.idempotency, idempotent, CreatePayinResponseSchema, (ownKey) => createPayin(deps, merchant, request, ownKey)),
        (answer) => answer.invoiceReference,
      );
    },

    async getPayinStatus(request, context) {
      const merchant = await authenticate(request.apiKey, context);
      const row = await findLatestPayin(deps.database, merchant.id, request.outTradeNo);
      if (!row) throw reasonError(PAYIN_REASONS, 'PAYIN_NOT_FOUND');
      return { payin: payinMessage(row) };
    },

    getBalances: async (request, context) => balances(deps, await authenticate(request.apiKey, context)),

    applyUpstreamNotification: (request, context) =>
      journaled(deps, { owner_kind: 'upstream', action: 'area-b.upstream_notification', client_address: clientAddressOf(context) }, () => applyUpstreamNotification(deps, request, refunds), (answer) => answer.invoiceReference),

    async listWebhookDeliveries(request) {
      if (!request.merchantId) throw invalidFields({ merchant_id: [problem('required')] });
      return { deliveries: await listWebhookDeliveries(deps, request.merchantId) };
    },

    redeliverWebhook: async (request) => ({ delivery: await redeliverWebhook(deps, request.webhookId) }),
  };
}
