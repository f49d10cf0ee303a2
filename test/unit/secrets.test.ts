/** src/crypto/secrets.ts: password hashing, key hashing, constant-time comparison, AES-256-GCM secrets. */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import {
  constantTimeEqual,
  decryptSecret,
  encryptSecret,
  hashPassword,
  matchesSha256,
  randomAlphanumeric,
  randomHex,
  randomToken,
  sha256Hex,
  verifyPassword,
} from '../../src/crypto/secrets';

describe('passwords (scrypt)', () => {
  it('verifies the right password and refuses a wrong one', async () => {
    const stored = await hashPassword('correct horse');
    expect(stored).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(stored).not.toContain('correct horse');
    await expect(verifyPassword('correct horse', stored)).resolves.toBe(true);
    await expect(verifyPassword('correct horsE', stored)).resolves.toBe(false);
    await expect(verifyPassword('', stored)).resolves.toBe(false);
  });

  it('salts: the same password hashes differently each time', async () => {
    const [a, b] = await Promise.all([hashPassword('same'), hashPassword('same')]);
    expect(a).not.toBe(b);
    await expect(verifyPassword('same', b)).resolves.toBe(true);
  });

  it('returns false for a missing or malformed stored hash', async () => {
    await expect(verifyPassword('x', undefined)).resolves.toBe(false);
    await expect(verifyPassword('x', null)).resolves.toBe(false);
    await expect(verifyPassword('x', 'plain-text')).resolves.toBe(false);
    await expect(verifyPassword('x', 'scrypt$abc$8$1$AAAA$AAAA')).resolves.toBe(false);
  });
});

describe('key hashing and comparison', () => {
  it('sha256Hex is the standard digest', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('matchesSha256 accepts only the original key', () => {
    const key = randomToken();
    const stored = sha256Hex(key);
    expect(matchesSha256(key, stored)).toBe(true);
    expect(matchesSha256(`${key}x`, stored)).toBe(false);
    expect(matchesSha256(key, 'not-hex')).toBe(false);
  });

  it('constantTimeEqual is string equality for any inputs', () => {
    fc.assert(fc.property(fc.string(), fc.string(), (a, b) => constantTimeEqual(a, b) === (a === b)));
    expect(constantTimeEqual('same', 'same')).toBe(true);
  });
});

describe('random credentials', () => {
  it('have the documented alphabets and lengths and do not repeat', () => {
    expect(randomToken()).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(randomHex(16)).toMatch(/^[0-9a-f]{32}$/);
    expect(randomAlphanumeric(20)).toMatch(/^[A-Z0-9]{20}$/);
    const seen = new Set(Array.from({ length: 200 }, () => randomToken(16)));
    expect(seen.size).toBe(200);
  });

  it('draw alphanumeric characters from a pool without repeating its bytes, across refills, uniformly', () => {
    // 2,000 × 18 characters take about 37,000 pool bytes: nine refills of the 4 KiB pool.
    const references = Array.from({ length: 2000 }, () => randomAlphanumeric(18));
    expect(new Set(references).size).toBe(references.length);
    for (const reference of references) expect(reference).toMatch(/^[A-Z0-9]{18}$/);
    const counts = new Map<string, number>();
    for (const character of references.join('')) counts.set(character, (counts.get(character) ?? 0) + 1);
    // 36,000 draws over 36 characters: 1,000 each expected; a byte reused or a bias would show far outside ±20 %.
    expect(counts.size).toBe(36);
    for (const count of counts.values()) expect(Math.abs(count - 1000)).toBeLessThan(200);
    // A custom alphabet keeps to its characters.
    expect(randomAlphanumeric(64, 'AB')).toMatch(/^[AB]{64}$/);
  });
});

describe('AES-256-GCM secrets', () => {
  const key = randomBytes(32);

  it('round-trips any text, with a fresh IV each time', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const encrypted = encryptSecret(key, text, 'ctx');
        expect(encrypted.startsWith('v1.')).toBe(true);
        expect(decryptSecret(key, encrypted, 'ctx')).toBe(text);
      }),
    );
    expect(encryptSecret(key, 'same')).not.toBe(encryptSecret(key, 'same'));
  });

  it('never contains the plaintext', () => {
    const secret = 'a'.repeat(64);
    expect(encryptSecret(key, secret)).not.toContain(secret);
  });

  it('refuses another key, other associated data, tampering and unknown versions', () => {
    const encrypted = encryptSecret(key, 'hmac-secret', 'merchant:M1');
    expect(() => decryptSecret(randomBytes(32), encrypted, 'merchant:M1')).toThrow('cannot decrypt secret');
    expect(() => decryptSecret(key, encrypted, 'merchant:M2')).toThrow('cannot decrypt secret');
    expect(() => decryptSecret(key, encrypted)).toThrow('cannot decrypt secret');
    const parts = encrypted.split('.');
    const body = Buffer.from(parts[2]!, 'base64url');
    body[0] ^= 1;
    expect(() => decryptSecret(key, [parts[0], parts[1], body.toString('base64url'), parts[3]].join('.'), 'merchant:M1')).toThrow(
      'cannot decrypt secret',
    );
    expect(() => decryptSecret(key, encrypted.replace(/^v1/, 'v9'), 'merchant:M1')).toThrow('unknown format');
    expect(() => decryptSecret(key, 'garbage', 'merchant:M1')).toThrow('unknown format');
  });

  it('requires a 32-byte key', () => {
    expect(() => encryptSecret(randomBytes(16), 'x')).toThrow('32 bytes');
  });
});
