/**
 * Public pages of bank-account activation (issue 7; docs/area-c.md "Tokenization"), under MERCHANT_PREFIX:
 *
 *   GET  /instruments/bank-accounts/:token/activation-qr.png  PNG QR code (library `qrcode`) of the activation URL;
 *                                                             404 for an unknown token
 *   GET  /instruments/bank-accounts/activate/:code            HTML: bank, last 4 digits, an "Activate account"
 *                                                             button POSTing to the same URL (or "already activated")
 *   POST /instruments/bank-accounts/activate/:code            activates (once) → HTML confirmation
 *
 * Unknown code → 404 HTML page. Translation only: every fact comes from InstrumentService.
 */
import type Router from '@koa/router';
import escapeHtml from 'escape-html';
import QRCode from 'qrcode';
import { readRpcFailure } from '../../src/rpc/errors';
import type { FacadeContext, FacadeState } from '../app';

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}button{font-size:1rem;padding:.6rem 1.2rem}</style></head>
<body><h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`;
}

function sendHtml(ctx: FacadeContext, status: number, html: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
  ctx.set('Referrer-Policy', 'no-referrer'); // the URL carries the activation code
  ctx.body = html;
}

/** Answers 404 for NotFound; rethrows anything else (the app's last-resort handler answers 500). */
function notFoundOr(ctx: FacadeContext, error: unknown, answer: () => void): void {
  if (readRpcFailure(error).reason === 'ACTIVATION_NOT_FOUND') return answer();
  throw error;
}

function accountLine(bankName: string, last4: string): string {
  return `<p>${bankName ? `${escapeHtml(bankName)}, ` : ''}account ending in <strong>${escapeHtml(last4)}</strong></p>`;
}

const NOT_FOUND_PAGE = page('Activation link not found', '<p>This activation link is invalid.</p>');

/** Adds the activation routes to the Area C router. */
export function registerInstrumentPages(router: Router<FacadeState>): void {
  router.get('/instruments/bank-accounts/:token/activation-qr.png', async (ctx) => {
    const callOptions = { headers: { 'X-Request-Id': ctx.state.requestId } };
    try {
      const answer = await ctx.state.clients.instrument.getBankAccountActivation({ token: ctx.params.token }, callOptions);
      ctx.status = 200;
      ctx.type = 'image/png';
      ctx.set('Cache-Control', 'no-store');
      ctx.body = await QRCode.toBuffer(answer.activationUrl, { type: 'png', errorCorrectionLevel: 'M' });
    } catch (error) {
      notFoundOr(ctx, error, () => {
        ctx.status = 404;
        ctx.type = 'text/plain';
        ctx.body = 'Not Found';
      });
    }
  });

  router.get('/instruments/bank-accounts/activate/:code', async (ctx) => {
    const callOptions = { headers: { 'X-Request-Id': ctx.state.requestId } };
    try {
      const answer = await ctx.state.clients.instrument.getBankAccountActivation({ activationCode: ctx.params.code }, callOptions);
      const body = answer.activated
        ? `${accountLine(answer.bankName, answer.bankNumberLast4)}<p>This bank account is already activated.</p>`
        : `${accountLine(answer.bankName, answer.bankNumberLast4)}
<form method="post" action="${escapeHtml(answer.activationUrl)}"><button type="submit">Activate account</button></form>`;
      sendHtml(ctx, 200, page('Activate bank account', body));
    } catch (error) {
      notFoundOr(ctx, error, () => sendHtml(ctx, 404, NOT_FOUND_PAGE));
    }
  });

  router.post('/instruments/bank-accounts/activate/:code', async (ctx) => {
    const callOptions = { headers: { 'X-Request-Id': ctx.state.requestId } };
    try {
      const answer = await ctx.state.clients.instrument.activateBankAccount({ activationCode: ctx.params.code }, callOptions);
      const message = answer.activatedNow ? 'Your bank account is now activated.' : 'This bank account is already activated.';
      sendHtml(ctx, 200, page('Bank account activated', `${accountLine(answer.bankName, answer.bankNumberLast4)}<p>${message}</p>`));
    } catch (error) {
      notFoundOr(ctx, error, () => sendHtml(ctx, 404, NOT_FOUND_PAGE));
    }
  });
}
