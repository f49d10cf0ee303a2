/**
 * Merchant authentication, shared by every Area C service (interface "Authentication / Area C", platform decisions
 * §7): merchant headers, the signed body verified with the merchant's stored public key and bound to the typed
 * request (./bindings.ts), the API login (a signed timestamp, each signed login body accepted once), opaque session
 * tokens (stored as SHA-256 hex, lifetime MERCHANT_SESSION_TTL_SECONDS), and the one `requireMerchant` every service
 * calls. No service acts for a merchant id the caller merely asserts: the merchant is the one whose headers, session
 * and signature verify, and the request does only what that signed body says; a request without the merchant's
 * proof is accepted only from a caller whose credential is bound to that merchant (`mayActFor`).
 *
 * Order of checks on every call: merchant headers (401) → session token (401, /do-action only) → the body a JSON
 * object, sign_type, no ambiguous parameter, sign (400 on `sign` / `sign_type` / the parameter) → the typed request
 * equals the signed body (400 `sign`) → the service's own fields.
 */
import { LRUCache } from 'lru-cache';
import type { Knex } from 'knex';
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import { randomToken, sha256Hex } from '../crypto/secrets';
import { ambiguousParameters, canonicalQueryString, SIGN_TYPE_RSA2, verifyRsa2 } from '../crypto/rsa2';
import { problem } from '../field-problems';
import { invalidFields, reasonError, type DomainError, type FieldViolations } from '../errors';
import type { AbuseLimits } from '../abuse';
import { changeAwareCache, type AuthChanges, type ChangeAwareCache } from '../auth-changes';
import { checkIdempotencyKey } from '../idempotency';
import { isLosslessNumber, parseJsonLossless } from '../money';
import { authenticateMerchant, getMerchant, type Merchant } from '../onboarding/merchants';
import { callerOf, mayActFor } from '../rpc/caller';
import { exceedsJsonDepth } from '../text';
import { unboundFields } from './bindings';
import { MERCHANT_AUTH_REASONS } from './reasons';
import type { Envelope, MerchantAct, MerchantAuth, SignedBody } from './types';

export * from './reasons';
export type { Envelope, MerchantAct, MerchantAuth, SignedBody } from './types';
export { SIGNED_BODY_BINDINGS, UNBOUND_FIELDS, unboundFields, type FieldBinding, type SignedAction } from './bindings';

/** Most merchants and sessions one process remembers. */
const AUTH_CACHE_MAX = 10_000;

/** The field problems merchant authentication answers (rendered by the façade's Area C contract). */
const AUTH_PROBLEMS = {
  merchant: problem('merchant_credentials'),
  tokenMissing: problem('session_missing'),
  tokenInvalid: problem('session_invalid'),
  tokenExpired: problem('session_expired'),
  sign: problem('sign'),
  signType: problem('sign_type'),
  separatorInValue: problem('separator_in_value'),
  separatorInName: problem('separator_in_name'),
  loginReplayed: problem('login_replayed'),
} as const;

/**
 * Checks the merchant headers.
 * @throws DomainError unauthenticated MERCHANT_UNAUTHENTICATED (field `merchant`).
 */
export async function authenticateEnvelope(database: Knex, envelope: Envelope | undefined): Promise<Merchant> {
  const merchant = envelope?.merchantId
    ? await authenticateMerchant(database, { merchant_id: envelope.merchantId, merchant_secret_key: envelope.merchantSecretKey })
    : undefined;
  if (!merchant || !envelope) {
    throw reasonError(MERCHANT_AUTH_REASONS, 'MERCHANT_UNAUTHENTICATED', 'merchant unauthenticated', { merchant: [AUTH_PROBLEMS.merchant] });
  }
  return merchant;
}

/** Most parsed merchant public keys one process remembers. */
const PUBLIC_KEY_CACHE_MAX = 1000;

/** Parsed public keys by PEM, for one MerchantAuth (parsing a PEM costs more than verifying). */
function publicKeyCache(): (pem: string) => KeyObject | string {
  const keys = new LRUCache<string, KeyObject>({ max: PUBLIC_KEY_CACHE_MAX });
  return (pem) => {
    let key = keys.get(pem);
    if (!key) {
      try {
        key = createPublicKey(pem);
      } catch {
        return pem; // verifyRsa2 answers false
      }
      keys.set(pem, key);
    }
    return key;
  };
}

