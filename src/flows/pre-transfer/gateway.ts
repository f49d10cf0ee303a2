/**
 * The partner's own doors of Area A (payment-services-interface.md "Area A", platform decisions §6), answered by the
 * api: A1 issues the access token (HS256 JWTs naming the partner, "Access token response"), and A2, the gateway, is
 * answered whole: the façade forwards the `Authorization` header and the body as received and sends back the status
 * and body text this returns. The partner's proof is checked here, where the money moves, and only the platform's
 * own answers are ever signed.
 *
 * Order of the gateway's checks: token (401, unsigned) → partner active (401) → request rate (429, unsigned,
 * Retry-After) → JSON object → sign_type → sign (400 "invalid sign") → service → fields (400 VALIDATIONERROR naming
 * the first bad field, area-a.ts's rules) → the operation. Every answer but 401 and 429 is signed with the platform
 * key (RSA2 over the canonical JSON). A refusal of the operation is a DomainError of the TransferService, answered as
 * its Area A error (area-a.ts) and signed: no form in between.
 *
 * A signature covers a JSON number as the ECMAScript double its canonical string writes (`10.50` is signed as
 * `10.5`), while the platform reads amounts as exact decimals. So a body is accepted only when each of its numbers is
 * the decimal its canonical text names: `1.2300000000000000001` (signed as `1.23`) is an invalid sign, never an
 * amount the partner did not sign.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { decodeJwt, jwtVerify, SignJWT } from 'jose';
import { LRUCache } from 'lru-cache';
import { createHash, createPublicKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { canonicalJson, signRsa2, verifyBody } from '../../crypto/rsa2';
import { COMMON_REASONS, DomainError, reasonError } from '../../errors';
import type { GatewayRequest, GatewayResponse, IssueAccessTokenRequest } from '../../gen/payments/transfer/v1/transfer_pb';
import { amountJson, isCurrency, isLosslessNumber, parseJsonLossless, stringifyJson, type Currency } from '../../money';
import { authenticatePartner, type Partner } from '../../onboarding';
import type { EventsPage } from '../../events';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
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

// ---- A1: the access token ----

const TOKEN_AUDIENCE = 'partnerapi';
const TOKEN_ISSUER = 'payments-platform';

/** HS256 key of the access tokens, derived from the platform data-encryption key (HKDF-SHA256). */
export function accessTokenKey(dataKey: Buffer): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', dataKey, Buffer.alloc(0), 'area-a-access-token', 32));
}

/** Issues a token for `partner_id` expiring in `expire_in_seconds`. */
export function issueAccessToken(key: Uint8Array, partner_id: string, expire_in_seconds: number): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(partner_id)
    .setIssuer(TOKEN_ISSUER)
    .setAudience(TOKEN_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + expire_in_seconds)
    .setJti(randomBytes(12).toString('hex'))
    .sign(key);
}

/** Compact JWS: three base64url segments, nothing else (no padding, whitespace or other bytes anywhere). */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const MAX_TOKEN_LENGTH = 1200;

/** True when every segment is the canonical base64url of its bytes (decoding and encoding again gives it back). */
function canonicalSegments(token: string): boolean {
  return token.split('.').every((segment) => Buffer.from(segment, 'base64url').toString('base64url') === segment);
}

/**
 * The partner id of a valid, unexpired token; undefined for anything else (never throws). The token must be the
 * issued bytes exactly: a strict compact JWS whose segments round-trip, so no appended, inserted or padded byte is
 * ever accepted.
 */
export async function verifyAccessToken(key: Uint8Array, token: string): Promise<string | undefined> {
  if (token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token) || !canonicalSegments(token)) return undefined;
  try {
    const verified = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      audience: TOKEN_AUDIENCE,
      issuer: TOKEN_ISSUER,
      requiredClaims: ['exp', 'sub'],
    });
    return verified.payload.sub;
  } catch {
    return undefined;
  }
}

/** Most verified tokens one verifier remembers. */
const VERIFIED_TOKEN_CACHE_MAX = 10_000;

/**
 * `verifyAccessToken` remembering each token it verified (by its exact bytes) until the token expires: a partner
 * presents the same token on every gateway call for up to ACCESS_TOKEN_TTL_SECONDS, and a token never changes, so
 * its signature, audience, issuer and claims need checking once per process. Expiry is checked on every call; the
 * partner's status is the caller's to check (a suspension applies at once).
 */
export function createAccessTokenVerifier(key: Uint8Array): (token: string) => Promise<string | undefined> {
  const verified = new LRUCache<string, { partner_id: string; expires_at_ms: number }>({ max: VERIFIED_TOKEN_CACHE_MAX });
  return async (token) => {
    const known = verified.get(token);
    if (known) {
      if (Date.now() < known.expires_at_ms) return known.partner_id;
      verified.delete(token);
      return undefined;
    }
    const partner_id = await verifyAccessToken(key, token);
    if (partner_id === undefined) return undefined;
    const { exp } = decodeJwt(token);
    if (typeof exp === 'number') verified.set(token, { partner_id, expires_at_ms: exp * 1000 });
    return partner_id;
  };
}

