/**
 * The browser pages of Area C deposits (docs/area-c.md "Deposits and confirmations"): DepositService answers a
 * typed page view; the façade renders it (./deposit-pages.ts) with its status, or redirects the payer with the
 * result to the paid preorder's redirect_url.
 *
 *   GET  /visa-master/confirm/:token     the confirmation page of a Visa/Master deposit again
 *   POST /visa-master/confirm/:token     the confirmation form's submission → 303 to redirect_url?result=… or the
 *                                        result page (hidden input `result`)
 *   GET  /pre-order/:token               the hosted preorder page (seller, description, amount, card form)
 *   POST /pre-order/:token/pay           the card form (application/x-www-form-urlencoded) → the confirmation page
 */
import type Router from '@koa/router';
import { readCardForm } from './deposit-fields';
import { readRpcFailure } from '../../src/rpc/errors';
import { faultPage, notFoundPage, renderDepositPage, resultRedirect, tooManyRequestsPage } from '../views/deposit-pages';
import type { DepositPage } from '../../src/gen/payments/deposit/v1/deposit_pb';
import type { FacadeContext, FacadeState } from '../context';
import { rpcCallOptions, setRetryAfter } from '../rpc-call';
import { sendHtml } from '../html-response';

/** A page token as the platform issues them (deposit and preorder tokens); anything else is an unknown page. */
const PAGE_TOKEN = /^[A-Za-z0-9_-]{1,128}$/;

/** Renders a page view of the service (a missing view is a fault). */
function sendPage(ctx: FacadeContext, page: DepositPage | undefined, submission = false): void {
  const rendered = renderDepositPage(page, `${ctx.state.config.PUBLIC_BASE_URL}${ctx.state.config.MERCHANT_PREFIX}`, submission);
  sendHtml(ctx, rendered.status, rendered.html);
}

async function answer(ctx: FacadeContext, render: () => Promise<void>): Promise<void> {
  // The hosted pages' gate: a token that cannot be one is answered like an unknown one, before any RPC.
  if (!PAGE_TOKEN.test(ctx.params.token ?? '')) return sendHtml(ctx, 404, notFoundPage());
  try {
    await render();
  } catch (error) {
    const failure = readRpcFailure(error, 'deposit');
    if (failure.reason === 'RATE_LIMITED') {
      setRetryAfter(ctx, failure.retryAfterSeconds);
      return sendHtml(ctx, 429, tooManyRequestsPage());
    }
    ctx.state.logger.error({ err: error, request_id: ctx.state.requestId }, 'deposit page failed');
    sendHtml(ctx, 500, faultPage());
  }
}

/** Registers the deposit pages on the Area C router. */
export function registerPaymentPages(router: Router<FacadeState>): void {
  const options = rpcCallOptions;

  router.get('/visa-master/confirm/:token', (ctx) =>
    answer(ctx, async () => {
      const reply = await ctx.state.clients.deposit.getVisaMasterConfirmation({ depositToken: ctx.params.token ?? '' }, options(ctx));
      sendPage(ctx, reply.page);
    }),
  );

  router.post('/visa-master/confirm/:token', (ctx) =>
    answer(ctx, async () => {
      const reply = await ctx.state.clients.deposit.submitVisaMasterConfirmation({ depositToken: ctx.params.token ?? '' }, options(ctx));
      if (reply.redirectUrl && reply.page?.view.case === 'result') {
        ctx.set('Cache-Control', 'no-store');
        ctx.set('Referrer-Policy', 'no-referrer');
        ctx.status = 303;
        ctx.redirect(resultRedirect(reply.redirectUrl, reply.page.view.value));
        return;
      }
      sendPage(ctx, reply.page);
    }),
  );

  router.get('/pre-order/:token', (ctx) =>
    answer(ctx, async () => {
      const reply = await ctx.state.clients.deposit.getPreOrderPage({ preOrderToken: ctx.params.token ?? '' }, options(ctx));
      sendPage(ctx, reply.page);
    }),
  );

  router.post('/pre-order/:token/pay', (ctx) =>
    answer(ctx, async () => {
      // The raw body was read by the app (rest-facade/app.ts); WHATWG URLSearchParams parses the urlencoded form.
      const form = ctx.is('application/x-www-form-urlencoded') ? new URLSearchParams(ctx.state.rawBody) : new URLSearchParams();
      const reply = await ctx.state.clients.deposit.payPreOrderByCard(
        { preOrderToken: ctx.params.token ?? '', ...readCardForm(form) },
        options(ctx),
      );
      sendPage(ctx, reply.page, true);
    }),
  );
}
