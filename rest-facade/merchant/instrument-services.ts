/**
 * The InstrumentService's part of Area C (interface "Area C"; docs/area-c.md "Tokenization"): the /do-action
 * tokenize services (each reads its fields, calls one InstrumentService RPC with the call's ActionAuth and shapes
 * `data`), their field rules, and the public pages of bank-account activation. Encrypted fields are only checked for
 * presence and type here and passed on as received; only the service decrypts and checks them.
 *
 *   GET  /instruments/bank-accounts/:token/activation-qr.png  PNG QR code (library `qrcode`) of the activation URL;
 *                                                             404 for an unknown token
 *   GET  /instruments/bank-accounts/activate/:code            HTML: bank, last 4 digits, an "Activate account"
 *                                                             button POSTing to the same URL (or "already activated")
 *   POST /instruments/bank-accounts/activate/:code            activates (once) → HTML confirmation
 *
 * Unknown code → 404 HTML page. Translation only: every fact comes from InstrumentService, the pages from
 * rest-facade/views/activation-pages.ts. Area C's rule forms, messages and answers: ./contract.ts.
 */
import type Router from '@koa/router';
import { id, present, refuse, type FieldRule } from '../../src/field-rules';
import { isLosslessNumber } from '../../src/money';
import { readRpcFailure } from '../../src/rpc/errors';
import { renderQrPng } from '../../src/web/qr-png';
import type { FacadeContext, FacadeState } from '../context';
import { rpcCallOptions, setRetryAfter } from '../rpc-call';
import { activatedPage, activationNotFoundPage, activationPage } from '../views/activation-pages';
import { tooManyRequestsPage } from '../views/deposit-pages';
import { sendHtml } from '../views/html';
import { readAreaC, requestFields, string, type MerchantServiceTable } from './contract';

// ---- Field rules ----

/** Longest accepted encrypted field (base64 of a ciphertext of up to a 16384-bit key, plus line breaks). */
export const ENCRYPTED_FIELD_MAX = 4096;
export const CALL_BACK_MAX = 2048;

const encrypted = () => string({ required: true, max: ENCRYPTED_FIELD_MAX });

/** bank_id: a listed bank's id, as a JSON integer or a digit string; anything else is "The selected bank_id is invalid.". */
const bankId: FieldRule<string> = (value) => {
  if (!present(value)) return refuse('required');
  const text = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : undefined;
  return text !== undefined && /^[1-9]\d{0,17}$/.test(text) ? text : refuse('not_found');
};

const TOKENIZE_LOCAL_CARD = { user_id: id({ required: true }), holder_name: encrypted(), bank_id: bankId, bank_code: encrypted() };

export function readTokenizeLocalCard(body: Record<string, unknown>) {
  return requestFields(readAreaC(TOKENIZE_LOCAL_CARD, body));
}

/** call_back: required text here; InstrumentService checks it is an http(s) URL (with the decrypted fields' checks). */
const TOKENIZE_BANK_ACCOUNT = {
  user_id: id({ required: true }),
  holder_name: encrypted(),
  bank_id: bankId,
  bank_number: encrypted(),
  call_back: string({ required: true, max: CALL_BACK_MAX }),
};

export function readTokenizeBankAccount(body: Record<string, unknown>) {
  return requestFields(readAreaC(TOKENIZE_BANK_ACCOUNT, body));
}

const TOKENIZE_VISA_MASTER = { user_id: id({ required: true }), sourceOfFunds: encrypted(), holder_name: encrypted() };

export function readTokenizeVisaMaster(body: Record<string, unknown>) {
  return requestFields(readAreaC(TOKENIZE_VISA_MASTER, body));
}

// ---- Services ----

export const instrumentMerchantServices: MerchantServiceTable = {
  /** data `{token}` */
  async tokenize_local_card({ body, caller, clients, callOptions }) {
    const fields = readTokenizeLocalCard(body);
    const answer = await clients.instrument.tokenizeLocalCard({ ...caller, ...fields }, callOptions);
    return { token: answer.token };
  },

  /** data `{token, bank_number: <last 4>, qr_image: <URL of the activation QR PNG>, need_verify: true}` */
  async tokenize_bank_account({ body, caller, clients, callOptions }) {
    const fields = readTokenizeBankAccount(body);
    const answer = await clients.instrument.tokenizeBankAccount({ ...caller, ...fields }, callOptions);
    return { token: answer.token, bank_number: answer.bankNumberLast4, qr_image: answer.qrImageUrl, need_verify: answer.needVerify };
  },

  /** data `{token}` */
  async tokenize_visa_master({ body, caller, clients, callOptions }) {
    const fields = readTokenizeVisaMaster(body);
    const answer = await clients.instrument.tokenizeVisaMaster({ ...caller, ...fields }, callOptions);
    return { token: answer.token };
  },
};

// ---- Pages ----

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
