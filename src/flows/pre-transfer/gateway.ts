/**
 * The Area A gateway (A2, payment-services-interface.md "Area A", platform decisions §6), answered whole by the api:
 * the façade forwards the `Authorization` header and the body as received and sends back the status and body text
 * this returns. The partner's proof is checked here, where the money moves, and only the platform's own answers are
 * ever signed.
 *
 * Order of checks: token (401, unsigned) → partner active (401) → request rate (429, unsigned, Retry-After) → JSON
 * object → sign_type → sign (400 "invalid sign") → service → fields (400 VALIDATIONERROR naming the first bad field)
 * → the operation. Every answer but 401 and 429 is signed with the platform key (RSA2 over the canonical JSON).
 *
 * A signature covers a JSON number as the ECMAScript double its canonical string writes (`10.50` is signed as
 * `10.5`), while the platform reads amounts as exact decimals. So a body is accepted only when each of its numbers is
 * the decimal its canonical text names: `1.2300000000000000001` (signed as `1.23`) is an invalid sign, never an
 * amount the partner did not sign.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { signRsa2 } from '../../crypto/rsa2';
import { canonicalJson, verifyBody } from '../../crypto/rsa2-json';
import { DomainError } from '../../errors';
import type { GatewayRequest, GatewayResponse } from '../../gen/payments/transfer/v1/transfer_pb';
import { amountJson, isCurrency, isLosslessNumber, parseJsonLossless, readAmount, stringifyJson, type Currency } from '../../money';
import type { Partner } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { exceedsJsonDepth } from '../../text';
import {
  AREA_A_LIMITS,
  AREA_A_SERVICES,
  AreaAFailure,
  areaAErrorOf,
  errorEnvelope,
  GatewayAnswer,
  INVALID_SIGN_ERROR,
  RATE_LIMITED_ERROR,
  requireFields,
  SYSTEM_ERROR,
  UNAUTHENTICATED_ERROR,
  validationError,
  type AreaAService,
} from './area-a';
import type { PreTransferRow } from './store';

type Body = Record<string, unknown>;
type Answer = Pick<GatewayResponse, 'status' | 'body' | 'retryAfterSeconds'>;

/** What the gateway needs of the flow (src/flows/pre-transfer/service.ts). Each throws the flow's DomainErrors. */
export interface PreTransferOperations {
  /** The partner a valid, unexpired access token names, when that partner is active. */
  partnerOfToken(token: string): Promise<Partner | undefined>;
  create(partner: Partner, input: { out_trade_no: string; receiver_id: string; sender_name: string; amount_units: bigint; currency: string }): Promise<PreTransferRow>;
  /** Records what was verified (`body_sha256`, and the bound credential on the typed path) before confirming. */
  confirm(partner: Partner, input: { pre_transfer_id: string; partner_transaction_id: string; body_sha256: string; credential_id?: string }): Promise<PreTransferRow>;
  query(partner: Partner, input: { out_trade_no: string }): Promise<PreTransferRow>;
}

/** The `data` fields of a pre-transfer, in the order the interface lists them. */
function transferData(row: PreTransferRow, fields: string[]): Body {
  const currency = (isCurrency(row.currency) ? row.currency : 'USD') as Currency;
  const all: Body = {
    result_code: row.state === 'confirmed' ? 'SUCCESS' : 'PENDING',
    fund_transfer_id: row.fund_transfer_id ?? '',
    out_trade_no: row.out_trade_no,
    receiver_id: row.receiver_id,
    pre_transfer_id: row.id,
    amount: amountJson(BigInt(row.amount_units), currency),
    currency: row.currency,
    receiver_name: row.receiver_name,
    expire_in: row.ttl_seconds,
  };
  return Object.fromEntries(fields.map((field) => [field, all[field]]));
}

