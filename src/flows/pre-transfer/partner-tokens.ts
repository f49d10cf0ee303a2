/**
 * Area A access tokens (payment-services-interface.md "Access token response", platform decisions §6): HS256 JWTs
 * naming the partner, issued by A1 and presented as `Authorization: Bearer` on the gateway.
 */
import { hkdfSync, randomBytes } from 'node:crypto';
import { decodeJwt, jwtVerify, SignJWT } from 'jose';
import { LRUCache } from 'lru-cache';

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
