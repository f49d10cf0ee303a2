/**
 * The Area A gateway (A2, payment-services-interface.md "Area A", platform decisions §6), answered whole by the api:
 * the façade forwards the `Authorization` header and the body as received and sends back the status and body text
 * this returns. The partner's proof is checked here, where the money moves, and only the platform's own answers are
 * ever signed.
 *
 * Order of checks: token (401, unsigned) → partner active (401) → request rate (429, unsigned, Retry-After) → JSON
 * object → sign_type → sign (400 "invalid sign") → service → fields (400 VALIDATIONERROR naming the first bad field,
 * area-a.ts's rules) → the operation. Every answer but 401 and 429 is signed with the platform key (RSA2 over the
 * canonical JSON). A refusal of the operation is a DomainError of the TransferService, answered as its Area A error
 * (area-a.ts) and signed: no form in between.
 *
 * A signature covers a JSON number as the ECMAScript double its canonical string writes (`10.50` is signed as
 * `10.5`), while the platform reads amounts as exact decimals. So a body is accepted only when each of its numbers is
 * the decimal its canonical text names: `1.2300000000000000001` (signed as `1.23`) is an invalid sign, never an
 * amount the partner did not sign.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { canonicalJson, signRsa2, verifyBody } from '../../crypto/rsa2';
import { DomainError } from '../../errors';
import type { GatewayRequest, GatewayResponse } from '../../gen/payments/transfer/v1/transfer_pb';
import { amountJson, isCurrency, isLosslessNumber, parseJsonLossless, stringifyJson, type Currency } from '../../money';
import type { Partner } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { exceedsJsonDepth } from '../../text';
import {
  AREA_A_FIELD_RULES,
  AREA_A_LIMITS,
  AREA_A_SERVICES,
  AreaAFailure,
  areaAErrorOf,
  errorEnvelope,
  INVALID_SIGN_ERROR,
  okEnvelope,
  RATE_LIMITED_ERROR,
  readAreaA,
  SERVICE_FIELD,
  SYSTEM_ERROR,
  UNAUTHENTICATED_ERROR,
  validationError,
  type AreaAError,
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

type Deps = Pick<PlatformDeps, 'abuse' | 'keys' | 'logger'>;

/** An unsigned answer: 401 and 429 (with Retry-After), and the SYSTEMERROR of a signing fault. */
function unsigned(error: AreaAError, retryAfterSeconds = 0): Answer {
  return { status: error.status, body: JSON.stringify(errorEnvelope(error)), retryAfterSeconds };
}

/** The answer `body` signed with the platform key (RSA2 over its canonical JSON); a signing fault is unsigned. */
function signed(deps: Deps, status: number, body: Body): Answer {
  try {
    const sign = signRsa2(canonicalJson(body), deps.keys.privateKey);
    return { status, body: stringifyJson({ ...body, sign_type: 'RSA2', sign }), retryAfterSeconds: 0 };
  } catch (error) {
    deps.logger.error({ err: error }, 'signing the gateway answer failed');
    return unsigned(SYSTEM_ERROR);
  }
}

/** The `data` of each service's answer, its fields read first (area-a.ts): the operation's row, as the interface lists it. */
const SERVICES: Record<AreaAService, (operations: PreTransferOperations, partner: Partner, body: Body, raw: string) => Promise<Body>> = {
  async 'create.unified.fundTransfer'(operations, partner, body) {
    const { out_trade_no, receiver_id, sender_name, currency, amount } = readAreaA(AREA_A_FIELD_RULES['create.unified.fundTransfer'], body);
    const row = await operations.create(partner, { out_trade_no, receiver_id, sender_name, currency, amount_units: amount });
    return transferData(row, ['out_trade_no', 'receiver_id', 'amount', 'currency', 'pre_transfer_id', 'receiver_name', 'expire_in']);
  },
  async 'confirm.fundTransfer'(operations, partner, body, raw) {
    const fields = readAreaA(AREA_A_FIELD_RULES['confirm.fundTransfer'], body);
    const row = await operations.confirm(partner, { ...fields, body_sha256: createHash('sha256').update(raw).digest('hex') });
    return transferData(row, ['result_code', 'fund_transfer_id', 'out_trade_no', 'receiver_id', 'pre_transfer_id', 'amount', 'currency', 'receiver_name']);
  },
  async 'query.fundTransfer'(operations, partner, body) {
    const row = await operations.query(partner, readAreaA(AREA_A_FIELD_RULES['query.fundTransfer'], body));
    const fields = ['result_code', 'out_trade_no', 'amount', 'currency', 'receiver_id', 'receiver_name'];
    if (row.state === 'confirmed') fields.splice(1, 0, 'fund_transfer_id');
    return transferData(row, fields);
  },
};

