/**
 * Area B router (interface "Area B", platform decisions §4, §8): B1 `POST /api/v1/payins`, B2
 * `POST /api/v1/payins/status`, B3 `GET /api/v1/balance`, the merchant's events `GET /api/v1/events`
 * (docs/events.md), a payment's timeline `GET /api/v1/payments/{reference}/timeline` (docs/timeline.md) and the
 * upstream's `POST /api/v1/upstream/notifications`.
 * Translation only: the Area B contract (./contract.ts) reads and checks the documented fields, the typed fields go
 * to the PayinService over Connect, and answers and failures come back through the Area B envelope and its one
 * error table.
 */
import Router from '@koa/router';
import { timelineJson } from '../timeline-json';
import { amountJson, formatAmount, isCurrency, parseJsonLossless, stringifyJson, type Currency } from '../../src/money';
import { readRpcFailure } from '../../src/rpc/errors';
import type { FacadeContext, FacadeState } from '../context';
import { rpcCallOptions, setRetryAfter } from '../rpc-call';
import { payinErrorFor, readCreatePayin, readCreatePayout, readCreateRefund, readListEvents, readPayinStatus, readPayoutStatus, readRefundStatus, type PayinRoute } from './contract';
import type { FieldViolations } from '../../src/errors';
import type { Refund } from '../../src/gen/payments/refund/v1/refund_pb';
import type { Payout } from '../../src/gen/payments/payout/v1/payout_pb';

function apiKeyOf(ctx: FacadeContext, allowApiKeyHeader: boolean): string {
  return ctx.get('X-API-Key') || (allowApiKeyHeader ? ctx.get('Api-Key') : '');
}

function sendJson(ctx: FacadeContext, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.body = stringifyJson(body);
}

function sendFailure(ctx: FacadeContext, route: PayinRoute, error: unknown): void {
  const failure = readRpcFailure(error, 'payin', 'events', 'timeline', 'refund', 'payout');
  setRetryAfter(ctx, failure.retryAfterSeconds);
  const { status, body } = payinErrorFor(route, failure.reason, failure.fields);
  if (status === 500) ctx.state.logger.error({ err: error, reason: failure.reason }, 'payin request failed');
  sendJson(ctx, status, body);
}

/**
 * Answers fields the contract refused: 422 for a caller whose key is valid, else the key's own refusal (401/403),
 * so a caller without a valid key learns nothing about its fields.
 */
async function sendFieldErrors(ctx: FacadeContext, route: PayinRoute, apiKey: string, errors: FieldViolations): Promise<void> {
  try {
    await ctx.state.clients.payin.authenticateApiKey({ apiKey }, rpcCallOptions(ctx));
  } catch (error) {
    return sendFailure(ctx, route, error);
  }
  const { status, body } = payinErrorFor(route, 'VALIDATION_FAILED', errors);
  sendJson(ctx, status, body);
}

const currencyOf = (text: string): Currency => (isCurrency(text) ? text : 'USDT');

/** B1: the fields read here, the payin created by the PayinService; its answer with the QR code. */
async function createPayin(ctx: FacadeContext): Promise<void> {
  const apiKey = apiKeyOf(ctx, true);
  const read = readCreatePayin(ctx.state.rawBody);
  if ('errors' in read) return sendFieldErrors(ctx, 'payins', apiKey, read.errors);
  try {
    const answer = await ctx.state.clients.payin.createPayin(
      {
        apiKey,
        amountUnits: read.fields.amount_units,
        currency: read.fields.currency,
        memo: read.fields.memo,
        outTradeNo: read.fields.out_trade_no,
        upstreamBody: Buffer.from(ctx.state.rawBody, 'utf8'),
        idempotencyKey: ctx.get('Idempotency-Key'),
      },
      rpcCallOptions(ctx),
    );
    const currency = currencyOf(answer.currency);
    sendJson(ctx, 200, {
      success: true,
      code: 200,
      data: {
        invoice_reference: answer.invoiceReference,
        amount: amountJson(answer.amountUnits, currency),
        currency,
        fee: amountJson(answer.feeUnits, currency),
        qrcode: { content: answer.qrContent, image: answer.qrImage },
        out_trade_no: answer.outTradeNo,
      },
    });
  } catch (error) {
    sendFailure(ctx, 'payins', error);
  }
}

/** B2: the payin of an out_trade_no. */
async function payinStatus(ctx: FacadeContext): Promise<void> {
  const apiKey = apiKeyOf(ctx, false);
  const read = readPayinStatus(ctx.state.rawBody);
  if ('errors' in read) return sendFieldErrors(ctx, 'status', apiKey, read.errors);
  try {
    const { payin } = await ctx.state.clients.payin.getPayinStatus({ apiKey, outTradeNo: read.out_trade_no }, rpcCallOptions(ctx));
    const currency = currencyOf(payin!.currency);
    sendJson(ctx, 200, {
      success: true,
      code: 200,
      data: {
        trx_ref: payin!.trxRef || null,
        amount: amountJson(payin!.status === 'success' ? payin!.paidAmountUnits : payin!.amountUnits, currency),
        fee: amountJson(payin!.feeUnits, currency),
        invoice_reference: payin!.invoiceReference,
        out_trade_no: payin!.outTradeNo,
        status: payin!.status,
        currency,
      },
    });
  } catch (error) {
    sendFailure(ctx, 'status', error);
  }
}