function invalidSign(): DomainError {
  return reasonError(MERCHANT_AUTH_REASONS, 'INVALID_SIGNATURE', 'invalid sign', { sign: [AUTH_PROBLEMS.sign] });
}

/** The body as a JSON object (parsed losslessly), else undefined. */
function parseBody(text: string): Record<string, unknown> | undefined {
  try {
    const value = parseJsonLossless(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && !exceedsJsonDepth(value)) return value as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return undefined;
}

/**
 * Parses the envelope's body, checks sign_type, refuses a parameter the canonical string could not tell apart from
 * others (§7: a name holding `&` or `=`, a value holding `&` followed by `=`), and verifies sign over the canonical
 * string the platform computes itself with the merchant's public key.
 * @throws DomainError INVALID_SIGNATURE (field `sign` or `sign_type`); VALIDATION_FAILED on each ambiguous parameter
 */
function verifySignature(publicKeyOf: (pem: string) => KeyObject | string, merchant: Merchant, envelope: Envelope): SignedBody {
  const parameters = parseBody(envelope.body);
  if (!parameters) throw invalidSign();
  const sign = typeof parameters.sign === 'string' ? parameters.sign : '';
  if (parameters.sign_type !== SIGN_TYPE_RSA2) {
    throw reasonError(MERCHANT_AUTH_REASONS, 'INVALID_SIGNATURE', 'invalid sign_type', {
      sign_type: [AUTH_PROBLEMS.signType],
      ...(sign ? {} : { sign: [AUTH_PROBLEMS.sign] }),
    });
  }
  const ambiguous = ambiguousParameters(parameters);
  if (ambiguous.length > 0) {
    const problems: FieldViolations = {};
    for (const name of ambiguous) problems[name] = [name.includes('&') || name.includes('=') ? AUTH_PROBLEMS.separatorInName : AUTH_PROBLEMS.separatorInValue];
    throw invalidFields(problems);
  }
  if (!sign || !verifyRsa2(canonicalQueryString(parameters), sign, publicKeyOf(merchant.public_key_pem))) throw invalidSign();
  return { parameters, id: createHash('sha256').update(Buffer.from(sign, 'base64')).digest('hex') };
}

/**
 * The typed request must say what its signed body says (./bindings.ts).
 * @throws DomainError INVALID_SIGNATURE (field `sign`)
 */
function bindToSignedBody(request: { $typeName: string }, body: SignedBody): void {
  if (unboundFields(request, body.parameters).length > 0) throw invalidSign();
}

/** The body's `request_id` as text: "" when absent, null when it is no text (neither string nor number). */
function requestIdOf(parameters: Record<string, unknown>): string | null {
  const value = parameters.request_id;
  if (value === undefined || value === null || value === '') return '';
  return isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : null;
}

/**
 * The idempotency keys of one money-moving request (docs/idempotency.md): the request's own key first (the signed
 * `request_id`, else the signed body itself, else a trusted caller's `idempotencyKey`), then the other keys that
 * name the same request: the signed body when a `request_id` leads, and the client's `Idempotency-Key` header, which
 * may only narrow. Empty `key` when the request has none (a trusted caller without a key).
 */
export function movementKeys(act: MerchantAct, idempotencyKey: string): { key: string; keyField: string; aliases: Array<{ key: string; field: string }> } {
  if (idempotencyKey) checkIdempotencyKey(idempotencyKey);
  const header = idempotencyKey ? [{ key: idempotencyKey, field: 'Idempotency-Key' }] : [];
  if (!act.signed) return { key: idempotencyKey, keyField: 'Idempotency-Key', aliases: [] };
  const body = `signed-body:${act.signed.id}`;
  const { requestId } = act.signed;
  if (requestId === '') return { key: body, keyField: 'sign', aliases: header };
  checkIdempotencyKey(requestId ?? '', 'request_id');
  return { key: requestId!, keyField: 'request_id', aliases: [{ key: body, field: 'sign' }, ...header] };
}

/**
 * The idempotent request of one money-moving call of the merchant `act` (src/idempotency): scoped to the merchant,
 * keyed by `movementKeys`, bound to `operation` and its `parameters` (in a stable order).
 */
export function movementRequest(act: MerchantAct, idempotencyKey: string, operation: string, parameters: unknown[]) {
  return { scope: `merchant:${act.merchantId}`, ...movementKeys(act, idempotencyKey), operation, parameters };
}

interface SessionRow {
  merchant_id: string;
  expires_at: Date;
}

/** Opens a session for the merchant; returns the opaque token (only its hash is stored). */
export async function openSession(database: Knex, merchantId: string, ttlSeconds: number): Promise<string> {
  const token = randomToken(32);
  // Housekeeping: the merchant's expired sessions are useless; drop them when it logs in again.
  await database('merchant_sessions').where({ merchant_id: merchantId }).andWhere('expires_at', '<', new Date()).delete();
  await database('merchant_sessions').insert({
    token_hash: sha256Hex(token),
    merchant_id: merchantId,
    expires_at: new Date(Date.now() + ttlSeconds * 1000),
  });
  return token;
}

/**
 * The session must exist, belong to `merchantId` and not be expired. @returns its expiry.
 * @throws DomainError unauthenticated SESSION_MISSING | SESSION_INVALID | SESSION_EXPIRED (field `token`)
 */
async function checkSession(database: Knex, merchantId: string, token: string, sessions: ChangeAwareCache<SessionRow>): Promise<Date> {
  if (!token) throw reasonError(MERCHANT_AUTH_REASONS, 'SESSION_MISSING', 'token missing', { token: [AUTH_PROBLEMS.tokenMissing] });
  const token_hash = sha256Hex(token);
  const row = await sessions.get(
    token_hash,
    async () => (await database('merchant_sessions').where({ token_hash }).first('merchant_id', 'expires_at')) as SessionRow | undefined,
  );
  if (!row || row.merchant_id !== merchantId) {
    throw reasonError(MERCHANT_AUTH_REASONS, 'SESSION_INVALID', 'token invalid', { token: [AUTH_PROBLEMS.tokenInvalid] });
  }
  if (row.expires_at.getTime() <= Date.now()) {
    throw reasonError(MERCHANT_AUTH_REASONS, 'SESSION_EXPIRED', 'token expired', { token: [AUTH_PROBLEMS.tokenExpired] });
  }
  return row.expires_at;
}

/**
 * The signed login's `timestamp`: Unix seconds (a JSON integer or a string of digits) within `windowSeconds` of now.
 * @throws DomainError LOGIN_TIMESTAMP_INVALID (field `timestamp`)
 */
export function checkLoginTimestamp(parameters: Record<string, unknown>, windowSeconds: number, nowMs = Date.now()): number {
  const value = parameters.timestamp;
  const fail = (code: string) => reasonError(MERCHANT_AUTH_REASONS, 'LOGIN_TIMESTAMP_INVALID', 'login timestamp invalid', { timestamp: [code] });
  if (value === undefined || value === null || value === '') throw fail(problem('required'));
  const text = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : '';
  if (!/^\d{1,15}$/.test(text)) throw fail(problem('integer'));
  const seconds = Number(text);
  if (Math.abs(nowMs / 1000 - seconds) > windowSeconds) throw fail(problem('timestamp_window', windowSeconds));
  return seconds;
}

/**
 * Builds the process's merchant authentication (at the composition root). Successful lookups are reused for
 * AUTH_CACHE_SECONDS: merchants by (merchant id, SHA-256 of the secret key presented), active ones only, and sessions
 * by token hash; the signature is verified and the session expiry compared on every call. A suspension or any other
 * credential change announced through `authChanges` drops both caches at once in every process. Each cache holds at
 * most 10,000 entries.
 */
export function createMerchantAuth(deps: {
  database: Knex;
  config: { AUTH_CACHE_SECONDS: number; MERCHANT_LOGIN_WINDOW_SECONDS: number };
  authChanges: AuthChanges;
  /** Counts each verified request against the merchant's request rate (src/abuse). */
  abuse: Pick<AbuseLimits, 'consumeRequest'>;
}): MerchantAuth {
  // A suspension (or any credential change) drops the cached lookups at once, in every process.
  const cacheOptions = { ttlSeconds: deps.config.AUTH_CACHE_SECONDS, max: AUTH_CACHE_MAX };
  const merchants = changeAwareCache<Merchant>(deps.authChanges, cacheOptions);
  const sessions = changeAwareCache<SessionRow>(deps.authChanges, cacheOptions);
  const merchantsById = changeAwareCache<Merchant>(deps.authChanges, cacheOptions);
  /** The merchant a bound credential names, when it exists and is active (cached like the other lookups). */
  const activeMerchant = async (merchantId: string): Promise<Merchant | undefined> => {
    const merchant = await merchantsById.get(merchantId, () => getMerchant(deps.database, merchantId), (found) => found.status === 'active');
    return merchant?.status === 'active' ? merchant : undefined;
  };
  const publicKeyOf = publicKeyCache();

  /** A failed check throws inside the lookup, so only verified merchant headers are kept. */
  async function merchantOf(envelope: Envelope | undefined): Promise<Merchant> {
    if (!envelope?.merchantId) return authenticateEnvelope(deps.database, envelope);
    const key = `${envelope.merchantId}\u0000${sha256Hex(String(envelope.merchantSecretKey ?? ''))}`;
    return (await merchants.get(key, () => authenticateEnvelope(deps.database, envelope)))!;
  }

  async function authenticateAction(envelope: Envelope | undefined, sessionToken: string): Promise<{ merchantId: string; signed: SignedBody }> {
    const [merchant, session] = await Promise.all([
      merchantOf(envelope).then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      (envelope?.merchantId
        ? checkSession(deps.database, envelope.merchantId, sessionToken, sessions)
        : Promise.resolve(undefined)
      ).then(
        (expiresAt) => (expiresAt === undefined ? {} : { expiresAt: expiresAt.getTime() }),
        (error: unknown) => ({ error }),
      ),
    ]);
    if ('error' in merchant) throw merchant.error;
    if ('error' in session) throw session.error;
    return { merchantId: merchant.value.id, signed: verifySignature(publicKeyOf, merchant.value, envelope!) };
  }

  /**
   * Records a signed login body; false when it was recorded before and its record still runs. The record lives
   * twice the window past the body's timestamp, so a process whose clock is up to one window ahead still finds it.
   * The merchant's records past their end are deleted in the same statement.
   */
  async function acceptOnce(merchantId: string, signed: SignedBody, timestampSeconds: number): Promise<boolean> {
    const now = new Date();
    const expiresAt = new Date((timestampSeconds + 2 * deps.config.MERCHANT_LOGIN_WINDOW_SECONDS) * 1000);
    const result = await deps.database.raw(
      `WITH purged AS (
         DELETE FROM merchant_login_requests WHERE merchant_id = ? AND expires_at <= ? AND signature_sha256 <> ?
       )
       INSERT INTO merchant_login_requests (merchant_id, signature_sha256, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (merchant_id, signature_sha256) DO UPDATE SET expires_at = EXCLUDED.expires_at
         WHERE merchant_login_requests.expires_at <= ?
       RETURNING signature_sha256`,
      [merchantId, now, signed.id, merchantId, signed.id, expiresAt, now],
    );
    return result.rows.length === 1;
  }

  return {
    authenticateAction,

    async requireMerchant(request, context) {
      if (!request.auth) {
        // A bound credential acts for its merchant only while that merchant may act itself (not suspended).
        if (!mayActFor(callerOf(context), { kind: 'merchant', id: request.merchantId }) || !(await activeMerchant(request.merchantId))) {
          throw reasonError(MERCHANT_AUTH_REASONS, 'MERCHANT_UNAUTHENTICATED', 'no merchant credential', { merchant: [AUTH_PROBLEMS.merchant] });
        }
        await deps.abuse.consumeRequest(`merchant:${request.merchantId}`);
        return { merchantId: request.merchantId };
      }
      const { merchantId, signed } = await authenticateAction(request.auth.envelope, request.auth.sessionToken);
      bindToSignedBody(request, signed);
      const requestId = requestIdOf(signed.parameters);
      await deps.abuse.consumeRequest(`merchant:${merchantId}`);
      return { merchantId, signed: { id: signed.id, requestId } };
    },

    async authenticateLogin(request) {
      const merchant = await authenticateEnvelope(deps.database, request.envelope);
      const signed = verifySignature(publicKeyOf, merchant, request.envelope!);
      bindToSignedBody(request, signed);
      const timestamp = checkLoginTimestamp(signed.parameters, deps.config.MERCHANT_LOGIN_WINDOW_SECONDS);
      if (!(await acceptOnce(merchant.id, signed, timestamp))) {
        throw reasonError(MERCHANT_AUTH_REASONS, 'LOGIN_REPLAYED', 'signed login replayed', { timestamp: [AUTH_PROBLEMS.loginReplayed] });
      }
      return merchant;
    },
  };
}
