/**
 * Area C canonical query string and RSA2 (platform decisions §7). The signature vector was cross-checked with
 * `printf '%s' CANONICAL | openssl dgst -sha256 -sign key.pem | base64` (an independent implementation).
 */
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ambiguousParameters, canonicalQueryString, canonicalValue, signRequestParameters, signRsa2, verifyRsa2 } from '../../src/crypto/rsa2';
import { parseJsonLossless } from '../../src/money';

/** Test-only key (never used outside this file). */
const VECTOR_PRIVATE_KEY = `-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAnRrFTmSpa0KIaitn+zzoke4C98Z8BG/QgOPh4hhIxpMSuC8S
f6EfvB+cClTIHkbUupA12wq59NNfOrgUbAO3q0jv+SWmadgG8EohCHXEVm/rcnp7
kudD7EjzJnbBhC+4bjlf8++KIX694tU0wQVjGZ0ALiJW2J9rvIQhc5Ho3smW/kHk
m2MvH5GJ4IRpR77FS91dglmgkyRqd/OAXMn11Hfxr3UcHgvxSd/TXThnmOoq+DYA
+OwQK/QgafaxttGYECRgyLuv4gTsCyH4NQJ+eTpwKZT9wCOB8nPyTFkxyYmuHdmB
eegvU1ezccg41jdU+9O3PrqxLpL1qFPi+vir9QIDAQABAoIBAAtyUuPmU627+EJ8
DSRyCKPxSogRDyInn3J0qBWYHV1Sg++lhlyEOdK0HuNlz/rcwE0jirj97BSZffvC
Q8Km9q/lLY7inmBh3AeP7x41rmt51hbOM8i9TuadXhH0Xx8pdu+ZAJO+ZTsRh/ZK
AID7yn+oP8YcvGUmIGxo2CMag3QP8MaajjKC90CUTFGqFoipgdTgfqvB8mDBkqfS
eD6PSCVZ6V+gp5nsRzXsd8Z9U8SsloXQUmaBA4yvcTqVaN2EYTKUJj2/rpVHPlZC
jYBwi63rzItxgT042woAHXVnvZB0cDFVSHyYXeXNqwE01xYjEJPMR4CuXijTMLCo
tE5mdXUCgYEA1eL9HbeZUldIIksDQnj8bzIKNYNY+aEPOLzu2IpvGAJLjeoQWTwF
zQ3Z1r2OEsK+M2H8fHU0AXp1QMjpUxg7aGmK9I8FB13vm13vU3617OD9Pk9zLYHs
R0VarlQiZ5yLz38iiifpw3JEhWWqVMvrV9GBRufwva/AQOJps4ulvasCgYEAvAmq
fZkLOpM8AcaXf1XcT9x5fJVMj2z3Ji7C0NVvrxcrcIB/+/MGkDMIoUUpbtawU3UL
/TSr/eAIIFaM1hJ74K6D7wuqGFqYr8Ic1fuCqE0n4rT51eMRvXHm88p4ydf2RoiM
FfCItyRhyUMvaAkb96aMzonVwSSTCljKxStNXN8CgYEAwCDUaftgmJyayWNEnFN9
vozeqs8//4zz1W2xx4Yi4Rg+sk4NPXszYs0MX1+K3cNdg16DpXDKtIFCDl3raZ8c
zl/wWFqYk9OHxrKMpx3tYcmA8pX/ymMo0aS1Hl+pQBVZaZy0dBICZHSipIl8hgtf
blVdoUn78QiM1DwN4yCQU10CgYBFU/8DDcFBGHXgZbsHnL18yFoWX+l5XACHmGgF
nRvvX0iJ0ybc2s6Jrfc5lolfL1KVgqsn8RqUoNv+KEsGxovb3BwSr6dIEWcILjZ5
gqC6sq/I+1a90FmDEpLHQdhk+vX3LXMQx71wYL6Y+OdqoSkplsOFhvZDntuDzhb8
uSlt2wKBgB/HVJSfV8L5bxg90KzdcBX1qnpyTVojQ1m2Lz+g1ygU1Y6ZAacx55j7
W0lOJsDfUb2gr4bwSj7FwhjbjZBhee3TUHW/2zisLzXOVLfYLl0EaOYCkk/4ZTH3
zs+n4RwNbkergZIZfnhOLPwXU1lafWGZGBZ/9Q0kB9gZvD/xHRBC
-----END RSA PRIVATE KEY-----
`;

const VECTOR_BODY =
  '{"service":"transfer","from_user_id":"12","to_user_id":13,"amount":10.50,"currency":"USD","memo":"","note":null,' +
  '"sign_type":"RSA2","sign":"x","flag":true,"items":[1,"a"],"meta":{"b":2,"a":"x/y"}}';
const VECTOR_CANONICAL =
  'amount=10.5&currency=USD&flag=true&from_user_id=12&items=[[1,"a"]]&meta=[{"b":2,"a":"x/y"}]&service=transfer&to_user_id=13';
const VECTOR_SIGN =
  'll8DLXFLkBfHa407u6L9jPAYLrE47Y8uxrgL2B1L0T4nQA2vYlEcYT3tHeTakqZYQJinYkqaC5kZyPIMXT16/DlCfabdt49LK7UFk4+9Y7kQqZfCRDGym40oZ0cgjl/uoAeqFirWCP+Q8BQIkM2UvU+eGxTW3veTVtBGQALDHXXSZL98Go72L5hFgVCG0JOe2v8/kN8wu23vtEFJ0zAK7Kb4tPQALgKRUKrJO0/4P444wtw++vQFOsaMH9p8OiA25qEUhR+RbugEkkU89Fd2Oo/Obu882JNslkYNuoiK5wxBrgkidqDycA9t8ow8y4FiNpy8ujei/b17KRvyddQDvA==';

