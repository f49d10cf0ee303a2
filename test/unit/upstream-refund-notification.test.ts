/**
 * The upstream's refund notification (docs/refunds.md "Providers", src/upstream/notifications.ts): which body
 * is a refund notification, its fields read from verified bytes (amounts exact, never through a float), the
 * signature checked before any field, and the refund URL's default (src/config.ts upstreamRefundUrl).
 */
import { loadConfig, upstreamRefundUrl } from '../../src/config';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { DomainError } from '../../src/errors';
import { openRefundNotification, readRefundNotification, upstreamNotificationKind } from '../../src/upstream/notifications';

const bytes = (text: string) => Buffer.from(text, 'utf8');
const SECRET = 'a-notification-secret-of-this-test';

/** A refund notification body with `amount` written as raw JSON text. */
function body(amount: string, more = ''): string {
  return `{"refund_reference":"RFD-1","status":"refund_succeeded","amount":${amount},"currency":"USDT","trx_ref":"0xpay","refund_trx_ref":"0xrefund"${more}}`;
}

/** The fields a refusal lists (DomainError VALIDATION_FAILED), or the error when it is another. */
function refusal(read: () => unknown): Record<string, string[]> | unknown {
  try {
    read();
  } catch (error) {
    if (error instanceof DomainError && error.reason === 'VALIDATION_FAILED') return error.fields;
    return error;
  }
  throw new Error('not refused');
}

describe('the kind of an upstream notification', () => {
  it.each([
    ['{"refund_reference":"RFD-1","status":"refund_succeeded"}', 'refund'],
    ['{"refund_reference":null}', 'refund'],
    ['{"invoice_reference":"PAYIN-ABC","status":"success","amount":1,"trx_ref":"x"}', 'payin'],
    ['{"invoice_reference":"PAYIN-ABC","status":"refund_succeeded"}', 'payin'],
    ['not json', 'payin'],
    ['[{"refund_reference":"RFD-1"}]', 'payin'],
  ])('%s is a %s notification', (text, kind) => {
    expect(upstreamNotificationKind(bytes(text))).toBe(kind);
  });
});

describe('readRefundNotification', () => {
  it('reads every field of a succeeded refund', () => {
    expect(readRefundNotification(bytes(body('12.5')))).toEqual({
      refund_reference: 'RFD-1',
      status: 'refund_succeeded',
      amount_units: 12_500_000n,
      currency: 'USDT',
      trx_ref: '0xpay',
      refund_trx_ref: '0xrefund',
    });
  });

  it.each([
    ['0.1', 100_000n],
    ['0.000001', 1n],
    ['1e-6', 1n],
    ['2.5E+2', 250_000_000n],
    // 1.015 × 10^6 in floating point is 1014999.9999999999: truncated, a unit would be lost.
    ['1.015', 1_015_000n],
    // The largest amount (10^9 USDT less one unit), every decimal kept.
    ['999999999.999999', 999_999_999_999_999n],
    ['123456789.123457', 123_456_789_123_457n],
    ['7.10', 7_100_000n],
  ])('reads the amount %s exactly as %s units (no float)', (amount, units) => {
    expect(readRefundNotification(bytes(body(amount))).amount_units).toBe(units);
  });

  it.each([
    ['0.30000000000000004', 'too_many_decimals'],
    ['1.0000001', 'too_many_decimals'],
    ['0', 'zero'],
    ['-5', 'negative'],
    ['1000000001', 'too_large'],
    ['"12.5"', 'not_a_number'],
    ['true', 'not_a_number'],
    ['null', 'not_a_number'],
  ])('refuses the amount %s (%s)', (amount, problem) => {
    expect(refusal(() => readRefundNotification(bytes(body(amount))))).toEqual({ amount: [problem] });
  });

  it('reads a failed refund, its reason bounded and without control characters', () => {
    const text = `{"refund_reference":"RFD-2","status":"refund_failed","amount":3,"failure_reason":"no\\u0000route\\nto host ${'x'.repeat(400)}"}`;
    const read = readRefundNotification(bytes(text));
    expect(read).toMatchObject({ refund_reference: 'RFD-2', status: 'refund_failed', amount_units: 3_000_000n, currency: 'USDT' });
    expect(read.failure_reason).toMatch(/^no route to host x+$/);
    expect(read.failure_reason).toHaveLength(255);
    expect(read.refund_trx_ref).toBeUndefined();
    expect(readRefundNotification(bytes('{"refund_reference":"RFD-3","status":"refund_failed","amount":1}')).failure_reason).toBe('');
  });

  it('lists every failing field at once', () => {
    const text = `{"refund_reference":"${'R'.repeat(65)}","status":"success","amount":1.5,"currency":"USD","trx_ref":"","refund_trx_ref":7,"failure_reason":{}}`;
    expect(refusal(() => readRefundNotification(bytes(text)))).toEqual({
      refund_reference: ['invalid'],
      status: ['invalid'],
      currency: ['invalid'],
      trx_ref: ['invalid'],
      refund_trx_ref: ['invalid'],
      failure_reason: ['invalid'],
    });
  });

  it('requires refund_reference, the refund transaction of a success, and an amount', () => {
    expect(refusal(() => readRefundNotification(bytes('{"status":"refund_succeeded"}')))).toEqual({
      refund_reference: ['required'],
      amount: ['not_a_number'],
      refund_trx_ref: ['required'],
    });
    expect(refusal(() => readRefundNotification(bytes('{"refund_reference":"RFD-1\\u0007","status":"refund_failed","amount":1}')))).toEqual({ refund_reference: ['invalid'] });
  });

  it.each([
    ['not JSON', 'not json'],
    ['an array', '[1]'],
    ['a member given twice (which one would count?)', '{"refund_reference":"RFD-1","status":"refund_failed","status":"refund_succeeded","amount":1,"refund_trx_ref":"x"}'],
    ['nested deeper than any notification', `{"refund_reference":"RFD-1","x":${'['.repeat(40)}${']'.repeat(40)}}`],
  ])('refuses a body that is %s', (_what, text) => {
    expect(refusal(() => readRefundNotification(bytes(text)))).toEqual({ body: ['The request body must be a JSON object.'] });
  });
});

