/**
 * Area A router (payment-services-interface.md "Area A", platform decisions §6): forwarding only, one RPC per
 * request.
 *
 *   POST /partnerapi/v1/token    headers partner-id, partner-secret-key; body user_name, password → JWT
 *                                (TransferService IssueAccessToken).
 *   POST /partnerapi/v1/gateway  the `Authorization` header and the body as received go to TransferService Gateway,
 *                                which verifies the partner's token and RSA2 signature, performs the operation and
 *                                answers the HTTP status and the exact body (signed by the platform, but 401 and
 *                                429); the façade sends them as they are.
 *
 * The façade holds no key and checks no partner proof: where the money moves, the api does. When the api cannot be
 * reached or does not answer in time, the answer is 500 SYSTEMERROR, unsigned (nothing here can sign). The answers'
 * table, limits and envelopes are the api's own (src/flows/pre-transfer/area-a.ts); the façade's edge answers
 * (unknown route, wrong method, body too large) are in ./contract.ts.
 */
import Router from '@koa/router';
import { Code } from '@connectrpc/connect';
import { parseJsonLossless } from '../../src/money';
import { readRpcFailure } from '../../src/rpc/errors';
import { exceedsJsonDepth } from '../../src/text';
import type { FacadeContext, FacadeState } from '../context';
import { rpcCallOptions, setRetryAfter } from '../rpc-call';
import { AREA_A_LIMITS, errorEnvelope, RATE_LIMITED_ERROR, SYSTEM_ERROR, UNAUTHENTICATED_ERROR, type AreaAError } from '../../src/flows/pre-transfer/area-a';

/** An unsigned answer: 401, 429 (with Retry-After) and the façade's own SYSTEMERROR. */
function unsigned(ctx: FacadeContext, error: AreaAError, retryAfterSeconds?: number): void {
  setRetryAfter(ctx, retryAfterSeconds);
  ctx.status = error.status;
  ctx.body = errorEnvelope(error);
}

function within(value: string, max: number): boolean {
  return value.length > 0 && value.length <= max;
}

/** The token request's body, when it is a JSON object (nested no deeper than any documented shape). */
function tokenBody(raw: string): { user_name?: unknown; password?: unknown } | undefined {
  try {
    const value = parseJsonLossless(raw);
    return value !== null && typeof value === 'object' && !Array.isArray(value) && !exceedsJsonDepth(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export function partnerRouter(): Router<FacadeState> {
  const router = new Router<FacadeState>();

  router.post('/partnerapi/v1/token', async (ctx) => {
    const partnerId = ctx.get('partner-id');
    const secretKey = ctx.get('partner-secret-key');
    const body = tokenBody(ctx.state.rawBody);
    const userName = body?.user_name;
    const password = body?.password;
    if (
      !within(partnerId, AREA_A_LIMITS['partner-id']) ||
      !within(secretKey, AREA_A_LIMITS['partner-secret-key']) ||
      typeof userName !== 'string' ||
      !within(userName, AREA_A_LIMITS.user_name) ||
      typeof password !== 'string' ||
      !within(password, AREA_A_LIMITS.password)
    ) {
      return unsigned(ctx, UNAUTHENTICATED_ERROR);
    }
    try {
      const answer = await ctx.state.clients.transfer.issueAccessToken({ partnerId, partnerSecretKey: secretKey, userName, password }, rpcCallOptions(ctx));
      ctx.status = 200;
      ctx.body = { success: true, code: 200, message: 'OK', data: { access_token: answer.accessToken, expire_in: Number(answer.expireInSeconds) } };
    } catch (error) {
      const failure = readRpcFailure(error, 'transfer');
      if (failure.code === Code.Unauthenticated || failure.code === Code.InvalidArgument) return unsigned(ctx, UNAUTHENTICATED_ERROR);
      if (failure.reason === 'RATE_LIMITED') return unsigned(ctx, RATE_LIMITED_ERROR, failure.retryAfterSeconds);
      ctx.state.logger.error({ err: error }, 'token issue failed');
      unsigned(ctx, SYSTEM_ERROR);
    }
  });

  router.post('/partnerapi/v1/gateway', async (ctx) => {
    try {
      const answer = await ctx.state.clients.transfer.gateway({ authorization: ctx.get('Authorization'), body: ctx.state.rawBody }, rpcCallOptions(ctx));
      setRetryAfter(ctx, answer.retryAfterSeconds);
      ctx.status = answer.status;
      ctx.type = 'application/json';
      ctx.body = answer.body;
    } catch (error) {
      ctx.state.logger.error({ err: error }, 'gateway call failed');
      unsigned(ctx, SYSTEM_ERROR);
    }
  });

  return router;
}
