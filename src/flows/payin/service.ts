/**
 * PayinService (Area B, platform decisions §4, §5, §8): the business rules of the crypto payin portal. Payins are
 * recorded with a workflow-start outbox row and forwarded upstream; status and balances are answered from the
 * database and the ledger; upstream notifications are verified, recorded once and handed to the PayinWorkflow
 * (id = invoice_reference) by reference, with Update-with-Start, within the upstream's patience (platform decisions
 * §4: it waits 10 s); what did not get through is handed over by the dispatcher (./outbox.ts).
 *
 * The service object authenticates the merchant's API key (`deps.merchantAuth.requireApiKey`, src/merchant-auth) and
 * wires each RPC to its step: B1 (./create.ts), status and balances (here). The upstream's notifications
 * (ApplyUpstreamNotification) are served by the upstream's door (src/upstream/notifications.ts), which hands a payin's
 * to ./notifications.ts; the composition root wires that RPC.
 *
 * Errors: PAYIN_SERVICE_REASONS (./reasons.ts). The Area B façade turns them into the documented messages
 * (rest-facade/payin/contract.ts).
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { invalidFields, reasonError } from '../../errors';
import { problem } from '../../field-problems';
import { CreatePayinResponseSchema, type PayinService } from '../../gen/payments/payin/v1/payin_pb';
import { journaled } from '../../events';
import { answerIdempotently } from '../../idempotency';
import { CURRENCIES, decimalsOf } from '../../money';
import type { Merchant } from '../../onboarding/merchants';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
import { listWebhookDeliveries, redeliverWebhook } from '../../webhooks';
import { PAYIN_REASONS } from './contract';
import { createPayin } from './create';
import { findLatestPayin, type PayinRow } from './store';

export { newInvoiceReference } from './create';
export { applyPayinNotification, applyRecordedNotification, notifyPayin, type PayinNotification } from './notifications';

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
 * The PayinService but its ApplyUpstreamNotification, which the composition root wires to the upstream's door
 * (src/upstream/notifications.ts).
 */
export function createPayinService(deps: PlatformDeps): Omit<ServiceImpl<typeof PayinService>, 'applyUpstreamNotification'> {
  const authenticate = deps.merchantAuth.requireApiKey;
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

    async listWebhookDeliveries(request) {
      if (!request.merchantId) throw invalidFields({ merchant_id: [problem('required')] });
      return { deliveries: await listWebhookDeliveries(deps, request.merchantId) };
    },

    redeliverWebhook: async (request) => ({ delivery: await redeliverWebhook(deps, request.webhookId) }),
  };
}
