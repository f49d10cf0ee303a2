/** RSA2 over canonical JSON (platform decisions §6) and the worked example of docs/signing-area-a.md. */
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { canonicalJson, isBase64, signBody, signRsa2, verifyBody, verifyRsa2 } from '../../src/crypto/rsa2';
import { LosslessNumber, parseJsonLossless } from '../../src/money';

const fixtures = path.join(__dirname, '..', 'fixtures', 'area-a');
const fixture = (name: string) => readFileSync(path.join(fixtures, name), 'utf8');

describe('canonicalJson', () => {
  it('drops sign and sign_type, sorts keys at every depth, no spaces', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: 'x' }, sign: 'S', sign_type: 'RSA2' })).toBe(
      '{"a":{"c":"x","d":[{"y":2,"z":1}]},"b":1}',
    );
  });

  it('keeps sign and sign_type below the top level', () => {
    expect(canonicalJson({ data: { sign: 'x', sign_type: 'y' } })).toBe('{"data":{"sign":"x","sign_type":"y"}}');
  });

  it('does not escape "/" or non-ASCII', () => {
    expect(canonicalJson({ name: 'a/b ចាន់ é' })).toBe('{"name":"a/b ចាន់ é"}');
  });

  it('writes numbers as ECMAScript does (lossless input 12.50 → 12.5, bigint → number)', () => {
    expect(canonicalJson({ amount: new LosslessNumber('12.50'), n: 7n, f: 1e21 })).toBe('{"amount":12.5,"f":1e+21,"n":7}');
  });

  it('equals JSON.stringify of the key-sorted object for any JSON value', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (value) => {
        const sortDeep = (item: unknown): unknown =>
          Array.isArray(item)
            ? item.map(sortDeep)
            : item && typeof item === 'object'
              ? Object.fromEntries(Object.keys(item).sort().map((key) => [key, sortDeep((item as Record<string, unknown>)[key])]))
              : item;
        const { sign: _sign, sign_type: _type, ...rest } = value as Record<string, unknown>;
        expect(canonicalJson(value as Record<string, unknown>)).toBe(JSON.stringify(sortDeep(rest)));
      }),
    );
  });

  it('refuses a non-object', () => {
    expect(() => canonicalJson([] as unknown as Record<string, unknown>)).toThrow(TypeError);
  });
});

describe('RSA2 sign and verify', () => {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });

  it('round-trips and refuses a changed field', () => {
    const signed = signBody({ service: 'query.fundTransfer', out_trade_no: 'A1' }, pair.privateKey);
    expect(signed.sign_type).toBe('RSA2');
    expect(verifyBody(signed, pair.publicKey)).toBe(true);
    expect(verifyBody({ ...signed, out_trade_no: 'A2' }, pair.publicKey)).toBe(false);
  });

  it.each([
    ['a missing sign', undefined],
    ['an empty sign', ''],
    ['a non-base64 sign', 'not base64!'],
    ['a badly padded sign', 'abc'],
    ['a numeric sign', 12],
  ])('answers false (never throws) for %s', (_name, sign) => {
    expect(verifyRsa2('{}', sign, pair.publicKey)).toBe(false);
  });

  it('refuses keys under 2048 bits', () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    expect(verifyRsa2('{}', signRsa2('{}', small.privateKey), small.publicKey)).toBe(false);
  });

  it('isBase64 accepts only padded standard base64', () => {
    expect(isBase64('QUJD')).toBe(true);
    expect(isBase64('QUI=')).toBe(true);
    expect(isBase64('QUI')).toBe(false);
    expect(isBase64('QU-_')).toBe(false);
  });
});

describe('the worked example of docs/signing-area-a.md', () => {
  it('request: canonical string and signature (reproducible with openssl)', () => {
    const request = parseJsonLossless(fixture('request.json')) as Record<string, unknown>;
    expect(canonicalJson(request)).toBe(fixture('request.canonical.txt'));
    // RSASSA-PKCS1-v1_5 is deterministic: the same key and string give the same signature.
    expect(signRsa2(fixture('request.canonical.txt'), fixture('partner-private.pem'))).toBe(fixture('request.sign.txt'));
    expect(verifyRsa2(fixture('request.canonical.txt'), fixture('request.sign.txt'), fixture('partner-public.pem'))).toBe(true);
  });

  it('response: canonical string and signature', () => {
    const response = parseJsonLossless(fixture('response.json')) as Record<string, unknown>;
    expect(canonicalJson(response)).toBe(fixture('response.canonical.txt'));
    expect(signRsa2(fixture('response.canonical.txt'), fixture('platform-example-private.pem'))).toBe(fixture('response.sign.txt'));
    expect(verifyBody({ ...response, sign: fixture('response.sign.txt') }, fixture('platform-example-public.pem'))).toBe(true);
  });

  it('the documented strings match the fixtures', () => {
    const doc = readFileSync(path.join(__dirname, '..', '..', 'docs', 'signing-area-a.md'), 'utf8');
    for (const name of ['request.canonical.txt', 'request.sign.txt', 'response.canonical.txt', 'response.sign.txt']) {
      expect(doc).toContain(fixture(name));
    }
  });
});