/** B3: the merchant's wallets. */
async function balance(ctx: FacadeContext): Promise<void> {
  try {
    const { wallets } = await ctx.state.clients.payin.getBalances({ apiKey: apiKeyOf(ctx, false) }, rpcCallOptions(ctx));
    sendJson(ctx, 200, {
      success: true,
      code: 200,
      data: {
        wallets: wallets.map((wallet) => ({
          currency: wallet.currency,
          balance: formatAmount(wallet.availableUnits, currencyOf(wallet.currency)),
          balance_units: wallet.availableUnits,
          decimals: wallet.decimals,
        })),
      },
    });
  } catch (error) {
    sendFailure(ctx, 'balance', error);
  }
}

/**
 * The merchant's events after `after`, in seq order (docs/events.md): one EventsService call with the API key as the
 * owner's proof; the owner is the key's merchant, never a parameter.
 */
async function listEvents(ctx: FacadeContext): Promise<void> {
  const apiKey = apiKeyOf(ctx, false);
  const read = readListEvents(ctx.query);
  if ('errors' in read) return sendFieldErrors(ctx, 'events', apiKey, read.errors);
  try {
    const { page } = await ctx.state.clients.events.listEvents(
      {
        proof: { proof: { case: 'apiKey', value: apiKey } },
        query: { after: read.fields.after, limit: read.fields.limit, type: read.fields.type ?? '', subject: read.fields.subject ?? '' },
      },
      rpcCallOptions(ctx),
    );
    sendJson(ctx, 200, {
      success: true,
      code: 200,
      data: {
        events: (page?.events ?? []).map((event) => ({
          seq: event.seq,
          type: event.type,
          subject: event.subject,
          created_at: event.createdAt,
          ledger_transaction_id: event.ledgerTransactionId || null,
          data: parseJsonLossless(event.dataJson),
        })),
        has_more: page?.hasMore ?? false,
        next_after: page?.nextAfter ?? read.fields.after,
      },
    });
  } catch (error) {
    sendFailure(ctx, 'events', error);
  }
}

/** A reference the timeline route takes: 1 to 128 visible ASCII characters. */
const TIMELINE_REFERENCE = /^[\x21-\x7e]{1,128}$/;

/**
 * One payment's timeline (docs/timeline.md): one TimelineService call with the API key as the owner's proof. An
 * unknown reference and another merchant's answer the same 404.
 */
async function paymentTimeline(ctx: FacadeContext): Promise<void> {
  const apiKey = apiKeyOf(ctx, false);
  const reference = ctx.params.reference ?? '';
  if (!TIMELINE_REFERENCE.test(reference)) return sendFieldErrors(ctx, 'timeline', apiKey, { reference: ['The reference must be 1 to 128 visible characters.'] });
  try {
    const answer = await ctx.state.clients.timeline.getPaymentTimeline({ reference, proof: { proof: { case: 'apiKey', value: apiKey } } }, rpcCallOptions(ctx));
    sendJson(ctx, 200, {
      success: true,
      code: 200,
      data: timelineJson(answer),
    });
  } catch (error) {
    sendFailure(ctx, 'timeline', error);
  }
}

/** The upstream's notification, verified and applied by the PayinService. */
async function upstreamNotification(ctx: FacadeContext): Promise<void> {
  try {
    const answer = await ctx.state.clients.payin.applyUpstreamNotification(
      { signedBody: Buffer.from(ctx.state.rawBody, 'utf8'), signature: ctx.get('X-Upstream-Signature') },
    );
    sendJson(ctx, 200, {
      success: true,
      code: 200,
      data: { invoice_reference: answer.invoiceReference, status: answer.status, applied: answer.applied },
    });
  } catch (error) {
    sendFailure(ctx, 'notifications', error);
  }
}

/** A refund in Area B's words: amounts in USDT, empty texts as null. */
function refundJson(refund: Refund) {
  const currency = currencyOf(refund.currency);
  return {
    refund_reference: refund.refundReference,
    invoice_reference: refund.invoiceReference,
    out_trade_no: refund.outTradeNo,
    amount: amountJson(refund.amountUnits, currency),
    currency,
    status: refund.status,
    address: refund.address,
    reason: refund.reason,
    refund_trx_ref: refund.refundTrxRef || null,
    failure_reason: refund.failureReason || null,
    created_at: refund.createdAt,
    decided_at: refund.decidedAt || null,
  };
}

/**
 * POST /api/v1/payins/refunds (docs/refunds.md): a refund of the merchant's settled payin, held on its wallet and sent
 * back to the payer; the same Idempotency-Key answers the first refund (another body under it: 409).
 */
