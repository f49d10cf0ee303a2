/**
 * src/crypto/field-decryption.ts (platform decisions §7): the three accepted paddings decrypt, and every
 * failure (not base64, wrong key, wrong padding, truncated, empty, not UTF-8, not a string) gives the identical error.
 */
import { renderFieldProblems } from '../../rest-facade/merchant/contract';
import { constants, generateKeyPairSync, publicEncrypt } from 'node:crypto';
import fc from 'fast-check';
import { decryptField, fieldNotDecryptable, tryDecryptField } from '../../src/crypto/field-decryption';
import { DomainError } from '../../src/errors';
import { encryptField } from '../support/field-encryption';

function keyPair() {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: pair.privateKey,
    privateKeyPem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }) as string,
  };
}

const keys = keyPair();
const otherKeys = keyPair();

/** The error decryptField throws, as a plain object (everything a client could observe). */
async function failureOf(value: unknown, field = 'bank_code') {
  try {
    await decryptField(keys, field, value);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    const domain = error as DomainError;
    // The service answers a field problem code; the merchant reads it in the Area C contract's words.
    return { kind: domain.kind, reason: domain.reason, message: domain.message, fields: renderFieldProblems(domain.fields) };
  }
  throw new Error('decryptField accepted the value');
}

const EXPECTED = {
  kind: 'invalid_argument',
  reason: 'FIELD_NOT_DECRYPTABLE',
  message: 'bank_code could not be decrypted',
  fields: { bank_code: ['The bank_code could not be decrypted.'] },
};

describe('decryptField: accepted paddings', () => {
  it.each(['oaep-sha256', 'oaep-sha1', 'pkcs1'] as const)('decrypts %s', async (padding) => {
    const ciphertext = encryptField(keys.publicKeyPem, '4242424242424242', padding);
    expect(await decryptField(keys, 'bank_code', ciphertext)).toBe('4242424242424242');
  });

  it('decrypts UTF-8 plaintexts (Khmer holder name) under every padding', async () => {
    for (const padding of ['oaep-sha256', 'oaep-sha1', 'pkcs1'] as const) {
      expect(await decryptField(keys, 'holder_name', encryptField(keys.publicKeyPem, 'សុខ ដារា', padding))).toBe('សុខ ដារា');
    }
  });

  it('decrypts PKCS#1 v1.5 ciphertexts made by Node crypto (not only by node-forge)', async () => {
    const ciphertext = publicEncrypt({ key: keys.publicKeyPem, padding: constants.RSA_PKCS1_PADDING }, Buffer.from('123')).toString('base64');
    expect(await decryptField(keys, 'security_code', ciphertext)).toBe('123');
  });

  it('tolerates line breaks in the base64 (openssl base64 output)', async () => {
    const ciphertext = encryptField(keys.publicKeyPem, '012345678', 'oaep-sha256');
    const wrapped = ciphertext.replace(/(.{64})/g, '$1\n');
    expect(await decryptField(keys, 'bank_number', wrapped)).toBe('012345678');
  });

  it('decrypts random plaintexts of every padding (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 60 }), fc.constantFrom('oaep-sha256', 'oaep-sha1', 'pkcs1' as const), async (text, padding) => {
        expect(await tryDecryptField(keys, encryptField(keys.publicKeyPem, text, padding))).toBe(text);
      }),
      { numRuns: 30 },
    );
  });
});

describe('decryptField: every failure gives the identical error', () => {
  const good = encryptField(keys.publicKeyPem, '4242424242424242', 'oaep-sha256');
  const goodPkcs1 = encryptField(keys.publicKeyPem, '4242424242424242', 'pkcs1');
  const cases: Array<[string, () => unknown]> = [
    ['not base64', () => 'not base64 at all!'],
    ['base64url alphabet', () => good.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '') + '-_'],
    ['the plaintext itself', () => '4242424242424242'],
    ['an empty string', () => ''],
    ['a number', () => 4242424242424242],
    ['an object', () => ({ number: '4242' })],
    ['under another key (OAEP)', () => encryptField(otherKeys.publicKeyPem, '4242424242424242', 'oaep-sha256')],
    ['under another key (PKCS#1 v1.5)', () => encryptField(otherKeys.publicKeyPem, '4242424242424242', 'pkcs1')],
    ['OAEP with SHA-512 (not accepted)', () =>
      publicEncrypt({ key: keys.publicKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha512' }, Buffer.from('4242')).toString('base64')],
    ['no padding (raw RSA)', () => publicEncrypt({ key: keys.publicKeyPem, padding: constants.RSA_NO_PADDING }, Buffer.alloc(256, 7)).toString('base64')],
    ['truncated', () => good.slice(0, 200)],
    ['truncated to a valid base64 length', () => Buffer.from(good, 'base64').subarray(0, 255).toString('base64')],
    ['one byte too long', () => Buffer.concat([Buffer.from(good, 'base64'), Buffer.from([0])]).toString('base64')],
    ['a flipped byte (OAEP)', () => flip(good)],
    ['a flipped byte (PKCS#1 v1.5)', () => flip(goodPkcs1)],
    ['an empty plaintext', () => encryptField(keys.publicKeyPem, '', 'oaep-sha256')],
    ['an empty plaintext (PKCS#1 v1.5)', () => encryptField(keys.publicKeyPem, '', 'pkcs1')],
    ['invalid UTF-8', () =>
      publicEncrypt({ key: keys.publicKeyPem, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, Buffer.from([0xff, 0xfe])).toString('base64')],
    ['over-long text', () => 'A'.repeat(5000)],
  ];

  it.each(cases)('%s', async (_name, make) => {
    expect(await failureOf(make())).toEqual(EXPECTED);
  });

  it('names the field it was given', async () => {
    expect((await failureOf('!', 'sourceOfFunds')).fields).toEqual(renderFieldProblems({ sourceOfFunds: [fieldNotDecryptable('sourceOfFunds')] }));
  });

  it('random base64 of the right length never decrypts (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 256, maxLength: 256 }), async (bytes) => {
        expect(await failureOf(Buffer.from(bytes).toString('base64'))).toEqual(EXPECTED);
      }),
      { numRuns: 25 },
    );
  });
});

function flip(base64: string): string {
  const bytes = Buffer.from(base64, 'base64');
  bytes[100] = bytes[100]! ^ 0x01;
  return bytes.toString('base64');
}
