/**
 * RSAES-PKCS1-v1_5 decryption with implicit rejection (IETF draft-irtf-cfrg-rsa-guidance, "Implicit rejection"; the
 * Marvin attack guidance): a ciphertext whose padding is not conformant does not fail, it decrypts to a synthetic
 * message derived from the private key and the ciphertext. Whoever sees only the message (or what is done with it)
 * cannot tell a conformant padding from a non-conformant one, so no caller can become a Bleichenbacher oracle.
 *
 * Node's own `privateDecrypt` with RSA_PKCS1_PADDING does exactly this where its OpenSSL implements implicit
 * rejection (3.2 and later); Node 20 with OpenSSL 3.0 refuses that padding for decryption (CVE-2023-46809) and no
 * maintained JavaScript library implements the algorithm, so it is written here, step for step as the draft (and
 * OpenSSL's rsa_pk1.c) give it, over Node's raw RSA (`RSA_NO_PADDING`: OpenSSL's blinded, constant-time private-key
 * operation):
 *
 *   KDK       = HMAC-SHA256(key = SHA-256(I2OSP(d, k)), message = the ciphertext, k bytes)
 *   IRPRF(label, n bits) = HMAC-SHA256(KDK, I2OSP(i, 2) ‖ label ‖ I2OSP(n, 2)) for i = 0, 1, …, truncated to n bits
 *   synthetic = IRPRF("message", 8k); lengths = IRPRF("length", 2048): 128 big-endian 16-bit candidates, each masked
 *             to the bits of k − 10; the synthetic length is the last candidate below k − 10 (0 if none)
 *   message   = EM's M when EM = 00 02 PS 00 M with PS of 8 or more nonzero bytes, else the last `synthetic length`
 *               bytes of `synthetic`
 *
 * The padding check and the choice between the two messages are computed with masks over every byte, not branches
 * (as OpenSSL's constant-time code does); JavaScript gives no constant-time guarantee, but nothing here branches on
 * the padding's validity, and the answer no longer depends on it. Checked against the test vectors OpenSSL's
 * implementation is tested with (test/fixtures/pkcs1-implicit-rejection.json).
 */
import { constants, createHash, createHmac, privateDecrypt, type KeyObject } from 'node:crypto';

/** The candidates drawn for the synthetic length: 128, so that none fitting (the length falling back to 0) has a probability of at most 2^-128. */
const LENGTH_CANDIDATES = 128;
/** The shortest padding string PKCS#1 v1.5 allows, and the two leading bytes (00 02) before it. */
const MIN_PADDING_BYTES = 8;
const HEADER_BYTES = 2;

/** What implicit rejection needs of one private key, derived once per key. */
interface RejectionKey {
  /** k: the modulus length in bytes. */
  modulusBytes: number;
  /** The modulus, big-endian, k bytes (a ciphertext must be below it). */
  modulus: Buffer;
  /** SHA-256(I2OSP(d, k)): the key of every KDK. Never logged. */
  exponentDigest: Buffer;
}

const rejectionKeys = new WeakMap<KeyObject, RejectionKey>();

function rejectionKey(privateKey: KeyObject): RejectionKey {
  let key = rejectionKeys.get(privateKey);
  if (!key) {
    const jwk = privateKey.export({ format: 'jwk' });
    const bits = privateKey.asymmetricKeyDetails?.modulusLength;
    if (privateKey.asymmetricKeyType !== 'rsa' || !jwk.d || !jwk.n || !bits) throw new Error('assertion failed: an RSA private key');
    const modulusBytes = Math.ceil(bits / 8);
    const exponent = leftPad(Buffer.from(jwk.d, 'base64url'), modulusBytes);
    key = { modulusBytes, modulus: leftPad(Buffer.from(jwk.n, 'base64url'), modulusBytes), exponentDigest: createHash('sha256').update(exponent).digest() };
    exponent.fill(0);
    rejectionKeys.set(privateKey, key);
  }
  return key;
}

function leftPad(bytes: Buffer, length: number): Buffer {
  if (bytes.length > length) throw new Error('assertion failed: a key component longer than the modulus');
  return Buffer.concat([Buffer.alloc(length - bytes.length), bytes]);
}

/** The modulus length in bytes (k) of an RSA private key. */
export function modulusBytesOf(privateKey: KeyObject): number {
  return rejectionKey(privateKey).modulusBytes;
}

/** True when `ciphertext` (k bytes) is below the modulus: the public precondition of every RSA decryption. */
export function belowModulus(privateKey: KeyObject, ciphertext: Buffer): boolean {
  const { modulus } = rejectionKey(privateKey);
  return ciphertext.length === modulus.length && Buffer.compare(ciphertext, modulus) < 0;
}