describe('canonicalQueryString (§7)', () => {
  it('drops sign, sign_type, null and empty values, sorts keys, stringifies arrays/objects in brackets', () => {
    const body = parseJsonLossless(VECTOR_BODY) as Record<string, unknown>;
    expect(canonicalQueryString(body)).toBe(VECTOR_CANONICAL);
  });

  it('gives the same string for plain JSON.parse output and lossless output', () => {
    expect(canonicalQueryString(JSON.parse(VECTOR_BODY))).toBe(VECTOR_CANONICAL);
  });

  it('does not percent-encode values and keeps undefined out', () => {
    expect(canonicalQueryString({ b: 'a b&c=d', a: undefined, c: 0, d: false })).toBe('b=a b&c=d&c=0&d=false');
  });

  it('writes numbers as ECMAScript String() does', () => {
    expect(canonicalValue(parseJsonLossless('1e21'))).toBe('1e+21');
    expect(canonicalValue(parseJsonLossless('0.10'))).toBe('0.1');
    expect(canonicalValue(parseJsonLossless('100'))).toBe('100');
  });

  it('sorts by UTF-16 code units (uppercase before lowercase)', () => {
    expect(canonicalQueryString({ b: 1, B: 2, a: 3 })).toBe('B=2&a=3&b=1');
  });

  it('is empty for a body of only unsigned or empty parameters', () => {
    expect(canonicalQueryString({ sign: 'x', sign_type: 'RSA2', empty: '' })).toBe('');
  });
});

describe('RSA2 sign/verify', () => {
  it('matches the openssl vector', () => {
    expect(signRsa2(VECTOR_CANONICAL, VECTOR_PRIVATE_KEY)).toBe(VECTOR_SIGN);
  });

  it('verifies the vector with the public key and rejects any change', () => {
    const publicKey = createPublicKey(VECTOR_PRIVATE_KEY);
    expect(verifyRsa2(VECTOR_CANONICAL, VECTOR_SIGN, publicKey)).toBe(true);
    expect(verifyRsa2(VECTOR_CANONICAL.replace('10.5', '10.6'), VECTOR_SIGN, publicKey)).toBe(false);
    expect(verifyRsa2(VECTOR_CANONICAL, 'not base64!', publicKey)).toBe(false);
    expect(verifyRsa2(VECTOR_CANONICAL, '', publicKey)).toBe(false);
    expect(verifyRsa2(VECTOR_CANONICAL, VECTOR_SIGN, 'not a key')).toBe(false);
  });

  it('signRequestParameters adds sign_type RSA2 and a sign that verifies over the canonical string', () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const signed = signRequestParameters({ service: 'list_fees', page: 2 }, privateKey);
    expect(signed.sign_type).toBe('RSA2');
    expect(verifyRsa2('page=2&service=list_fees', signed.sign, publicKey)).toBe(true);
    expect(verifyRsa2(canonicalQueryString(signed), signed.sign, publicKey)).toBe(true);
  });
});

describe('ambiguousParameters (the platform refuses what the canonical string cannot tell apart)', () => {
  it('shows the ambiguity it guards against: a value holding `&` signs like more fields', () => {
    const smuggled = { service: 'list_fees', note: 'a=1&o=2' };
    const split = { service: 'list_fees', note: 'a=1', o: '2' };
    expect(canonicalQueryString(smuggled)).toBe(canonicalQueryString(split));
    expect(ambiguousParameters(smuggled)).toEqual(['note']);
    expect(ambiguousParameters(split)).toEqual([]);
  });

  it('finds `&` followed by `=` in a value, in an array or object value, and `&` or `=` in a name', () => {
    expect(ambiguousParameters({ z: 'x&y=1', items: ['a&b=c'], meta: { k: 'v&w', m: 'n=o' }, 'a=b': 1, 'c&d': 2, ok: 'fine' })).toEqual([
      'a=b', 'c&d', 'items', 'meta', 'z',
    ]);
    expect(ambiguousParameters({ url: 'https://shop.example.com/paid?order=1&lang=km' })).toEqual(['url']);
  });

  it('lets a value hold `=` (base64 padding) and `&` not followed by `=`, and ignores sign, sign_type and dropped values', () => {
    expect(
      ambiguousParameters({
        holder_name: 'ZINca6zq==',
        redirect_url: 'https://shop.example.com/paid?order=1',
        description: 'x = y: Tom & Jerry && co',
        sign: 'a&b=c',
        sign_type: '&=',
        memo: '',
        note: null,
      }),
    ).toEqual([]);
  });

  it('accepts exactly what reads back one way: every part with `=` starts a parameter', () => {
    // "description=Tom & Jerry&service=x": the part " Jerry" holds no "=", so it can only continue the value before it.
    const accepted = { description: 'Tom & Jerry', service: 'x' };
    const parts = canonicalQueryString(accepted).split('&');
    const readBack: Record<string, string> = {};
    let last = '';
    for (const part of parts) {
      if (part.includes('=')) {
        last = part.slice(0, part.indexOf('='));
        readBack[last] = part.slice(part.indexOf('=') + 1);
      } else readBack[last] += `&${part}`;
    }
    expect(readBack).toEqual(accepted);
  });

  it('passes every vector of this file and of the signing guide', () => {
    expect(ambiguousParameters(parseJsonLossless(VECTOR_BODY) as Record<string, unknown>)).toEqual([]);
    const guide = readFileSync(join(__dirname, '../fixtures/area-c/request.json'), 'utf8');
    expect(ambiguousParameters(parseJsonLossless(guide) as Record<string, unknown>)).toEqual([]);
  });
});