const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** A decimal text's value as `digits e exponent` without leading or trailing zeros ("0" for zero), or undefined. */
function decimalValue(text: string): string | undefined {
  const match = DECIMAL.exec(text);
  if (!match) return undefined;
  const [, sign = '', whole, fraction = '', exponent = '0'] = match;
  const digits = `${whole}${fraction}`.replace(/^0+/, '');
  if (digits === '') return '0';
  const significant = digits.replace(/0+$/, '');
  return `${sign}${significant}e${BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - significant.length)}`;
}

/**
 * True when every number in `value` is the decimal its canonical (ECMAScript) text names, so the signature over the
 * canonical string covers the very value the platform reads.
 */
export function numbersSignedExactly(value: unknown): boolean {
  if (isLosslessNumber(value)) {
    const text = value.toString();
    const double = Number(text);
    return Number.isFinite(double) && decimalValue(text) === decimalValue(String(double));
  }
  if (Array.isArray(value)) return value.every(numbersSignedExactly);
  if (value !== null && typeof value === 'object') return Object.values(value as Body).every(numbersSignedExactly);
  return true;
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

/** Most parsed partner public keys one process remembers (parsing a PEM costs more than verifying). */
const PUBLIC_KEY_CACHE_MAX = 1000;
const BEARER = /^Bearer ([^\s]+)$/;

/**
 * The Gateway RPC: one A2 request in, its HTTP answer out. Partner mistakes are answers; only a fault of the RPC
 * itself (deadline, admission) reaches the façade as an error.
 */
export function createGateway(
  deps: Pick<PlatformDeps, 'abuse' | 'keys' | 'logger'>,
  operations: PreTransferOperations,
): (request: GatewayRequest, context: HandlerContext) => Promise<Answer> {
  const publicKeys = new LRUCache<string, KeyObject>({ max: PUBLIC_KEY_CACHE_MAX });
  const publicKeyOf = (pem: string): KeyObject => {
    let key = publicKeys.get(pem);
    if (!key) publicKeys.set(pem, (key = createPublicKey(pem)));
    return key;
  };
  const unsigned = (error: typeof UNAUTHENTICATED_ERROR, retryAfterSeconds = 0): Answer => ({
    status: error.status,
    body: JSON.stringify(errorEnvelope(error)),
    retryAfterSeconds,
  });
  const signed = (answer: GatewayAnswer): Answer => {
    try {
      const sign = signRsa2(canonicalJson(answer.body), deps.keys.privateKey);
      return { status: answer.status, body: stringifyJson({ ...answer.body, sign_type: 'RSA2', sign }), retryAfterSeconds: 0 };
    } catch (error) {
      deps.logger.error({ err: error }, 'signing the gateway answer failed');
      return unsigned(SYSTEM_ERROR);
    }
  };
  const logFault = (context: HandlerContext, error: unknown, message: string) =>
    deps.logger.error({ err: error, request_id: context.requestHeader.get('x-request-id') ?? undefined }, message);

  async function dispatch(partner: Partner, service: AreaAService, body: Body, raw: string): Promise<GatewayAnswer> {
    if (service === 'create.unified.fundTransfer') {
      requireFields(body, [
        ['out_trade_no', 'alpha', AREA_A_LIMITS.out_trade_no],
        ['receiver_id', 'receiver', AREA_A_LIMITS.receiver_id],
        ['sender_name', 'string', AREA_A_LIMITS.sender_name],
        ['currency', 'char3', 3],
      ]);
      if (body.amount === undefined || body.amount === null) throw new AreaAFailure(validationError('amount is required'));
      const currency = body.currency as string;
      let amount_units: bigint;
      try {
        amount_units = readAmount(body.amount, isCurrency(currency) ? currency : 'USD');
      } catch (error) {
        if (error instanceof DomainError) throw new AreaAFailure(validationError(error.message));
        throw error;
      }
      const row = await operations.create(partner, {
        out_trade_no: body.out_trade_no as string,
        receiver_id: body.receiver_id as string,
        sender_name: body.sender_name as string,
        amount_units,
        currency,
      });
      return GatewayAnswer.ok(transferData(row, ['out_trade_no', 'receiver_id', 'amount', 'currency', 'pre_transfer_id', 'receiver_name', 'expire_in']));
    }
    if (service === 'confirm.fundTransfer') {
      requireFields(body, [['partner_transaction_id', 'alpha', AREA_A_LIMITS.partner_transaction_id]]);
      // A malformed (but present, in-size) pre_transfer_id is NOTEXIST, as the interface's table says.
      requireFields(body, [['pre_transfer_id', 'string', AREA_A_LIMITS.pre_transfer_id]]);
      const row = await operations.confirm(partner, {
        pre_transfer_id: body.pre_transfer_id as string,
        partner_transaction_id: body.partner_transaction_id as string,
        body_sha256: createHash('sha256').update(raw).digest('hex'),
      });
      return GatewayAnswer.ok(
        transferData(row, ['result_code', 'fund_transfer_id', 'out_trade_no', 'receiver_id', 'pre_transfer_id', 'amount', 'currency', 'receiver_name']),
      );
    }
    requireFields(body, [['out_trade_no', 'alpha', AREA_A_LIMITS.out_trade_no]]);
    const row = await operations.query(partner, { out_trade_no: body.out_trade_no as string });
    const fields = ['result_code', 'out_trade_no', 'amount', 'currency', 'receiver_id', 'receiver_name'];
    if (row.state === 'confirmed') fields.splice(1, 0, 'fund_transfer_id');
    return GatewayAnswer.ok(transferData(row, fields));
  }

  return async (request, context) => {
    const match = BEARER.exec(request.authorization);
    if (!match || request.authorization.length > AREA_A_LIMITS.Authorization) return unsigned(UNAUTHENTICATED_ERROR);
    let partner: Partner | undefined;
    try {
      partner = await operations.partnerOfToken(match[1]!);
      if (!partner) return unsigned(UNAUTHENTICATED_ERROR);
      await deps.abuse.consumeRequest(`partner:${partner.id}`);
    } catch (error) {
      if (error instanceof DomainError && error.reason === 'RATE_LIMITED') return unsigned(RATE_LIMITED_ERROR, error.retryAfterSeconds ?? 1);
      logFault(context, error, 'gateway authorization failed');
      return signed(GatewayAnswer.error(SYSTEM_ERROR));
    }

    let answer: GatewayAnswer;
    try {
      const body = parseObject(request.body);
      if (!body) throw new AreaAFailure(validationError('the body must be a JSON object'));
      if (body.sign_type !== undefined && body.sign_type !== 'RSA2') throw new AreaAFailure(validationError('sign_type must be RSA2'));
      if (!verifyBody(body, publicKeyOf(partner.public_key_pem)) || !numbersSignedExactly(body)) throw new AreaAFailure(INVALID_SIGN_ERROR);
      requireFields(body, [['service', 'string', AREA_A_LIMITS.service]]);
      const service = body.service as string;
      if (!(AREA_A_SERVICES as readonly string[]).includes(service)) throw new AreaAFailure(validationError('unknown service'));
      answer = await dispatch(partner, service as AreaAService, body, request.body);
    } catch (error) {
      if (error instanceof AreaAFailure) {
        answer = GatewayAnswer.error(error.error);
      } else if (error instanceof DomainError) {
        const mapped = areaAErrorOf(error);
        if (mapped === UNAUTHENTICATED_ERROR) return unsigned(UNAUTHENTICATED_ERROR);
        if (mapped === RATE_LIMITED_ERROR) return unsigned(RATE_LIMITED_ERROR, error.retryAfterSeconds ?? 1);
        if (mapped === SYSTEM_ERROR) logFault(context, error, 'gateway operation failed');
        answer = GatewayAnswer.error(mapped);
      } else {
        logFault(context, error, 'gateway operation failed');
        answer = GatewayAnswer.error(SYSTEM_ERROR);
      }
    }
    return signed(answer);
  };
}
