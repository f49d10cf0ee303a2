/**
 * Merchant authentication, shared by every Area C service (interface "Authentication / Area C", platform decisions
 * §7): merchant headers, the RSA2 request signature verified with the merchant's stored public key, the API login,
 * opaque session tokens (stored as SHA-256 hex, lifetime MERCHANT_SESSION_TTL_SECONDS), and the one
 * `requireMerchant` every service calls. No service acts for a merchant id the caller merely asserts: the merchant
 * is the one whose headers, session and signature verify.
 *
 * Order of checks on every call: merchant headers (401) → session token (401, /do-action only) → signature (400 on
 * `sign` / `sign_type`) → the service's own fields.
 */
import { LRUCache } from 'lru-cache';
import type { Knex } from 'knex';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { randomAlphanumeric, randomToken, sha256Hex } from '../crypto/secrets';
import { SIGN_TYPE_RSA2, verifyRsa2 } from '../crypto/rsa2';
import { problem } from '../field-problems';
import { DomainError } from '../errors';
import type { AbuseLimits } from '../abuse';
import { changeAwareCache, type AuthChanges, type ChangeAwareCache } from '../auth-changes';
import type { ActionAuth } from '../gen/payments/wallet/v1/wallet_pb';
import { authenticateMerchant, type Merchant } from '../onboarding';

export * from './reasons';

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
} as const;

export interface Envelope {
  merchantId: string;
  merchantSecretKey: string;
  canonicalString: string;
  sign: string;
  signType: string;
}

/**
 * Checks the merchant headers and the request signature.
 * @throws DomainError unauthenticated MERCHANT_UNAUTHENTICATED (field `merchant`);
 *         invalid_argument INVALID_SIGNATURE (field `sign` or `sign_type`).
 */
