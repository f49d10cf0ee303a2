/**
 * Public pages of bank-account activation (docs/area-c.md "Tokenization"), under MERCHANT_PREFIX:
 *
 *   GET  /instruments/bank-accounts/:token/activation-qr.png  PNG QR code (library `qrcode`) of the activation URL;
 *                                                             404 for an unknown token
 *   GET  /instruments/bank-accounts/activate/:code            HTML: bank, last 4 digits, an "Activate account"
 *                                                             button POSTing to the same URL (or "already activated")
 *   POST /instruments/bank-accounts/activate/:code            activates (once) → HTML confirmation
 *
 * Unknown code → 404 HTML page. Translation only: every fact comes from InstrumentService, the pages from
 * src/instruments/html.ts.
 */
import type Router from '@koa/router';
import { activatedPage, activationNotFoundPage, activationPage } from '../views/activation-pages';
import { readRpcFailure } from '../../src/rpc/errors';
import { renderQrPng } from '../../src/web/qr-png';
import type { FacadeContext, FacadeState } from '../context';
import { rpcCallOptions, setRetryAfter } from '../rpc-call';
import { tooManyRequestsPage } from '../views/deposit-pages';
import { sendHtml } from '../html-response';

/**
 * Answers 404 for an unknown activation and 429 (with Retry-After) for an address past its failed attempts;
 * rethrows anything else (the app's last-resort handler answers 500).
 */
function notFoundOr(ctx: FacadeContext, error: unknown, answer: () => void): void {
  const failure = readRpcFailure(error, 'instrument');
  if (failure.reason === 'ACTIVATION_NOT_FOUND') return answer();
  if (failure.reason === 'RATE_LIMITED') {
    setRetryAfter(ctx, failure.retryAfterSeconds);
    return sendHtml(ctx, 429, tooManyRequestsPage());
  }
  throw error;
}

/** Adds the activation routes to the Area C router. */
export function registerInstrumentPages(router: Router<FacadeState>): void {
  router.get('/instruments/bank-accounts/:token/activation-qr.png', async (ctx) => {
    // A token that cannot be one is answered like an unknown one, before any RPC.
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(ctx.params.token ?? '')) return sendHtml(ctx, 404, activationNotFoundPage());
    const callOptions = rpcCallOptions(ctx);
    try {
      const answer = await ctx.state.clients.instrument.getBankAccountActivation({ token: ctx.params.token }, callOptions);
      ctx.status = 200;
      ctx.type = 'image/png';
      ctx.set('Cache-Control', 'no-store');
      ctx.body = await renderQrPng(answer.activationUrl);
    } catch (error) {
      notFoundOr(ctx, error, () => sendHtml(ctx, 404, activationNotFoundPage()));
    }
  });

  router.get('/instruments/bank-accounts/activate/:code', async (ctx) => {
    const callOptions = rpcCallOptions(ctx);
    try {
      const answer = await ctx.state.clients.instrument.getBankAccountActivation({ activationCode: ctx.params.code }, callOptions);
      sendHtml(ctx, 200, activationPage(answer));
    } catch (error) {
      notFoundOr(ctx, error, () => sendHtml(ctx, 404, activationNotFoundPage()));
    }
  });

  router.post('/instruments/bank-accounts/activate/:code', async (ctx) => {
    const callOptions = rpcCallOptions(ctx);
    try {
      const answer = await ctx.state.clients.instrument.activateBankAccount({ activationCode: ctx.params.code }, callOptions);
      sendHtml(ctx, 200, activatedPage(answer));
    } catch (error) {
      notFoundOr(ctx, error, () => sendHtml(ctx, 404, activationNotFoundPage()));
    }
  });
}
