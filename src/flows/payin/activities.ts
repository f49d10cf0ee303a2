/**
 * The PayinWorkflow's activities (Area B, platform decisions §4, §5), the payin flow's only caller of the ledger:
 * settle, expire and close a payin (each records its event, and the webhook produced from it, in the same database
 * transaction as the change: src/webhooks `recordWebhookEvent`), and start the webhooks' deliveries. Idempotent: the
 * settlement passes the ledger `payinSettlementIdempotencyKey`, webhook ids are derived from the invoice and the
 * event.
 */
import type { Knex } from '../../db/knex';
import { amountJson, percentOf, stringifyJson } from '../../money';
import type { PlatformDeps } from '../../platform-deps';
import { deliverWebhooks, recordWebhookEvent } from '../../webhooks';
import { reasonFailure } from '../../temporal/failures';
import { createHash } from 'node:crypto';
import { additionalPaymentIdempotencyKey, PAYIN_REASONS, payinSettlementIdempotencyKey, type PayinActivities, type PayinEvent, type PayinTransition } from './contract';
import { hasAppliedClose, hasAppliedSettlement, lockPayin, lockPayinForSettlement, markSettled, setPayinStatus, settledBy, type PayinRow, type SettlingPayin } from './store';
import { heldPolicyRefunds, recordResolution, resolutionData, resolvePayment, type Resolution, type ResolutionRefunds, type ResolvedPayment } from './resolution';

/** The events that announce a change of the payin's status. */
type PayinStatusEvent = Exclude<PayinEvent, 'payin.additional_payment'>;

/** Stable webhook id (X-Webhook-Id, also the WebhookDeliveryWorkflow id) of one event of one payin. */
export function webhookIdOf(invoice_reference: string, event: PayinStatusEvent): string {
  return `WH-${invoice_reference.replace(/^PAYIN-/, '')}-${event.split('.')[1]!.toUpperCase()}`;
}

/** Stable webhook id of the announcement of one additional payment (by its upstream trx_ref and amount). */
export function additionalPaymentWebhookId(invoice_reference: string, payment: { trx_ref: string; amount_units: bigint }): string {
  const digest = createHash('sha256').update(`${payment.trx_ref}|${payment.amount_units}`).digest('hex').slice(0, 16).toUpperCase();
  return `WH-${invoice_reference.replace(/^PAYIN-/, '')}-ADDITIONAL-${digest}`;
}

/**
 * The body announcing an additional payment: the payin as settled, with `amount`, `fee` and `trx_ref` of this
 * payment (minor units formatted in the currency).
 */
export function additionalPaymentBody(payin: PayinRow, payment: { trx_ref: string; amount_units: bigint; fee_units: bigint }, resolution?: Resolution): string {
  return stringifyJson({
    success: true,
    code: 200,
    event: 'payin.additional_payment',
    data: {
      trx_ref: payment.trx_ref || null,
      amount: amountJson(payment.amount_units, payin.currency),
      currency: payin.currency,
      fee: amountJson(payment.fee_units, payin.currency),
      invoice_reference: payin.invoice_reference,
      out_trade_no: payin.out_trade_no,
      status: payin.status,
      ...(resolution ? { resolution: resolutionData(resolution) } : {}),
    },
  });
}

/**
 * The webhook body (platform decisions §5): `{"success": true, "code": 200, "event", "data": {...}}`, data keys
 * in the interface's order. For expired/closed payins nothing was received: amount and fee are 0 and
 * original_amount is the requested amount.
 */
export function webhookBody(payin: PayinRow, event: PayinStatusEvent, resolution?: Resolution): string {
  const paid = payin.status === 'success' ? (payin.paid_amount_units ?? 0n) : 0n;
  const data: Record<string, unknown> = {
    trx_ref: payin.trx_ref,
    amount: amountJson(paid, payin.currency),
    currency: payin.currency,
    fee: amountJson(payin.status === 'success' ? payin.fee_units : 0n, payin.currency),
    invoice_reference: payin.invoice_reference,
    out_trade_no: payin.out_trade_no,
    status: payin.status,
  };
  if (paid !== payin.amount_units) data.original_amount = amountJson(payin.amount_units, payin.currency);
  if (payin.status === 'success' && payin.payment_match_status) data.payment_match_status = payin.payment_match_status;
  // The merchant's outcome policy decided this payment (docs/refunds.md "Outcome policies"); absent without a policy.
  if (resolution) data.resolution = resolutionData(resolution);
  return stringifyJson({ success: true, code: 200, event, data });
}

/**
 * The data of a payin's status event (docs/events.md): the payin as the change left it, amounts as decimal strings
 * of minor units (`paid_amount_units` once settled).
 */
