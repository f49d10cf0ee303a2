/**
 * Area A router (payment-services-interface.md "Area A", platform decisions §6): translation only.
 *
 *   POST /partnerapi/v1/token    headers partner-id, partner-secret-key; body user_name, password → JWT.
 *   POST /partnerapi/v1/gateway  Authorization: Bearer; body signed with RSA2 (canonical JSON); dispatch on
 *                                `service`; every answer but UNAUTHENTICATED is signed by the platform.
 *
 * Facts come from TransferService over Connect: the partner of a token and its public key
 * (AuthorizeGatewayRequest), the platform's response signatures (SignGatewayResponse), and the operations. The
 * façade holds no key material; it only verifies request signatures with the partner's public key.
 *
 * Order of checks on the gateway: token (401) → JSON object → sign_type → sign (400 "invalid sign") → service →
 * fields (400 VALIDATIONERROR naming the first bad field) → the operation.
 */
import Router from '@koa/router';
import { LRUCache } from 'lru-cache';
import { Code } from '@connectrpc/connect';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { verifyBody } from '../../src/crypto/rsa2-json';
import { DomainError } from '../../src/errors';
import { PreTransferState, type PreTransfer } from '../../src/gen/payments/transfer/v1/transfer_pb';
import { amountJson, isCurrency, parseJsonLossless, readAmount, stringifyJson, type Currency } from '../../src/money';
import { readRpcFailure } from '../../src/rpc/errors';
import { exceedsJsonDepth } from '../../src/text';
import type { FacadeContext, FacadeState } from '../app';
import { rpcCallOptions, setRetryAfter } from '../rpc-call';
import {
  AREA_A_LIMITS,
  AREA_A_SERVICES,
  AreaAFailure,
  areaAErrorOf,
  GatewayAnswer,
  INVALID_SIGN_ERROR,
  RATE_LIMITED_ERROR,
  requireFields,
  SYSTEM_ERROR,
  UNAUTHENTICATED_ERROR,
  validationError,
  type AreaAService,
} from './contract';

type Body = Record<string, unknown>;

function transferData(transfer: PreTransfer, fields: string[]): Body {
  const currency = (isCurrency(transfer.currency) ? transfer.currency : 'USD') as Currency;
  const all: Body = {
    result_code: transfer.state === PreTransferState.CONFIRMED ? 'SUCCESS' : 'PENDING',
    fund_transfer_id: transfer.fundTransferId,
    out_trade_no: transfer.outTradeNo,
    receiver_id: transfer.receiverId,
    pre_transfer_id: transfer.preTransferId,
    amount: amountJson(transfer.amountUnits, currency),
    currency: transfer.currency,
    receiver_name: transfer.receiverName,
    expire_in: Number(transfer.expireInSeconds),
  };
  return Object.fromEntries(fields.map((field) => [field, all[field]]));
}

