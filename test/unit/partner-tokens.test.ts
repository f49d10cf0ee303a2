/**
 * Area A access tokens (src/flows/pre-transfer/gateway.ts) across a `jose` major upgrade: a token the previous
 * release issued stays valid until it expires, and a token issued now has the same header and claims, so partners
 * holding a token during a rolling deployment keep working whichever process verifies it.
 */
import { accessTokenKey, issueAccessToken, verifyAccessToken } from '../../src/flows/pre-transfer/gateway';

/** A data key for the test only; the token key is derived from it as in production (HKDF-SHA256). */
const DATA_KEY = Buffer.alloc(32, 0x5a);
const PARTNER_ID = 'PTR00000000000000000000001';

/**
 * Issued by issueAccessToken under jose 5.10.0 with DATA_KEY for PARTNER_ID, expiring 2100-01-01T00:00:00Z
 * (exp 4102444800): {"alg":"HS256","typ":"JWT"} . {sub, iss, aud, iat, exp, jti}.
 */
const ISSUED_BY_JOSE_5 =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJQVFIwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMSIsImlzcyI6InBheW1lbnRzLXBsYXRmb3JtIiwiYXVkIjoicGFydG5lcmFwaSIsImlhdCI6MTc5NTcyNjQ2OCwiZXhwIjo0MTAyNDQ0ODAwLCJqdGkiOiJmMTgyNzlmMWIxNTJhZmVkZTJmM2NjZTgifQ.fPZoCs33pQcIFtF2D29joiFCqqzKYgiBXOy_mtNkzNY';

function decodeSegment(segment: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('partner access tokens', () => {
  const key = accessTokenKey(DATA_KEY);

  it('accepts a token issued before the jose upgrade', async () => {
    await expect(verifyAccessToken(key, ISSUED_BY_JOSE_5)).resolves.toBe(PARTNER_ID);
  });

  it('issues the same header and claims as before the upgrade', async () => {
    const token = await issueAccessToken(key, PARTNER_ID, 300);
    const [header, payload] = token.split('.').map((segment, index) => (index < 2 ? decodeSegment(segment) : {}));
    const [oldHeader, oldPayload] = ISSUED_BY_JOSE_5.split('.').map((segment, index) => (index < 2 ? decodeSegment(segment) : {}));
    expect(header).toEqual(oldHeader);
    expect(Object.keys(payload!)).toEqual(Object.keys(oldPayload!));
    expect(payload).toMatchObject({ sub: PARTNER_ID, iss: oldPayload!.iss, aud: oldPayload!.aud });
    expect(Number(payload!.exp) - Number(payload!.iat)).toBe(300);
    await expect(verifyAccessToken(key, token)).resolves.toBe(PARTNER_ID);
  });

  it('refuses the old token under another key, with another subject, or as HS512', async () => {
    await expect(verifyAccessToken(accessTokenKey(Buffer.alloc(32, 0x5b)), ISSUED_BY_JOSE_5)).resolves.toBeUndefined();
    const [header, payload, signature] = ISSUED_BY_JOSE_5.split('.');
    const otherSubject = Buffer.from(JSON.stringify({ ...decodeSegment(payload!), sub: 'PTR00000000000000000000002' })).toString('base64url');
    await expect(verifyAccessToken(key, `${header}.${otherSubject}.${signature}`)).resolves.toBeUndefined();
    const hs512 = Buffer.from(JSON.stringify({ alg: 'HS512', typ: 'JWT' })).toString('base64url');
    await expect(verifyAccessToken(key, `${hs512}.${payload}.${signature}`)).resolves.toBeUndefined();
  });

  it('refuses an expired token', async () => {
    const token = await issueAccessToken(key, PARTNER_ID, -1);
    await expect(verifyAccessToken(key, token)).resolves.toBeUndefined();
  });
});
