/**
 * Area A access tokens (payment-services-interface.md "Access token response", platform decisions §6): HS256 JWTs
 * naming the partner, issued by A1 and presented as `Authorization: Bearer` on the gateway.
 */
import { hkdfSync, randomBytes } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';

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
