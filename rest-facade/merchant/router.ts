/**
 * Area C router (payment-services-interface.md "Area C", platform decisions §7 and §8): translation only.
 *
 *   POST /login      headers merchant-id, merchant-secret-key; signed body user_name, password, timestamp → session
 *                    token.
 *   POST /do-action  the same headers, Authorization: Bearer <token>, signed body; dispatch on `service` through
 *                    the service tables (MERCHANT_SERVICE_TABLES: ./wallet-services.ts, ./deposit-services.ts,
 *                    ./instrument-services.ts, ./history-services.ts).
 *
 * The façade forwards what it received (the headers, the bearer token and the raw body text) in the one service
 * RPC; WalletService (Login, or the service's own RPC through src/merchant-auth) parses the body itself, verifies
 * its signature against the merchant's stored public key and acts only on what it says.
 *
 * Order of checks: JSON object body (400 `body`) → merchant headers (401 `merchant`) → token (401 `token`) →
 * sign_type / sign (400) → `service` (400 `service`) → the service's fields (400, every failing field) → the service.
 */
import Router from '@koa/router';
import { DomainError } from '../../src/errors';
import { problem } from '../../src/field-problems';
import { present } from '../../src/field-rules';
import { amountJson, parseJsonLossless, stringifyJson, type Currency } from '../../src/money';
import { exceedsJsonDepth } from '../../src/text';
import type { FacadeContext, FacadeState } from '../context';
import { rpcCallOptions, setRetryAfter } from '../rpc-call';
import { answerForError, badRequest, ok, renderFieldProblems, type AreaCAnswer, type MerchantServiceHandler, type MerchantServiceTable } from './contract';
import { depositMerchantServices, registerDepositPages } from './deposit-services';
import { historyMerchantServices } from './history-services';
import { payoutMerchantServices } from './payout-services';
import { instrumentMerchantServices, registerInstrumentPages } from './instrument-services';
import { readLogin, walletMerchantServices } from './wallet-services';

/**
 * Every /do-action service table of Area C, one per service family, merged in order (a name defined twice is a
 * start-up error). A family adds its services by exporting a `MerchantServiceTable` from its own file, listed here.
 */
export const MERCHANT_SERVICE_TABLES: MerchantServiceTable[] = [walletMerchantServices, depositMerchantServices, instrumentMerchantServices, historyMerchantServices, payoutMerchantServices];

type Body = Record<string, unknown>;

function send(ctx: FacadeContext, answer: AreaCAnswer): void {
  setRetryAfter(ctx, answer.retryAfterSeconds);
  ctx.status = answer.status;
  ctx.type = 'application/json';
  ctx.body = stringifyJson(answer.body);
}

function fail(ctx: FacadeContext, error: unknown): void {
  const answer = answerForError(error);
  if (answer.isFault) ctx.state.logger.error({ err: error, request_id: ctx.state.requestId }, 'area C request failed');
  send(ctx, answer);
}

function parseBody(ctx: FacadeContext): Body | undefined {
  try {
    const value = parseJsonLossless(ctx.state.rawBody || '');
    // A body nested deeper than any documented shape is refused like one that is not an object.
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && !exceedsJsonDepth(value)) return value as Body;
  } catch {
    // fall through
  }
  send(ctx, badRequest({ body: ['The request body must be a JSON object.'] }));
  return undefined;
}

/** What the merchant sent, as the api verifies it: the headers and the body text exactly as received. */
function envelopeOf(ctx: FacadeContext) {
  return {
    merchantId: ctx.get('merchant-id'),
    merchantSecretKey: ctx.get('merchant-secret-key'),
    body: ctx.state.rawBody,
  };
}

function bearerToken(ctx: FacadeContext): string {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('Authorization'));
  return match?.[1] ?? '';
}

/** Merges service tables; a duplicate name throws at start-up. */
export function mergeServiceTables(tables: MerchantServiceTable[]): Map<string, MerchantServiceHandler> {
  const merged = new Map<string, MerchantServiceHandler>();
  for (const table of tables) {
    for (const [name, handler] of Object.entries(table)) {
      if (merged.has(name)) throw new Error(`Area C service "${name}" is defined twice`);
      merged.set(name, handler);
    }
  }
  return merged;
}

export function merchantRouter(tables: MerchantServiceTable[] = MERCHANT_SERVICE_TABLES): Router<FacadeState> {
  const services = mergeServiceTables(tables);
  const router = new Router<FacadeState>();

  router.post('/login', async (ctx) => {
    const body = parseBody(ctx);
    if (!body) return;
    try {
      const fields = readLogin(body);
      const callOptions = rpcCallOptions(ctx);
      const answer = await ctx.state.clients.wallet.login({ envelope: envelopeOf(ctx), ...fields }, callOptions);
      const user = answer.user!;
      send(
        ctx,
        ok({
          token: answer.token,
          user: {
            id: user.id,
            avatar: user.avatar,
            fk_soc: user.fkSoc,
            time_zone: user.timeZone ?? null,
            full_name: user.fullName,
            balance: amountJson(user.balanceUnits, user.currency as Currency),
            wallet_ref: user.walletRef,
            wallet_id: user.walletId,
            currency: user.currency,
          },
        }),
      );
    } catch (error) {
      fail(ctx, error);
    }
  });

  router.post('/do-action', async (ctx) => {
    const body = parseBody(ctx);
    if (!body) return;
    try {
      const callOptions = rpcCallOptions(ctx);
      const auth = { envelope: envelopeOf(ctx), sessionToken: bearerToken(ctx) };
      // Authentication answers first (401, then sign): on the paths that end before a service RPC (no or unknown
      // service, bad fields) it is checked on its own; otherwise it travels inside the one service RPC.
      const authenticate = () => ctx.state.clients.wallet.authenticateAction(auth, callOptions);
      const service = body.service;
      const handler = typeof service === 'string' ? services.get(service) : undefined;
      if (!handler) {
        await authenticate();
        send(ctx, badRequest(renderFieldProblems({ service: [problem(present(service) ? 'not_found' : 'required')] })));
        return;
      }
      let data: unknown;
      try {
        // The signed body's request_id is read by the api from the body itself; the header may only narrow.
        const idempotencyKey = ctx.get('Idempotency-Key');
        const pageBaseUrl = `${ctx.state.config.PUBLIC_BASE_URL}${ctx.state.config.MERCHANT_PREFIX}`;
        data = await handler({ body, caller: { merchantId: '', auth }, clients: ctx.state.clients, callOptions, idempotencyKey, pageBaseUrl });
      } catch (error) {
        if (error instanceof DomainError) await authenticate(); // field errors of the façade's readers
        throw error;
      }
      send(ctx, ok(data));
    } catch (error) {
      fail(ctx, error);
    }
  });

  registerDepositPages(router);
  registerInstrumentPages(router);
  return router;
}