async function createRefund(ctx: FacadeContext): Promise<void> {
  const apiKey = apiKeyOf(ctx, false);
  const read = readCreateRefund(ctx.state.rawBody);
  if ('errors' in read) return sendFieldErrors(ctx, 'refunds', apiKey, read.errors);
  try {
    const { refund } = await ctx.state.clients.refund.createRefund(
      {
        apiKey,
        outTradeNo: read.fields.out_trade_no ?? '',
        invoiceReference: read.fields.invoice_reference ?? '',
        ...(read.fields.amount_units !== undefined ? { amountUnits: read.fields.amount_units } : {}),
        reason: read.fields.reason,
        address: read.fields.address,
        idempotencyKey: ctx.get('Idempotency-Key'),
      },
      rpcCallOptions(ctx),
    );
    sendJson(ctx, 200, { success: true, code: 200, data: refundJson(refund!) });
  } catch (error) {
    sendFailure(ctx, 'refunds', error);
  }
}

/** POST /api/v1/payins/refunds/status: one refund by refund_reference, or a payin's refunds and what is left. */
async function refundStatus(ctx: FacadeContext): Promise<void> {
  const apiKey = apiKeyOf(ctx, false);
  const read = readRefundStatus(ctx.state.rawBody);
  if ('errors' in read) return sendFieldErrors(ctx, 'refund_status', apiKey, read.errors);
  try {
    const answer = await ctx.state.clients.refund.getRefundStatus(
      { apiKey, refundReference: read.fields.refund_reference ?? '', outTradeNo: read.fields.out_trade_no ?? '', invoiceReference: read.fields.invoice_reference ?? '' },
      rpcCallOptions(ctx),
    );
    const refunds = answer.refunds.map(refundJson);
    sendJson(ctx, 200, {
      success: true,
      code: 200,
      data: read.fields.refund_reference ? refunds[0] : { refunds, refundable_amount: amountJson(answer.refundableUnits, 'USDT') },
    });
  } catch (error) {
    sendFailure(ctx, 'refund_status', error);
  }
}

/** A payout in Area B's words: amounts in USDT, empty texts as null. */
function payoutJson(payout: Payout) {
  const currency = currencyOf(payout.currency);
  return {
    payout_reference: payout.payoutReference,
    out_trade_no: payout.outTradeNo || null,
    amount: amountJson(payout.amountUnits, currency),
    fee: amountJson(payout.feeUnits, currency),
    currency,
    status: payout.status,
    address: payout.address,
    memo: payout.memo,
    payout_trx_ref: payout.payoutTrxRef || null,
    failure_reason: payout.failureReason || null,
    created_at: payout.createdAt,
    decided_at: payout.decidedAt || null,
  };
}

/**
 * POST /api/v1/payouts (docs/payouts.md): a payout of the merchant's wallet to a crypto address, held with its fee
 * and sent through the upstream provider; the same Idempotency-Key answers the first payout (another body: 409).
 */
async function createPayout(ctx: FacadeContext): Promise<void> {
  const apiKey = apiKeyOf(ctx, false);
  const read = readCreatePayout(ctx.state.rawBody);
  if ('errors' in read) return sendFieldErrors(ctx, 'payouts', apiKey, read.errors);
  try {
    const { payout } = await ctx.state.clients.payout.createPayout(
      {
        apiKey,
        amountUnits: read.fields.amount_units,
        currency: read.fields.currency,
        address: read.fields.address,
        memo: read.fields.memo,
        outTradeNo: read.fields.out_trade_no ?? '',
        idempotencyKey: ctx.get('Idempotency-Key'),
      },
      rpcCallOptions(ctx),
    );
    sendJson(ctx, 200, { success: true, code: 200, data: payoutJson(payout!) });
  } catch (error) {
    sendFailure(ctx, 'payouts', error);
  }
}

/** POST /api/v1/payouts/status: one payout by payout_reference or the merchant's out_trade_no. */
async function payoutStatus(ctx: FacadeContext): Promise<void> {
  const apiKey = apiKeyOf(ctx, false);
  const read = readPayoutStatus(ctx.state.rawBody);
  if ('errors' in read) return sendFieldErrors(ctx, 'payout_status', apiKey, read.errors);
  try {
    const { payout } = await ctx.state.clients.payout.getPayoutStatus(
      { apiKey, payoutReference: read.fields.payout_reference ?? '', outTradeNo: read.fields.out_trade_no ?? '' },
      rpcCallOptions(ctx),
    );
    sendJson(ctx, 200, { success: true, code: 200, data: payoutJson(payout!) });
  } catch (error) {
    sendFailure(ctx, 'payout_status', error);
  }
}

export function payinRouter(): Router<FacadeState> {
  const router = new Router<FacadeState>();
  router.post('/api/v1/payins', createPayin);
  router.post('/api/v1/payins/status', payinStatus);
  router.post('/api/v1/payins/refunds', createRefund);
  router.post('/api/v1/payins/refunds/status', refundStatus);
  router.post('/api/v1/payouts', createPayout);
  router.post('/api/v1/payouts/status', payoutStatus);
  router.get('/api/v1/balance', balance);
  router.get('/api/v1/events', listEvents);
  router.get('/api/v1/payments/:reference/timeline', paymentTimeline);
  router.post('/api/v1/upstream/notifications', upstreamNotification);
  return router;
}