async function dispatch(ctx: FacadeContext, partnerId: string, service: AreaAService, body: Body): Promise<GatewayAnswer> {
  const client = ctx.state.clients.transfer;
  if (service === 'create.unified.fundTransfer') {
    requireFields(body, [
      ['out_trade_no', 'alpha', AREA_A_LIMITS.out_trade_no],
      ['receiver_id', 'receiver', AREA_A_LIMITS.receiver_id],
      ['sender_name', 'string', AREA_A_LIMITS.sender_name],
      ['currency', 'char3', 3],
    ]);
    if (body.amount === undefined || body.amount === null) throw new AreaAFailure(validationError('amount is required'));
    const currency = body.currency as string;
    let amountUnits: bigint;
    try {
      amountUnits = readAmount(body.amount, isCurrency(currency) ? currency : 'USD');
    } catch (error) {
      if (error instanceof DomainError) throw new AreaAFailure(validationError(error.message));
      throw error;
    }
    const answer = await client.createPreTransfer({
      partnerId,
      outTradeNo: body.out_trade_no as string,
      receiverId: body.receiver_id as string,
      senderName: body.sender_name as string,
      amountUnits,
      currency,
    });
    return GatewayAnswer.ok(
      transferData(answer.preTransfer!, ['out_trade_no', 'receiver_id', 'amount', 'currency', 'pre_transfer_id', 'receiver_name', 'expire_in']),
    );
  }
  if (service === 'confirm.fundTransfer') {
    requireFields(body, [['partner_transaction_id', 'alpha', AREA_A_LIMITS.partner_transaction_id]]);
    // A malformed (but present, in-size) pre_transfer_id is NOTEXIST, as the interface's table says.
    requireFields(body, [['pre_transfer_id', 'string', AREA_A_LIMITS.pre_transfer_id]]);
    const answer = await client.confirmPreTransfer({
      partnerId,
      preTransferId: body.pre_transfer_id as string,
      partnerTransactionId: body.partner_transaction_id as string,
    });
    return GatewayAnswer.ok(
      transferData(answer.preTransfer!, [
        'result_code',
        'fund_transfer_id',
        'out_trade_no',
        'receiver_id',
        'pre_transfer_id',
        'amount',
        'currency',
        'receiver_name',
      ]),
    );
  }
  requireFields(body, [['out_trade_no', 'alpha', AREA_A_LIMITS.out_trade_no]]);
  const answer = await client.queryTransfer({ partnerId, outTradeNo: body.out_trade_no as string });
  const transfer = answer.preTransfer!;
  const fields = ['result_code', 'out_trade_no', 'amount', 'currency', 'receiver_id', 'receiver_name'];
  if (transfer.state === PreTransferState.CONFIRMED) fields.splice(1, 0, 'fund_transfer_id');
  return GatewayAnswer.ok(transferData(transfer, fields));
}

/** 429 with Retry-After, unsigned like every answer given before the partner is known. */
function rateLimited(ctx: FacadeContext, retryAfterSeconds: number | undefined): void {
  setRetryAfter(ctx, retryAfterSeconds);
  ctx.status = RATE_LIMITED_ERROR.status;
  ctx.body = { success: false, error_code: RATE_LIMITED_ERROR.error_code, error_desc: RATE_LIMITED_ERROR.error_desc };
}

/** Signs and sends a gateway answer; when signing itself fails, an unsigned SYSTEMERROR. */
async function sendSigned(ctx: FacadeContext, answer: GatewayAnswer): Promise<void> {
  ctx.type = 'application/json';
  try {
    const signed = await ctx.state.clients.transfer.signGatewayResponse({ bodyJson: stringifyJson(answer.body) });
    ctx.status = answer.status;
    ctx.body = stringifyJson({ ...answer.body, sign_type: signed.signType, sign: signed.sign });
  } catch (error) {
    ctx.state.logger.error({ err: error }, 'signing the gateway response failed');
    ctx.status = 500;
    ctx.body = { success: false, error_code: SYSTEM_ERROR.error_code, error_desc: SYSTEM_ERROR.error_desc };
  }
}

function unauthorized(ctx: FacadeContext): void {
  ctx.status = UNAUTHENTICATED_ERROR.status;
  ctx.body = GatewayAnswer.error(UNAUTHENTICATED_ERROR).body;
}

function parseObject(raw: string): Body | undefined {
  try {
    const value = parseJsonLossless(raw);
    // A body nested deeper than any documented shape is refused like one that is not an object.
    return value !== null && typeof value === 'object' && !Array.isArray(value) && !exceedsJsonDepth(value) ? (value as Body) : undefined;
  } catch {
    return undefined;
  }
}

function within(value: string, max: number): boolean {
  return value.length > 0 && value.length <= max;
}

/** Most parsed partner public keys one router remembers. */
const PUBLIC_KEY_CACHE_MAX = 1000;