function isPartner(value: Partner | Answer): value is Partner {
  return 'public_key_pem' in value;
}

/**
 * The partner a bearer token names, once its request rate allows the request; else the unsigned answer (401, 429),
 * or the signed SYSTEMERROR of a fault.
 */
async function authorize(deps: Deps, operations: PreTransferOperations, authorization: string, logFault: (error: unknown) => void): Promise<Partner | Answer> {
  const match = BEARER.exec(authorization);
  if (!match || authorization.length > AREA_A_LIMITS.Authorization) return unsigned(UNAUTHENTICATED_ERROR);
  try {
    const partner = await operations.partnerOfToken(match[1]!);
    if (!partner) return unsigned(UNAUTHENTICATED_ERROR);
    await deps.abuse.consumeRequest(`partner:${partner.id}`);
    return partner;
  } catch (error) {
    if (error instanceof DomainError && error.reason === 'RATE_LIMITED') return unsigned(RATE_LIMITED_ERROR, error.retryAfterSeconds ?? 1);
    logFault(error);
    return signed(deps, SYSTEM_ERROR.status, errorEnvelope(SYSTEM_ERROR));
  }
}

/**
 * The request's service and body, once the body is a JSON object signed by the partner with a known service.
 * @throws AreaAFailure VALIDATIONERROR (not an object, sign_type, the service field, an unknown service), "invalid sign"
 */
function verifiedRequest(partnerKey: KeyObject, raw: string): { service: AreaAService; body: Body } {
  const body = parseObject(raw);
  if (!body) throw new AreaAFailure(validationError('the body must be a JSON object'));
  if (body.sign_type !== undefined && body.sign_type !== 'RSA2') throw new AreaAFailure(validationError('sign_type must be RSA2'));
  if (!verifyBody(body, partnerKey) || !numbersSignedExactly(body)) throw new AreaAFailure(INVALID_SIGN_ERROR);
  const { service } = readAreaA(SERVICE_FIELD, body);
  if (!(AREA_A_SERVICES as readonly string[]).includes(service)) throw new AreaAFailure(validationError('unknown service'));
  return { service: service as AreaAService, body };
}

/**
 * The answer to what handling a verified request threw: a validation failure as it is, a TransferService refusal as
 * its Area A error (401 and 429 unsigned), anything else the signed SYSTEMERROR (logged).
 */
function refusal(deps: Deps, error: unknown, logFault: (error: unknown) => void): Answer {
  if (error instanceof AreaAFailure) return signed(deps, error.error.status, errorEnvelope(error.error));
  const areaA = error instanceof DomainError ? areaAErrorOf(error) : SYSTEM_ERROR;
  if (areaA === UNAUTHENTICATED_ERROR) return unsigned(UNAUTHENTICATED_ERROR);
  if (areaA === RATE_LIMITED_ERROR) return unsigned(RATE_LIMITED_ERROR, (error as DomainError).retryAfterSeconds ?? 1);
  if (areaA === SYSTEM_ERROR) logFault(error);
  return signed(deps, areaA.status, errorEnvelope(areaA));
}

/**
 * The Gateway RPC: one A2 request in, its HTTP answer out. Partner mistakes are answers; only a fault of the RPC
 * itself (deadline, admission) reaches the façade as an error.
 */
export function createGateway(deps: Deps, operations: PreTransferOperations): (request: GatewayRequest, context: HandlerContext) => Promise<Answer> {
  const publicKeys = new LRUCache<string, KeyObject>({ max: PUBLIC_KEY_CACHE_MAX });
  const publicKeyOf = (pem: string): KeyObject => {
    let key = publicKeys.get(pem);
    if (!key) publicKeys.set(pem, (key = createPublicKey(pem)));
    return key;
  };
  return async (request, context) => {
    const logFault = (error: unknown) =>
      deps.logger.error({ err: error, request_id: context.requestHeader.get('x-request-id') ?? undefined }, 'gateway request failed');
    const partner = await authorize(deps, operations, request.authorization, logFault);
    if (!isPartner(partner)) return partner;
    try {
      const { service, body } = verifiedRequest(publicKeyOf(partner.public_key_pem), request.body);
      return signed(deps, 200, okEnvelope(await SERVICES[service](operations, partner, body, request.body)));
    } catch (error) {
      return refusal(deps, error, logFault);
    }
  };
}