describe('openRefundNotification (the signature before any field)', () => {
  const text = body('1.25');

  it('reads a body signed with the upstream secret (hex in either case)', () => {
    expect(openRefundNotification(SECRET, bytes(text), hmacSha256Hex(SECRET, text)).amount_units).toBe(1_250_000n);
    expect(openRefundNotification(SECRET, bytes(text), hmacSha256Hex(SECRET, text).toUpperCase()).refund_reference).toBe('RFD-1');
  });

  it.each([
    ['no signature', undefined],
    ['an empty signature', ''],
    ['a signature under another secret', hmacSha256Hex('another-secret', text)],
    ['the signature of another body', hmacSha256Hex(SECRET, body('1250'))],
    ['a truncated signature', hmacSha256Hex(SECRET, text).slice(0, 63)],
  ])('refuses %s with UPSTREAM_SIGNATURE_INVALID', (_what, signature) => {
    expect(refusal(() => openRefundNotification(SECRET, bytes(text), signature))).toMatchObject({ reason: 'UPSTREAM_SIGNATURE_INVALID', kind: 'unauthenticated' });
  });

  it('refuses everything when no secret is configured, and an unsigned malformed body by its signature first', () => {
    expect(refusal(() => openRefundNotification(undefined, bytes(text), hmacSha256Hex('', text)))).toMatchObject({ reason: 'UPSTREAM_SIGNATURE_INVALID' });
    expect(refusal(() => openRefundNotification(SECRET, bytes('not json'), 'f'.repeat(64)))).toMatchObject({ reason: 'UPSTREAM_SIGNATURE_INVALID' });
  });

  it('refuses a signed malformed body by its fields', () => {
    const malformed = body('0.0000001');
    expect(refusal(() => openRefundNotification(SECRET, bytes(malformed), hmacSha256Hex(SECRET, malformed)))).toEqual({ amount: ['too_many_decimals'] });
  });
});

describe('the upstream refund URL', () => {
  it.each([
    ['http://127.0.0.1:3100/payins', 'http://127.0.0.1:3100/payins/refunds'],
    ['https://provider.example/v1/payins/', 'https://provider.example/v1/payins/refunds'],
    ['https://provider.example/v1/payins?merchant=7', 'https://provider.example/v1/payins/refunds?merchant=7'],
    ['https://provider.example', 'https://provider.example/refunds'],
  ])('defaults to <UPSTREAM_PAYIN_URL>/refunds: %s → %s', (payin, refund) => {
    expect(upstreamRefundUrl(loadConfig({ UPSTREAM_PAYIN_URL: payin, PAYMENTS_MODE: 'test' }))).toBe(refund);
  });

  it('is UPSTREAM_REFUND_URL when set, and none without an upstream', () => {
    expect(upstreamRefundUrl(loadConfig({ UPSTREAM_PAYIN_URL: 'https://a.example/payins', UPSTREAM_REFUND_URL: 'https://b.example/r' }))).toBe('https://b.example/r');
    expect(upstreamRefundUrl(loadConfig({}))).toBeUndefined();
  });

  it('must be https in live mode, like the payin URL; test mode takes http', () => {
    expect(() => loadConfig({ UPSTREAM_REFUND_URL: 'http://127.0.0.1:3100/payins/refunds' })).toThrow(/UPSTREAM_REFUND_URL.*must be https in live mode/);
    expect(() => loadConfig({ UPSTREAM_REFUND_URL: 'not a url', PAYMENTS_MODE: 'test' })).toThrow(/UPSTREAM_REFUND_URL/);
    expect(loadConfig({ UPSTREAM_REFUND_URL: 'http://127.0.0.1:3100/payins/refunds', PAYMENTS_MODE: 'test' }).UPSTREAM_REFUND_URL).toBe('http://127.0.0.1:3100/payins/refunds');
  });
});