const unauthenticated = () => reasonError(COMMON_REASONS, 'UNAUTHENTICATED', 'no valid partner credential');

/**
 * The partner whose four A1 credentials these are, checked at the hashing pool's pace; undefined for any wrong one.
 * A fault withdraws the attempt (it counts neither way).
 */
async function partnerOfCredentials(deps: PlatformDeps, request: IssueAccessTokenRequest, context: HandlerContext, attempt: { withdrawn(): Promise<void> }): Promise<Partner | undefined> {
  if (!request.partnerId || !request.partnerSecretKey || !request.userName || !request.password) return undefined;
  try {
    return await deps.abuse.hashing(
      () =>
        authenticatePartner(deps.database, {
          partner_id: request.partnerId,
          partner_secret_key: request.partnerSecretKey,
          user_name: request.userName,
          password: request.password,
        }),
      context.signal,
    );
  } catch (error) {
    await attempt.withdrawn();
    throw error;
  }
}

/**
 * A1. Failed attempts are counted per partner id and per client address (src/abuse): past the limit every attempt,
 * right or wrong, answers RATE_LIMITED until the window ends, for known and unknown ids alike.
 * @throws DomainError UNAUTHENTICATED, RATE_LIMITED
 */
export async function issuePartnerToken(deps: PlatformDeps, key: Uint8Array, request: IssueAccessTokenRequest, context: HandlerContext) {
  const attempt = await deps.abuse.beginAttempt('partner_token', request.partnerId, clientAddressOf(context));
  const partner = await partnerOfCredentials(deps, request, context, attempt);
  if (!partner) {
    await attempt.failed();
    throw unauthenticated();
  }
  await attempt.succeeded();
  const expireIn = deps.config.ACCESS_TOKEN_TTL_SECONDS;
  return { accessToken: await issueAccessToken(key, partner.id, expireIn), expireInSeconds: BigInt(expireIn) };
}

// ---- A2: the gateway ----

type Body = Record<string, unknown>;
type Answer = Pick<GatewayResponse, 'status' | 'body' | 'retryAfterSeconds'>;

/** What the gateway needs of the flow (src/flows/pre-transfer/service.ts). Each throws the flow's DomainErrors. */
export interface PreTransferOperations {
  /** The partner a valid, unexpired access token names, when that partner is active. */
  partnerOfToken(token: string): Promise<Partner | undefined>;
  /** `context`: the request's, for the request journal (its client address). */
  create(partner: Partner, input: { out_trade_no: string; receiver_id: string; sender_name: string; amount_units: bigint; currency: string }, context?: HandlerContext): Promise<PreTransferRow>;
  /** Records what was verified (`body_sha256`, and the bound credential on the typed path) before confirming. */
  confirm(
    partner: Partner,
    input: { pre_transfer_id: string; partner_transaction_id: string; body_sha256: string; credential_id?: string },
    context?: HandlerContext,
  ): Promise<PreTransferRow>;
  query(partner: Partner, input: { out_trade_no: string }): Promise<PreTransferRow>;
  /** One page of the partner's own events after `after` (docs/events.md), `limit` 1..500. */
  events(partner: Partner, input: { after: bigint; limit: number }): Promise<EventsPage>;
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
const SERVICES: Record<AreaAService, (operations: PreTransferOperations, partner: Partner, body: Body, raw: string, context: HandlerContext) => Promise<Body>> = {
  async 'create.unified.fundTransfer'(operations, partner, body, _raw, context) {
    const { out_trade_no, receiver_id, sender_name, currency, amount } = readAreaA(AREA_A_FIELD_RULES['create.unified.fundTransfer'], body);
    const row = await operations.create(partner, { out_trade_no, receiver_id, sender_name, currency, amount_units: amount }, context);
    return transferData(row, ['out_trade_no', 'receiver_id', 'amount', 'currency', 'pre_transfer_id', 'receiver_name', 'expire_in']);
  },
  async 'confirm.fundTransfer'(operations, partner, body, raw, context) {
    const fields = readAreaA(AREA_A_FIELD_RULES['confirm.fundTransfer'], body);
    const row = await operations.confirm(partner, { ...fields, body_sha256: createHash('sha256').update(raw).digest('hex') }, context);
    return transferData(row, ['result_code', 'fund_transfer_id', 'out_trade_no', 'receiver_id', 'pre_transfer_id', 'amount', 'currency', 'receiver_name']);
  },
  async 'query.events'(operations, partner, body) {
    const { after, limit } = readAreaA(AREA_A_FIELD_RULES['query.events'], body);
    const page = await operations.events(partner, { after: BigInt(after ?? 0), limit: limit ?? 100 });
    return {
      events: page.events.map((event) => ({
        seq: Number(event.seq),
        type: event.type,
        subject: event.subject,
        created_at: event.created_at.toISOString(),
        ledger_transaction_id: event.ledger_transaction_id,
        data: event.data,
      })),
      has_more: page.has_more,
      next_after: Number(page.next_after),
    };
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
      return signed(deps, 200, okEnvelope(await SERVICES[service](operations, partner, body, request.body, context)));
    } catch (error) {
      return refusal(deps, error, logFault);
    }
  };
}
