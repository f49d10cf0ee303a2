/**
 * Area B router (interface "Area B", platform decisions §4, §8): B1 `POST /api/v1/payins`, B2
 * `POST /api/v1/payins/status`, B3 `GET /api/v1/balance` and the upstream's `POST /api/v1/upstream/notifications`.
 * Translation only: headers and raw body go to the PayinService over Connect; answers and failures come back
 * through the Area B envelope and the one error table in src/payins/contract.ts.
 */
import Router from '@koa/router';
import { amountJson, formatAmount, isCurrency, stringifyJson, type Currency } from '../../src/money';
import { payinErrorFor, type PayinRoute } from '../../src/payins/contract';
import { readRpcFailure } from '../../src/rpc/errors';
import type { FacadeContext, FacadeState } from '../app';

const RPC_TIMEOUT_MS = 60_000;

function apiKeyOf(ctx: FacadeContext, allowApiKeyHeader: boolean): string {
  return ctx.get('X-API-Key') || (allowApiKeyHeader ? ctx.get('Api-Key') : '');
}

function sendJson(ctx: FacadeContext, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.body = stringifyJson(body);
}

function sendFailure(ctx: FacadeContext, route: PayinRoute, error: unknown): void {
  const failure = readRpcFailure(error);
  const { status, body } = payinErrorFor(route, failure.reason, failure.fields);
  if (status === 500) ctx.state.logger.error({ err: error, reason: failure.reason }, 'payin request failed');
  sendJson(ctx, status, body);
}

const currencyOf = (text: string): Currency => (isCurrency(text) ? text : 'USDT');

export function payinRouter(): Router<FacadeState> {
  const router = new Router<FacadeState>();

  router.post('/api/v1/payins', async (ctx) => {
    try {
      const answer = await ctx.state.clients.payin.createPayin(
        { apiKey: apiKeyOf(ctx, true), rawBody: Buffer.from(ctx.state.rawBody, 'utf8') },
        { timeoutMs: RPC_TIMEOUT_MS },
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
  });

  router.post('/api/v1/payins/status', async (ctx) => {
    try {
      const { payin } = await ctx.state.clients.payin.getPayinStatus(
        { apiKey: apiKeyOf(ctx, false), rawBody: Buffer.from(ctx.state.rawBody, 'utf8') },
        { timeoutMs: RPC_TIMEOUT_MS },
      );
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
  });

  router.get('/api/v1/balance', async (ctx) => {
    try {
      const { wallets } = await ctx.state.clients.payin.getBalances({ apiKey: apiKeyOf(ctx, false) }, { timeoutMs: RPC_TIMEOUT_MS });
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
  });

  router.post('/api/v1/upstream/notifications', async (ctx) => {
    try {
      const answer = await ctx.state.clients.payin.applyUpstreamNotification(
        { rawBody: Buffer.from(ctx.state.rawBody, 'utf8'), signature: ctx.get('X-Upstream-Signature') },
        { timeoutMs: RPC_TIMEOUT_MS },
      );
      sendJson(ctx, 200, {
        success: true,
        code: 200,
        data: { invoice_reference: answer.invoiceReference, status: answer.status, applied: answer.applied },
      });
    } catch (error) {
      sendFailure(ctx, 'notifications', error);
    }
  });

  return router;
}