export function partnerRouter(): Router<FacadeState> {
  const router = new Router<FacadeState>();
  // Parsed partner public keys by PEM, for this router (parsing a PEM costs more than verifying).
  const publicKeys = new LRUCache<string, KeyObject>({ max: PUBLIC_KEY_CACHE_MAX });
  const publicKeyOf = (pem: string): KeyObject => {
    let key = publicKeys.get(pem);
    if (!key) publicKeys.set(pem, (key = createPublicKey(pem)));
    return key;
  };

  router.post('/partnerapi/v1/token', async (ctx) => {
    const partnerId = ctx.get('partner-id');
    const secretKey = ctx.get('partner-secret-key');
    const body = parseObject(ctx.state.rawBody);
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
      return unauthorized(ctx);
    }
    try {
      const answer = await ctx.state.clients.transfer.issueAccessToken({ partnerId, partnerSecretKey: secretKey, userName, password }, rpcCallOptions(ctx));
      ctx.status = 200;
      ctx.body = { success: true, code: 200, message: 'OK', data: { access_token: answer.accessToken, expire_in: Number(answer.expireInSeconds) } };
    } catch (error) {
      const failure = readRpcFailure(error);
      if (failure.code === Code.Unauthenticated || failure.code === Code.InvalidArgument) return unauthorized(ctx);
      if (failure.reason === 'RATE_LIMITED') return rateLimited(ctx, failure.retryAfterSeconds);
      ctx.state.logger.error({ err: error }, 'token issue failed');
      ctx.status = 500;
      ctx.body = { success: false, error_code: SYSTEM_ERROR.error_code, error_desc: SYSTEM_ERROR.error_desc };
    }
  });

  router.post('/partnerapi/v1/gateway', async (ctx) => {
    const authorization = ctx.get('Authorization');
    const match = /^Bearer ([^\s]+)$/.exec(authorization);
    if (!match || authorization.length > AREA_A_LIMITS.Authorization) return unauthorized(ctx);
    let partnerId: string;
    let publicKeyPem: string;
    try {
      const answer = await ctx.state.clients.transfer.authorizeGatewayRequest({ accessToken: match[1]! }, rpcCallOptions(ctx));
      partnerId = answer.partnerId;
      publicKeyPem = answer.partnerPublicKeyPem;
    } catch (error) {
      const failure = readRpcFailure(error);
      if (failure.code === Code.Unauthenticated || failure.code === Code.InvalidArgument) return unauthorized(ctx);
      if (failure.reason === 'RATE_LIMITED') return rateLimited(ctx, failure.retryAfterSeconds);
      ctx.state.logger.error({ err: error }, 'gateway authorization failed');
      return sendSigned(ctx, GatewayAnswer.error(SYSTEM_ERROR));
    }

    let answer: GatewayAnswer;
    try {
      const body = parseObject(ctx.state.rawBody);
      if (!body) throw new AreaAFailure(validationError('the body must be a JSON object'));
      if (body.sign_type !== undefined && body.sign_type !== 'RSA2') throw new AreaAFailure(validationError('sign_type must be RSA2'));
      if (!verifyBody(body, publicKeyOf(publicKeyPem))) throw new AreaAFailure(INVALID_SIGN_ERROR);
      requireFields(body, [['service', 'string', AREA_A_LIMITS.service]]);
      const service = body.service as string;
      if (!(AREA_A_SERVICES as readonly string[]).includes(service)) throw new AreaAFailure(validationError('unknown service'));
      answer = await dispatch(ctx, partnerId, service as AreaAService, body);
    } catch (error) {
      if (error instanceof AreaAFailure) {
        answer = GatewayAnswer.error(error.error);
      } else {
        const failure = readRpcFailure(error);
        const mapped = failure.code === Code.Unauthenticated ? undefined : areaAErrorOf(failure);
        if (!mapped) return unauthorized(ctx);
        if (mapped === SYSTEM_ERROR) ctx.state.logger.error({ err: error }, 'gateway operation failed');
        answer = GatewayAnswer.error(mapped);
      }
    }
    return sendSigned(ctx, answer);
  });

  return router;
}