export function payinEventData(payin: PayinRow): Record<string, unknown> {
  return {
    invoice_reference: payin.invoice_reference,
    out_trade_no: payin.out_trade_no,
    status: payin.status,
    amount_units: payin.amount_units.toString(),
    paid_amount_units: payin.status === 'success' && payin.paid_amount_units !== null ? payin.paid_amount_units.toString() : null,
    fee_units: (payin.status === 'success' ? payin.fee_units : 0n).toString(),
    currency: payin.currency,
    trx_ref: payin.trx_ref,
    ...(payin.status === 'success' ? { payment_match_status: payin.payment_match_status, late: payin.late } : {}),
  };
}

/** Records the payin's status event and the webhook produced from it, in the transition's transaction (last write). */
function recordPayinEvent(
  deps: Pick<PlatformDeps, 'benchFloor'>,
  trx: Knex.Transaction,
  payin: PayinRow,
  event: PayinStatusEvent,
  ledger_transaction_id: string | null = null,
  resolution?: Resolution,
): Promise<string> {
  return recordWebhookEvent(
    trx,
    {
      id: webhookIdOf(payin.invoice_reference, event),
      merchant_id: payin.merchant_id,
      subject_reference: payin.invoice_reference,
      event,
      body: webhookBody(payin, event, resolution),
      data: payinEventData(payin),
      ledger_transaction_id,
    },
    deps.benchFloor,
  );
}

/** Credits `paid` to the merchant's wallet and charges `fee`, in one ledger transaction under `idempotency_key`. */
async function postSettlement(
  deps: Pick<PlatformDeps, 'ledger'>,
  trx: Knex.Transaction,
  payin: PayinRow,
  paid: bigint,
  fee: bigint,
  idempotency_key: string,
): Promise<string> {
  // The accounts were resolved when the payin was created (create.ts); a payin from before that resolves them here.
  const wallet = payin.wallet_account_id ?? (await deps.ledger.openAccount({ owner_type: 'merchant', owner_id: payin.merchant_id, currency: payin.currency, kind: 'wallet' }, trx)).id;
  const settlement = payin.settlement_account_id ?? (await deps.ledger.platformAccount('settlement', payin.currency, trx)).id;
  // settlement → merchant wallet: the paid amount; merchant wallet → fee_revenue: the fee. One transaction.
  const postings = [
    { account_id: settlement, amount_units: -paid },
    { account_id: wallet, amount_units: paid },
  ];
  if (fee > 0n) {
    const revenue = payin.fee_revenue_account_id ?? (await deps.ledger.platformAccount('fee_revenue', payin.currency, trx)).id;
    postings.push({ account_id: wallet, amount_units: -fee }, { account_id: revenue, amount_units: fee });
  }
  const transaction = await deps.ledger.transfer(
    {
      idempotency_key,
      description: `payin ${payin.invoice_reference} settled (paid ${paid}, fee ${fee})`,
      postings: postings.filter((posting) => posting.amount_units !== 0n),
      metadata: { invoice_reference: payin.invoice_reference, paid_units: paid.toString(), fee_units: fee.toString() },
    },
    trx,
  );
  return transaction.id;
}

/**
 * waiting → `status` and its webhook; the same status again answers the same webhook; anything else: nothing.
 * `authorized` (under the payin's lock): whether the change rests on its record; false refuses it for good.
 * @throws ApplicationFailure CLOSE_NOT_AUTHORIZED (non-retryable) when `authorized` says no
 */
function transition(
  deps: Pick<PlatformDeps, 'database' | 'benchFloor'>,
  invoice_reference: string,
  status: 'expired' | 'close',
  event: PayinStatusEvent,
  authorized: (trx: Knex.Transaction) => Promise<boolean> = async () => true,
): Promise<PayinTransition> {
  return deps.database.transaction(async (trx) => {
    const payin = await lockPayin(trx, invoice_reference);
    if (!payin) return { webhook_id: null };
    if (payin.status === status) return { webhook_id: webhookIdOf(invoice_reference, event) };
    if (payin.status !== 'waiting') return { webhook_id: null };
    if (!(await authorized(trx))) {
      throw reasonFailure(PAYIN_REASONS, 'CLOSE_NOT_AUTHORIZED', `no applied close notification for ${invoice_reference}`);
    }
    await setPayinStatus(trx, invoice_reference, status);
    return { webhook_id: await recordPayinEvent(deps, trx, { ...payin, status }, event) };
  });
}