/** IRPRF of the draft: `bytes` bytes of HMAC-SHA256(KDK, I2OSP(i, 2) ‖ label ‖ I2OSP(8·bytes, 2)), i = 0, 1, … */
function implicitRejectionPrf(kdk: Buffer, label: string, bytes: number): Buffer {
  const bits = bytes * 8;
  if (bits > 0xffff) throw new Error('assertion failed: IRPRF output under 2^16 bits');
  const suffix = Buffer.concat([Buffer.from(label, 'latin1'), u16(bits)]);
  const blocks: Buffer[] = [];
  for (let index = 0; index * 32 < bytes; index += 1) blocks.push(createHmac('sha256', kdk).update(u16(index)).update(suffix).digest());
  return Buffer.concat(blocks).subarray(0, bytes);
}

function u16(value: number): Buffer {
  const bytes = Buffer.alloc(2);
  bytes.writeUInt16BE(value);
  return bytes;
}

// Masks: all ones (-1) or 0, computed without branches on their inputs (small non-negative integers).
const isZero = (value: number): number => (value - 1) >> 31;
const lessThan = (a: number, b: number): number => (a - b) >> 31;
const select = (mask: number, whenSet: number, otherwise: number): number => (mask & whenSet) | (~mask & otherwise);

/** The synthetic message's length: the last of the 128 masked candidates below k − 10, else 0. */
function syntheticLength(kdk: Buffer, modulusBytes: number): number {
  const candidates = implicitRejectionPrf(kdk, 'length', LENGTH_CANDIDATES * 2);
  const maxLength = modulusBytes - HEADER_BYTES - MIN_PADDING_BYTES;
  let mask = maxLength;
  for (const shift of [1, 2, 4, 8]) mask |= mask >> shift;
  let length = 0;
  for (let index = 0; index < candidates.length; index += 2) {
    const candidate = candidates.readUInt16BE(index) & mask;
    length = select(lessThan(candidate, maxLength), candidate, length);
  }
  return length;
}

/**
 * The message of the encoded block `encoded` (k bytes, the raw RSA decryption of `ciphertext`): its M when its
 * PKCS#1 v1.5 padding is conformant, else the synthetic message of (key, ciphertext). Never throws on padding.
 */
export function decodeWithImplicitRejection(privateKey: KeyObject, ciphertext: Buffer, encoded: Buffer): Buffer {
  const { modulusBytes, exponentDigest } = rejectionKey(privateKey);
  if (ciphertext.length !== modulusBytes || encoded.length !== modulusBytes) throw new Error('assertion failed: k-byte ciphertext and block');
  const kdk = createHmac('sha256', exponentDigest).update(ciphertext).digest();
  const synthetic = implicitRejectionPrf(kdk, 'message', modulusBytes);
  const syntheticIndex = modulusBytes - syntheticLength(kdk, modulusBytes);

  let good = isZero(encoded[0]!) & isZero(encoded[1]! ^ 2);
  let found = 0;
  let separator = 0;
  for (let index = HEADER_BYTES; index < modulusBytes; index += 1) {
    const zero = isZero(encoded[index]!);
    separator = select(~found & zero, index, separator);
    found |= zero;
  }
  // PS runs from byte 2 to the separator: at least 8 bytes; no separator leaves 0, which fails too.
  good &= ~lessThan(separator, HEADER_BYTES + MIN_PADDING_BYTES);
  const messageIndex = select(good, separator + 1, syntheticIndex);
  const message = Buffer.alloc(modulusBytes - messageIndex);
  for (let index = messageIndex; index < modulusBytes; index += 1) message[index - messageIndex] = select(good, encoded[index]!, synthetic[index]!);
  return message;
}

/**
 * RSAES-PKCS1-v1_5 decryption of `ciphertext` (exactly k bytes, below the modulus) with implicit rejection: the
 * message, or the synthetic message when the padding is not conformant.
 * @throws Error when the ciphertext is not k bytes or not below the modulus (public properties, checked first).
 */
export function decryptPkcs1WithImplicitRejection(privateKey: KeyObject, ciphertext: Buffer): Buffer {
  if (!belowModulus(privateKey, ciphertext)) throw new Error('ciphertext is not k bytes below the modulus');
  const encoded = privateDecrypt({ key: privateKey, padding: constants.RSA_NO_PADDING }, ciphertext);
  try {
    return decodeWithImplicitRejection(privateKey, ciphertext, encoded);
  } finally {
    encoded.fill(0);
  }
}
