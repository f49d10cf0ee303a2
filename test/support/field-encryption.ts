/**
 * What a merchant does to an Area C encrypted field (platform decisions §7): RSA-encrypt the UTF-8 plaintext under
 * the platform public key and base64 it. OAEP through Node crypto; PKCS#1 v1.5 through node-forge (the same
 * library the platform decrypts it with), since Node 20 refuses that padding only for decryption but the forge path
 * keeps the test independent of Node's choice.
 */
import { constants, createHmac, createPublicKey, publicEncrypt, randomBytes, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import type { FieldPadding } from '../../src/crypto/field-decryption';

export type { FieldPadding };

/** base64 of the RSA ciphertext of `plaintext` (UTF-8) under `publicKeyPem` (SPKI PEM). Default OAEP SHA-256. */
export function encryptField(publicKeyPem: string, plaintext: string, padding: FieldPadding = 'oaep-sha256'): string {
  if (padding === 'pkcs1') {
    const key = forge.pki.publicKeyFromPem(publicKeyPem);
    const ciphertext = key.encrypt(forge.util.encodeUtf8(plaintext), 'RSAES-PKCS1-V1_5');
    return forge.util.encode64(ciphertext);
  }
  return publicEncrypt(
    { key: publicKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: padding === 'oaep-sha256' ? 'sha256' : 'sha1' },
    Buffer.from(plaintext, 'utf8'),
  ).toString('base64');
}

/** The JSON plaintext of `sourceOfFunds` for a card (interface "tokenize_visa_master"). */
export function sourceOfFundsJson(card: { number: string; securityCode?: string; month?: string; year?: string }): string {
  return JSON.stringify({
    type: 'CARD',
    provided: {
      card: { number: card.number, securityCode: card.securityCode ?? '123', expiry: { month: card.month ?? '12', year: card.year ?? '39' } },
    },
  });
}

/** Bytes of a random source: `randomBytes`, or `seededBytes(seed)` where a test must see the same blocks every run. */
export type RandomSource = (length: number) => Buffer;

/** A deterministic byte stream (HMAC-SHA256 of `seed` over a counter): the same blocks on every run of a test. */
export function seededBytes(seed: string): RandomSource {
  let counter = 0;
  return (length) => {
    const chunks: Buffer[] = [];
    for (let filled = 0; filled < length; filled += 32) chunks.push(createHmac('sha256', seed).update(String(counter++)).digest());
    return Buffer.concat(chunks).subarray(0, length);
  };
}

/** The modulus length in bytes (k) of the RSA public key `publicKeyPem`. */
export function modulusBytes(publicKeyPem: string): number {
  return Math.ceil(createPublicKey(publicKeyPem).asymmetricKeyDetails!.modulusLength! / 8);
}

/**
 * What a Bleichenbacher probe sends: base64 of the raw RSA encryption (no padding) of the `k`-byte encoded message
 * `block` under `publicKey` (SPKI PEM or KeyObject), which must be below the modulus (a block starting with 00 is).
 */
export function encryptBlock(publicKey: string | KeyObject, block: Buffer): string {
  return publicEncrypt({ key: publicKey, padding: constants.RSA_NO_PADDING }, block).toString('base64');
}

/** True when `block` is PKCS#1 v1.5-conformant (RFC 8017 §7.2.2): 00 02, 8 or more nonzero bytes, then a 00. */
export function isConformant(block: Buffer): boolean {
  const separator = block.indexOf(0, 2);
  return block[0] === 0 && block[1] === 2 && separator >= 10;
}

/**
 * A PKCS#1 v1.5-conformant block of `k` bytes, 00 02 PS 00 M, carrying `message` (default: random bytes of a length
 * drawn uniformly from 0 to k − 11, the garbage a probe's block decrypts to). PS is random nonzero bytes.
 */
export function conformantBlock(k: number, random: RandomSource = randomBytes, message?: Buffer): Buffer {
  const body = message ?? random(uniformBelow(k - 10, random));
  const padding = Buffer.from([...random(k - 3 - body.length)].map((byte) => (byte === 0 ? 1 : byte)));
  return Buffer.concat([Buffer.from([0, 2]), padding, Buffer.from([0]), body]);
}

/** A random block of `k` bytes below any k-byte modulus (leading 00) that is not PKCS#1 v1.5-conformant. */
export function nonConformantBlock(k: number, random: RandomSource = randomBytes): Buffer {
  for (;;) {
    const block = Buffer.concat([Buffer.from([0]), random(k - 1)]);
    if (!isConformant(block)) return block;
  }
}

/** A uniform integer in [0, bound) for bound ≤ 65536 (rejection sampling over two random bytes). */
function uniformBelow(bound: number, random: RandomSource): number {
  const limit = 65536 - (65536 % bound);
  for (;;) {
    const value = random(2).readUInt16BE(0);
    if (value < limit) return value % bound;
  }
}
