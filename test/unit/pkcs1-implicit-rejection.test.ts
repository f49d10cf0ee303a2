/**
 * src/crypto/pkcs1-implicit-rejection.ts: RSAES-PKCS1-v1_5 decryption with implicit rejection
 * (draft-irtf-cfrg-rsa-guidance): the test vectors OpenSSL's implementation is tested with (2048-, 2049- and 3072-bit
 * keys: conformant ciphertexts, and non-conformant ones with their expected synthetic messages), and the properties
 * the platform relies on (a non-conformant padding never fails; its message depends on the key and the ciphertext).
 */
import { constants, createPrivateKey, generateKeyPairSync, publicEncrypt, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { belowModulus, decryptPkcs1WithImplicitRejection, modulusBytesOf } from '../../src/crypto/pkcs1-implicit-rejection';
import { conformantBlock, encryptBlock, nonConformantBlock, seededBytes } from '../support/field-encryption';

const FIXTURES = path.resolve(__dirname, '../fixtures/pkcs1-implicit-rejection');

interface Vector {
  key: string;
  name: string;
  ciphertext: string;
  /** The expected message as text, or as hex. */
  text?: string;
  hex?: string;
}

const { vectors } = JSON.parse(readFileSync(path.join(FIXTURES, 'vectors.json'), 'utf8')) as { vectors: Vector[] };
const fixtureKeys = new Map<string, KeyObject>();
const fixtureKey = (file: string) => {
  if (!fixtureKeys.has(file)) fixtureKeys.set(file, createPrivateKey(readFileSync(path.join(FIXTURES, file), 'utf8')));
  return fixtureKeys.get(file)!;
};

describe('implicit rejection: the test vectors', () => {
  it('holds vectors of each kind: positive, synthetic empty, synthetic of maximal length, other key sizes', () => {
    expect(vectors.length).toBeGreaterThanOrEqual(25);
    expect(vectors.filter((vector) => vector.text !== undefined).length).toBeGreaterThanOrEqual(8);
    expect(vectors.filter((vector) => vector.hex === '').length).toBe(2);
    expect(vectors.some((vector) => vector.hex?.length === 245 * 2)).toBe(true);
    expect(new Set(vectors.map((vector) => vector.key))).toEqual(new Set(['rsa-2048.pem', 'rsa-2049.pem', 'rsa-3072.pem']));
  });

  it.each(vectors.map((vector) => [vector.name, vector] as const))('%s', (_name, vector) => {
    const expected = vector.text !== undefined ? Buffer.from(vector.text, 'utf8') : Buffer.from(vector.hex!, 'hex');
    const message = decryptPkcs1WithImplicitRejection(fixtureKey(vector.key), Buffer.from(vector.ciphertext, 'hex'));
    expect(message.toString('hex')).toBe(expected.toString('hex'));
  });
});

describe('implicit rejection: properties', () => {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const k = modulusBytesOf(pair.privateKey);
  const random = seededBytes('pkcs1-implicit-rejection properties');

  it('decrypts what Node encrypts with PKCS#1 v1.5, from the empty message to k − 11 bytes', () => {
    for (const length of [0, 1, 3, 100, k - 11]) {
      const message = random(length);
      const ciphertext = publicEncrypt({ key: pair.publicKey, padding: constants.RSA_PKCS1_PADDING }, message);
      expect(decryptPkcs1WithImplicitRejection(pair.privateKey, ciphertext).equals(message)).toBe(true);
    }
  });

  it('a non-conformant block never fails: it opens to a synthetic message of 0 to k − 11 bytes, the same each time', () => {
    const lengths = new Set<number>();
    for (let index = 0; index < 40; index += 1) {
      const ciphertext = Buffer.from(encryptBlock(pair.publicKey, nonConformantBlock(k, random)), 'base64');
      const message = decryptPkcs1WithImplicitRejection(pair.privateKey, ciphertext);
      expect(message.length).toBeLessThanOrEqual(k - 11);
      expect(decryptPkcs1WithImplicitRejection(pair.privateKey, ciphertext).equals(message)).toBe(true);
      lengths.add(message.length);
    }
    // Uniform over 246 lengths: 40 draws give nearly 40 distinct lengths (not a constant, not the conformant shape).
    expect(lengths.size).toBeGreaterThan(30);
  });

  it('the synthetic message depends on the private key and on every byte of the ciphertext', () => {
    let block: Buffer;
    let ciphertext: Buffer;
    do {
      block = nonConformantBlock(k, random);
      ciphertext = Buffer.from(encryptBlock(pair.publicKey, block), 'base64');
    } while (!belowModulus(other.privateKey, ciphertext)); // a ciphertext both keys can decrypt
    const message = decryptPkcs1WithImplicitRejection(pair.privateKey, ciphertext);
    expect(decryptPkcs1WithImplicitRejection(other.privateKey, ciphertext).equals(message)).toBe(false);
    const changed = Buffer.from(encryptBlock(pair.publicKey, Buffer.concat([block.subarray(0, k - 1), Buffer.from([block[k - 1]! ^ 1])])), 'base64');
    expect(decryptPkcs1WithImplicitRejection(pair.privateKey, changed).equals(message)).toBe(false);
  });

  it('a conformant block opens to its message whatever the message (garbage included)', () => {
    const garbage = Buffer.from('Qz?');
    const ciphertext = Buffer.from(encryptBlock(pair.publicKey, conformantBlock(k, random, garbage)), 'base64');
    expect(decryptPkcs1WithImplicitRejection(pair.privateKey, ciphertext).toString()).toBe('Qz?');
  });

  it('refuses, before any private-key operation, a ciphertext that is not k bytes below the modulus (public facts)', () => {
    const modulus = Buffer.from(pair.privateKey.export({ format: 'jwk' }).n!, 'base64url');
    expect(belowModulus(pair.privateKey, modulus)).toBe(false);
    expect(belowModulus(pair.privateKey, Buffer.alloc(k - 1, 1))).toBe(false);
    expect(belowModulus(pair.privateKey, Buffer.alloc(k + 1))).toBe(false);
    expect(() => decryptPkcs1WithImplicitRejection(pair.privateKey, modulus)).toThrow('ciphertext is not k bytes below the modulus');
  });
});
