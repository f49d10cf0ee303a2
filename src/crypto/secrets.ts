/**
 * Secrets at rest: scrypt password hashing, SHA-256 hashing of high-entropy keys,
 * constant-time comparison, random credential generation, and AES-256-GCM encryption of short secrets under the
 * platform data key (`PlatformKeys.dataKey`). Pure functions over bytes; nothing here logs.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';

/** scrypt cost parameters (N = 2^14, r 8, p 1: ~16 MiB, tens of milliseconds). Stored with each hash. */
export const SCRYPT_PARAMS = { N: 16384, r: 8, p: 1, keyLength: 32, saltBytes: 16 } as const;

function scrypt(password: string, salt: Buffer, keyLength: number, options: { N: number; r: number; p: number }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCallback(password, salt, keyLength, { ...options, maxmem: 128 * options.N * options.r * 2 }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

/**
 * Hashes a password with a fresh random salt.
 * @returns `scrypt$N$r$p$<salt base64url>$<hash base64url>`
 */
export async function hashPassword(password: string): Promise<string> {
  const { N, r, p, keyLength, saltBytes } = SCRYPT_PARAMS;
  const salt = randomBytes(saltBytes);
  const key = await scrypt(password, salt, keyLength, { N, r, p });
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** A hash of a random password, to spend the same time when the account is unknown. */
let dummyHash: Promise<string> | undefined;

/**
 * Verifies `password` against a `hashPassword` string in constant time. A missing or malformed hash verifies
 * against a dummy hash (same cost) and returns false, so unknown accounts take as long as known ones.
 */
export async function verifyPassword(password: string, stored: string | undefined | null): Promise<boolean> {
  const parts = (stored ?? '').split('$');
  let valid = parts.length === 6 && parts[0] === 'scrypt';
  if (!valid) {
    dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
    const dummy = (await dummyHash).split('$');
    parts.splice(0, parts.length, ...dummy);
  }
  const [, nText, rText, pText, saltText, keyText] = parts as [string, string, string, string, string, string];
  const N = Number(nText);
  const r = Number(rText);
  const p = Number(pText);
  if (![N, r, p].every((value) => Number.isSafeInteger(value) && value > 0) || N > 1 << 20) return false;
  const expected = Buffer.from(keyText, 'base64url');
  if (expected.length === 0) return false;
  const actual = await scrypt(password, Buffer.from(saltText, 'base64url'), expected.length, { N, r, p });
  valid = timingSafeEqual(actual, expected) && valid;
  return valid;
}

/** SHA-256 of a high-entropy key (API key, secret key) as lowercase hex: the stored, indexed form. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/**
 * Constant-time equality of two strings (compared as SHA-256 digests, so different lengths leak nothing).
 */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a, 'utf8').digest(), createHash('sha256').update(b, 'utf8').digest());
}

/** Constant-time equality of a presented key with a stored `sha256Hex`. */
export function matchesSha256(presented: string, storedHex: string): boolean {
  const expected = Buffer.from(storedHex, 'hex');
  const actual = createHash('sha256').update(presented, 'utf8').digest();
  return expected.length === actual.length && timingSafeEqual(actual, expected);
}

/** `bytes` random bytes as base64url (43 characters for 32 bytes). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** `bytes` random bytes as lowercase hex. */
export function randomHex(bytes = 16): string {
  return randomBytes(bytes).toString('hex');
}

/** Bytes drawn from the CSPRNG at a time for `randomAlphanumeric` (one call per 4 KiB, as `randomUUID` pools). */
const RANDOM_POOL_BYTES = 4096;
let randomPool = Buffer.alloc(0);
let randomPoolOffset = 0;

/** The next unused byte of the pool; each byte is handed out once. */
function nextRandomByte(): number {
  if (randomPoolOffset >= randomPool.length) {
    randomPool = randomBytes(RANDOM_POOL_BYTES);
    randomPoolOffset = 0;
  }
  return randomPool[randomPoolOffset++]!;
}

/**
 * `length` random characters from A–Z and 0–9 (unbiased: bytes past the last whole multiple of the alphabet's size
 * are drawn again). Bytes come from a pool of CSPRNG output: a reference is made on every money movement, and a
 * CSPRNG call per reference cost about 1 % of a façade process's CPU.
 */
export function randomAlphanumeric(length: number, alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'): string {
  const unbiasedBelow = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    const byte = nextRandomByte();
    if (byte < unbiasedBelow) out += alphabet[byte % alphabet.length];
  }
  return out;
}

const SECRET_FORMAT_VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Encrypts a short secret with AES-256-GCM under `dataKey` (32 bytes).
 * @param associatedData optional context bound to the ciphertext (e.g. "merchant:M1:hmac_secret"); decrypt needs the same.
 * @returns `v1.<iv base64url>.<ciphertext base64url>.<tag base64url>`
 */
export function encryptSecret(dataKey: Buffer, plaintext: string, associatedData?: string): string {
  if (dataKey.length !== 32) throw new Error('the data key must be 32 bytes');
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', dataKey, iv, { authTagLength: TAG_BYTES });
  if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [SECRET_FORMAT_VERSION, iv, ciphertext, cipher.getAuthTag()]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

/**
 * Decrypts an `encryptSecret` string.
 * @throws Error "cannot decrypt secret" when the format, version, key, associated data or tag is wrong.
 */
export function decryptSecret(dataKey: Buffer, encrypted: string, associatedData?: string): string {
  const parts = encrypted.split('.');
  if (parts.length !== 4 || parts[0] !== SECRET_FORMAT_VERSION) throw new Error('cannot decrypt secret: unknown format');
  const [iv, ciphertext, tag] = parts.slice(1).map((part) => Buffer.from(part, 'base64url')) as [Buffer, Buffer, Buffer];
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new Error('cannot decrypt secret: malformed');
  try {
    const decipher = createDecipheriv('aes-256-gcm', dataKey, iv, { authTagLength: TAG_BYTES });
    if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch {
    throw new Error('cannot decrypt secret: authentication failed');
  }
}