/** Money received for a payin already settled: credited and announced (payin.additional_payment), never dropped (§4). */
async function creditAdditionalPayment(
  deps: PlatformDeps,
  refunds: ResolutionRefunds | undefined,
  trx: Knex.Transaction,
  payin: SettlingPayin,
  payment: { trx_ref: string; amount_units: bigint; fee_units: bigint },
): Promise<PayinTransition> {
  const ledger_key = additionalPaymentIdempotencyKey(payin.invoice_reference, payment);
  const ledger_transaction_id = await postSettlement(deps, trx, payin, payment.amount_units, payment.fee_units, ledger_key);
  // The merchant's outcome policy (a second payment follows `overpaid`); a repeat finds its decision and refund.
  const resolved: ResolvedPayment = { ledger_key, trx_ref: payment.trx_ref, paid_units: payment.amount_units, fee_units: payment.fee_units, late: false, additional: true };
  const resolution = payin.outcome_policy ? await resolvePayment(trx, refunds, payin, resolved, payin.outcome_policy) : undefined;
  // A repeat of this payment replays its ledger write and finds its webhook recorded: nothing is announced twice.
  const webhook_id = await recordWebhookEvent(trx, {
    id: additionalPaymentWebhookId(payin.invoice_reference, payment),
    merchant_id: payin.merchant_id,
    subject_reference: payin.invoice_reference,
    event: 'payin.additional_payment',
    body: additionalPaymentBody(payin, payment, resolution),
    data: {
      invoice_reference: payin.invoice_reference,
      out_trade_no: payin.out_trade_no,
      trx_ref: payment.trx_ref || null,
      amount_units: payment.amount_units.toString(),
      fee_units: payment.fee_units.toString(),
      currency: payin.currency,
    },
    ledger_transaction_id,
  });
  return { webhook_id, refund_references: resolution ? await recordResolution(trx, refunds, payin, resolved, resolution) : [] };
}

/**
 * Settles a payin on an applied upstream notification of this payment (the signal's amount is not authority): the
 * merchant credited and the fee charged, the payin marked success (late when it had expired or closed) and its
 * payin.success webhook recorded; a payin already settled by another payment credits this one as additional.
 * Repeats return the same webhook.
 * @throws ApplicationFailure SETTLEMENT_NOT_AUTHORIZED (non-retryable) without such a notification
 */
function settlePayin(deps: PlatformDeps, refunds: ResolutionRefunds | undefined, input: Parameters<PayinActivities['settlePayin']>[0]): Promise<PayinTransition> {
  return deps.database.transaction(async (trx) => {
    const payin = await lockPayinForSettlement(trx, input.invoice_reference);
    if (!payin || payin.status === 'failed') return { webhook_id: null };
    const paid = BigInt(input.amount_units);
    const payment = { trx_ref: input.trx_ref, amount_units: paid };
    if (settledBy(payin, payment)) {
      // A replay after the commit: the same webhook, and the policy refund again when its workflow may not have started.
      const refund_references = payin.outcome_policy ? await heldPolicyRefunds(trx, refunds, payinSettlementIdempotencyKey(payin.invoice_reference)) : [];
      return { webhook_id: webhookIdOf(payin.invoice_reference, 'payin.success'), refund_references };
    }
    if (!(await hasAppliedSettlement(trx, payin.invoice_reference, payment))) {
      throw reasonFailure(PAYIN_REASONS, 'SETTLEMENT_NOT_AUTHORIZED', `no applied notification of ${paid} for ${payin.invoice_reference}`);
    }
    const fee = percentOf(paid, payin.payin_fee_percent);
    if (payin.status === 'success') return creditAdditionalPayment(deps, refunds, trx, payin, { ...payment, fee_units: fee });
    const ledger_key = payinSettlementIdempotencyKey(payin.invoice_reference);
    const ledger_transaction_id = await postSettlement(deps, trx, payin, paid, fee, ledger_key);
    const { outcome_policy, ...locked } = payin;
    const settled: PayinRow = {
      ...locked,
      status: 'success',
      late: payin.status !== 'waiting',
      paid_amount_units: paid,
      fee_units: fee,
      payment_match_status: paid === payin.amount_units ? 'exact' : paid > payin.amount_units ? 'overpaid' : 'underpaid',
      trx_ref: input.trx_ref || payin.trx_ref,
    };
    await markSettled(trx, settled, ledger_transaction_id);
    const resolved: ResolvedPayment = { ledger_key, trx_ref: input.trx_ref, paid_units: paid, fee_units: fee, late: settled.late, additional: false };
    const resolution = outcome_policy ? await resolvePayment(trx, refunds, locked, resolved, outcome_policy) : undefined;
    const webhook_id = await recordPayinEvent(deps, trx, settled, 'payin.success', ledger_transaction_id, resolution);
    return { webhook_id, refund_references: resolution ? await recordResolution(trx, refunds, settled, resolved, resolution) : [] };
  });
}

/**
 * @param refunds the refund flow's port (src/activities.ts): without it an outcome policy cannot refund (its payments
 *   are credited with decision `refund_impossible_no_provider`)
 */
export function createPayinActivities(deps: PlatformDeps, refunds?: ResolutionRefunds): PayinActivities {
  return {
    settlePayin: (input) => settlePayin(deps, refunds, input),
    expirePayin: (input) => transition(deps, input.invoice_reference, 'expired', 'payin.expired'),
    // The message's word is not authority: the applied upstream close notification recorded by the service is.
    closePayin: (input) =>
      transition(deps, input.invoice_reference, 'close', 'payin.closed', (trx) => hasAppliedClose(trx, input.invoice_reference, input.trx_ref)),
    startWebhookDeliveries: (input) => deliverWebhooks(deps, input.webhook_ids),
    startRefunds: async (input) => {
      for (const reference of input.refund_references) await refunds?.start(reference);
    },
  };
}