export async function authenticateEnvelope(database: Knex, envelope: Envelope | undefined): Promise<Merchant> {
  const merchant = envelope?.merchantId
    ? await authenticateMerchant(database, { merchant_id: envelope.merchantId, merchant_secret_key: envelope.merchantSecretKey })
    : undefined;
  if (!merchant || !envelope) {
    throw new DomainError('unauthenticated', 'MERCHANT_UNAUTHENTICATED', 'merchant unauthenticated', { merchant: [AUTH_PROBLEMS.merchant] });
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

/** Verifies sign_type and sign over the canonical string with the merchant's public key. */
function verifySignature(publicKeyOf: (pem: string) => KeyObject | string, merchant: Merchant, envelope: Envelope): void {
  if (envelope.signType !== SIGN_TYPE_RSA2) {
    throw new DomainError('invalid_argument', 'INVALID_SIGNATURE', 'invalid sign_type', {
      sign_type: [AUTH_PROBLEMS.signType],
      ...(envelope.sign ? {} : { sign: [AUTH_PROBLEMS.sign] }),
    });
  }
  if (!envelope.sign || !verifyRsa2(envelope.canonicalString, envelope.sign, publicKeyOf(merchant.public_key_pem))) {
    throw new DomainError('invalid_argument', 'INVALID_SIGNATURE', 'invalid sign', { sign: [AUTH_PROBLEMS.sign] });
  }
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
  if (!token) throw new DomainError('unauthenticated', 'SESSION_MISSING', 'token missing', { token: [AUTH_PROBLEMS.tokenMissing] });
  const token_hash = sha256Hex(token);
  const row = await sessions.get(
    token_hash,
    async () => (await database('merchant_sessions').where({ token_hash }).first('merchant_id', 'expires_at')) as SessionRow | undefined,
  );
  if (!row || row.merchant_id !== merchantId) {
    throw new DomainError('unauthenticated', 'SESSION_INVALID', 'token invalid', { token: [AUTH_PROBLEMS.tokenInvalid] });
  }
  if (row.expires_at.getTime() <= Date.now()) {
    throw new DomainError('unauthenticated', 'SESSION_EXPIRED', 'token expired', { token: [AUTH_PROBLEMS.tokenExpired] });
  }
  return row.expires_at;
}

export interface MerchantApiUser {
  id: bigint;
  merchant_id: string;
  fk_soc: bigint;
  wallet_id: bigint;
  wallet_ref: string;
  avatar: string;
  time_zone: string | null;
}

/** Default time zone of a merchant API user (Cambodia). */
export const DEFAULT_TIME_ZONE = 'Asia/Phnom_Penh';

/** The merchant's API user profile shown by /login, created on first login. */
export async function merchantApiUser(database: Knex, merchantId: string): Promise<MerchantApiUser> {
  const existing = (await database('merchant_api_users').where({ merchant_id: merchantId }).first()) as MerchantApiUser | undefined;
  if (existing) return existing;
  await database('merchant_api_users')
    .insert({ merchant_id: merchantId, wallet_ref: `M${randomAlphanumeric(15)}`, time_zone: DEFAULT_TIME_ZONE })
    .onConflict('merchant_id')
    .ignore();
  return (await database('merchant_api_users').where({ merchant_id: merchantId }).first()) as MerchantApiUser;
}

export interface MerchantAuth {
  /**
   * The whole check of one /do-action call: merchant headers, session, signature (in that order of precedence; the
   * two lookups run in parallel). @returns the merchant id.
   * @throws DomainError MERCHANT_UNAUTHENTICATED, SESSION_MISSING | SESSION_INVALID | SESSION_EXPIRED,
   *   INVALID_SIGNATURE
   */
  authenticateAction(envelope: Envelope | undefined, sessionToken: string): Promise<string>;
  /**
   * The merchant an Area C service request acts for: the one its ActionAuth proves. A request without one is
   * refused whatever merchant id it names. @throws as `authenticateAction`.
   */
  requireMerchant(request: { auth?: ActionAuth }): Promise<string>;
  /**
   * Verifies sign_type and sign over the canonical string with the merchant's public key.
   * @throws DomainError INVALID_SIGNATURE (field `sign` or `sign_type`)
   */
  verifyEnvelopeSignature(merchant: Merchant, envelope: Envelope): void;
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
  config: { AUTH_CACHE_SECONDS: number };
  authChanges: AuthChanges;
  /** Counts each verified request against the merchant's request rate (src/abuse). */
  abuse: Pick<AbuseLimits, 'consumeRequest'>;
}): MerchantAuth {
  // A suspension (or any credential change) drops the cached lookups at once, in every process.
  const cacheOptions = { ttlSeconds: deps.config.AUTH_CACHE_SECONDS, max: AUTH_CACHE_MAX };
  const merchants = changeAwareCache<Merchant>(deps.authChanges, cacheOptions);
  const sessions = changeAwareCache<SessionRow>(deps.authChanges, cacheOptions);
  const publicKeyOf = publicKeyCache();

  /** A failed check throws inside the lookup, so only verified merchant headers are kept. */
  async function merchantOf(envelope: Envelope | undefined): Promise<Merchant> {
    if (!envelope?.merchantId) return authenticateEnvelope(deps.database, envelope);
    const key = `${envelope.merchantId}\u0000${sha256Hex(String(envelope.merchantSecretKey ?? ''))}`;
    return (await merchants.get(key, () => authenticateEnvelope(deps.database, envelope)))!;
  }

  async function authenticateAction(envelope: Envelope | undefined, sessionToken: string): Promise<string> {
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
    verifySignature(publicKeyOf, merchant.value, envelope!);
    return merchant.value.id;
  }

  return {
    authenticateAction,
    verifyEnvelopeSignature: (merchant, envelope) => verifySignature(publicKeyOf, merchant, envelope),
    async requireMerchant(request) {
      if (!request.auth) {
        throw new DomainError('unauthenticated', 'MERCHANT_UNAUTHENTICATED', 'no merchant credential', { merchant: [AUTH_PROBLEMS.merchant] });
      }
      const merchantId = await authenticateAction(request.auth.envelope, request.auth.sessionToken);
      await deps.abuse.consumeRequest(`merchant:${merchantId}`);
      return merchantId;
    },
  };
}
