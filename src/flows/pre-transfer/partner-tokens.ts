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

/** The partner id of a valid, unexpired token; undefined for anything else (never throws). */
export async function verifyAccessToken(key: Uint8Array, token: string): Promise<string | undefined> {
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
