/**
 * What the timeline may copy out of a Temporal payload (src/timeline/redact.ts): secrets by name in any spelling and
 * sealed values under any name become `[redacted]`; amounts become decimal strings; the result is JSON-safe and
 * bounded.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { decodePayload, isSealedValue, isSecretName, redact, REDACTED } from '../../src/timeline/redact';

describe('redact', () => {
  it('hides a field whose name says it is a secret, in any case or spelling', () => {
    for (const name of ['password', 'sealed_password', 'otp', 'OTP', 'otpCode', 'token', 'pre_order_token', 'accessToken', 'secret', 'hmac_secret', 'card', 'card_number', 'cardNumber', 'security_code', 'securityCode', 'SECURITY-CODE', 'cvv', 'cvc2', 'sealed']) {
      expect([name, isSecretName(name)]).toEqual([name, true]);
    }
    for (const name of ['amount_units', 'invoice_reference', 'trx_ref', 'status', 'confirmation_id', 'webhook_id', 'merchant_id']) {
      expect([name, isSecretName(name)]).toEqual([name, false]);
    }
  });

  it('hides a sealed value under any name, and only sealed values', () => {
    expect(isSealedValue('v2.k1.aXY.Y2lwaGVy.dGFn')).toBe(true);
    expect(isSealedValue('v1.aXY.Y2lwaGVy.dGFn')).toBe(true);
    for (const value of ['v2.k1', 'v1.2.3', 'PAYIN-0001', 'v3.a.b.c.d', 'v2.k1.a.b.c.d', 'hello world']) expect([value, isSealedValue(value)]).toEqual([value, false]);
  });

  it('walks objects and arrays, keeps what is safe, writes amounts as decimal strings', () => {
    const input = {
      reference: 'DEP-1',
      amount_units: 3000000,
      attempts: 2,
      nested: { sealed_password: 'x', list: [{ card: { number: '4111' } }, 'v2.k1.a.b.c'] },
      when: new Date('2025-01-31T12:00:00.123Z'),
      bytes: new Uint8Array([1, 2, 3]),
      nothing: undefined,
      infinite: Infinity,
    };
    expect(redact(input)).toEqual({
      reference: 'DEP-1',
      amount_units: '3000000',
      attempts: 2,
      nested: { sealed_password: REDACTED, list: [{ card: REDACTED }, REDACTED] },
      when: '2025-01-31T12:00:00.123Z',
      bytes: { binary_bytes: 3 },
      nothing: null,
      infinite: null,
    });
  });

  it('bounds what one payload contributes: depth, items and string length', () => {
    let deep: unknown = 'bottom';
    for (let level = 0; level < 20; level++) deep = { level: deep };
    expect(JSON.stringify(redact(deep))).not.toContain('bottom');
    const long = redact({ list: Array.from({ length: 150 }, (_, index) => index), text: 'x'.repeat(2000) }) as { list: unknown[]; text: string };
    expect(long.list).toHaveLength(101);
    expect(long.list.at(-1)).toBe('…');
    expect(long.text).toHaveLength(501);
  });

  it('decodes JSON payloads with the default converter; an undecodable one is named by its encoding only', () => {
    expect(decodePayload(defaultPayloadConverter.toPayload({ otp: '123456', reference: 'R' }))).toEqual({ otp: REDACTED, reference: 'R' });
    expect(decodePayload(defaultPayloadConverter.toPayload(null))).toBeNull();
    const encrypted = { metadata: { encoding: new TextEncoder().encode('binary/encrypted') }, data: new TextEncoder().encode('ciphertext') };
    expect(decodePayload(encrypted)).toEqual({ undecodable: 'binary/encrypted' });
  });
});
