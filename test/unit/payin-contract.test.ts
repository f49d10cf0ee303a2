/**
 * Area B pure parts: HMAC-SHA256 hex signatures, the error table, invoice references, webhook bodies, ledger keys.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { hmacSha256Hex, verifyHmacSha256Hex } from '../../src/crypto/hmac';
import { INVOICE_REFERENCE_PATTERN, PAYIN_MESSAGES, payinErrorFor } from '../../rest-facade/payin/contract';
import { webhookBody, webhookIdOf } from '../../src/flows/payin/activities';
import { additionalPaymentIdempotencyKey } from '../../src/flows/payin/contract';
import { newInvoiceReference } from '../../src/flows/payin/service';
import type { PayinRow } from '../../src/flows/payin/store';

describe('hmac', () => {
  it('matches the RFC 4231 test case 2 and verifies in either case', () => {
    const signature = hmacSha256Hex('Jefe', 'what do ya want for nothing?');
    expect(signature).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
    expect(verifyHmacSha256Hex('Jefe', 'what do ya want for nothing?', signature)).toBe(true);
    expect(verifyHmacSha256Hex('Jefe', 'what do ya want for nothing?', signature.toUpperCase())).toBe(true);
  });

  it('rejects a changed body, a wrong secret and malformed signatures', () => {
    const signature = hmacSha256Hex('secret', '{"a":1}');
    expect(verifyHmacSha256Hex('secret', '{"a": 1}', signature)).toBe(false);
    expect(verifyHmacSha256Hex('other', '{"a":1}', signature)).toBe(false);
    for (const bad of [undefined, null, '', 'zz', signature.slice(1), `${signature}00`]) {
      expect(verifyHmacSha256Hex('secret', '{"a":1}', bad)).toBe(false);
    }
  });

  it('agrees with node:crypto for any body and secret', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string(), (secret, body) => {
        const expected = createHmac('sha256', secret).update(body).digest('hex');
        return hmacSha256Hex(secret, body) === expected && verifyHmacSha256Hex(secret, body, expected);
      }),
    );
  });
});

describe('Area B error table', () => {
  it('carries the interface messages word for word', () => {
    const spec = readFileSync(path.join('/work/shared/spec/payment-services-interface.md'), 'utf8');
    for (const message of [
      PAYIN_MESSAGES.validationErrors,
      PAYIN_MESSAGES.upstreamUnavailable,
      PAYIN_MESSAGES.payinFailed,
      PAYIN_MESSAGES.unauthorized,
      PAYIN_MESSAGES.topUpNotFound,
      PAYIN_MESSAGES.validationError,
      PAYIN_MESSAGES.unauthenticated,
      PAYIN_MESSAGES.suspended,
    ]) {
      expect(spec).toContain(`| ${message} |`);
    }
  });

  it.each([
    ['payins', 'UNAUTHENTICATED', 401, 'Unauthorized'],
    ['status', 'UNAUTHENTICATED', 401, 'Unauthorized'],
    ['balance', 'UNAUTHENTICATED', 401, 'Unauthenticated. Please provide valid credentials.'],
    ['balance', 'MERCHANT_SUSPENDED', 403, 'Merchant account is suspended'],
    ['payins', 'UPSTREAM_UNAVAILABLE', 502, 'Payin service is unavailable. Please try again later.'],
    ['payins', 'PAYIN_FAILED', 500, 'Unable to process payin request. Please contact support.'],
    ['payins', 'INTERNAL', 500, 'Unable to process payin request. Please contact support.'],
    ['status', 'PAYIN_NOT_FOUND', 404, 'Top-up not found.'],
  ] as const)('%s %s → %i %s, errors null', (route, reason, status, message) => {
    expect(payinErrorFor(route, reason, {})).toEqual({ status, body: { success: false, message, errors: null } });
  });

  it('422 lists the fields: "Validation errors" on payins, "Validation error" on status', () => {
    expect(payinErrorFor('payins', 'VALIDATION_FAILED', { amount: ['x'] }).body).toEqual({ success: false, message: 'Validation errors', errors: { amount: ['x'] } });
    expect(payinErrorFor('status', 'VALIDATION_FAILED', { out_trade_no: ['y'] })).toEqual({
      status: 422,
      body: { success: false, message: 'Validation error', errors: { out_trade_no: ['y'] } },
    });
  });
});

describe('invoice references and webhook bodies', () => {
  it('are PAYIN- + 20 uppercase letters and digits, and distinct', () => {
    const references = Array.from({ length: 1000 }, newInvoiceReference);
    expect(references.every((reference) => INVOICE_REFERENCE_PATTERN.test(reference))).toBe(true);
    expect(new Set(references).size).toBe(1000);
  });

  const payin: PayinRow = {
    invoice_reference: 'PAYIN-ABCDEFGHIJ0123456789',
    merchant_id: 'M1',
    out_trade_no: 'O-1',
    amount_units: 10_000_000n,
    paid_amount_units: 10_500_001n,
    fee_units: 105_000n,
    payin_fee_percent: '1.0',
    currency: 'USDT',
    memo: null,
    status: 'success',
    late: false,
    payment_match_status: 'overpaid',
    trx_ref: '0xfeed',
    qr_content: null,
    created_at: new Date(0),
  };

  it('a success body lists the interface fields in order with exact amounts', () => {
    expect(webhookBody(payin, 'payin.success')).toBe(
      '{"success":true,"code":200,"event":"payin.success","data":{"trx_ref":"0xfeed","amount":10.500001,"currency":"USDT","fee":0.105,' +
        '"invoice_reference":"PAYIN-ABCDEFGHIJ0123456789","out_trade_no":"O-1","status":"success","original_amount":10,"payment_match_status":"overpaid"}}',
    );
    expect(webhookBody({ ...payin, paid_amount_units: 10_000_000n, payment_match_status: 'exact' }, 'payin.success')).not.toContain('original_amount');
  });

  it('webhook ids are stable per invoice and event', () => {
    expect(webhookIdOf(payin.invoice_reference, 'payin.success')).toBe('WH-ABCDEFGHIJ0123456789-SUCCESS');
    expect(webhookIdOf(payin.invoice_reference, 'payin.expired')).toBe('WH-ABCDEFGHIJ0123456789-EXPIRED');
  });
});

describe('additional payment ledger key', () => {
  it('names one payment by one key, however its amount (minor units) is spelled', () => {
    const key = additionalPaymentIdempotencyKey('PAYIN-1', { amount_units: 2_000_000n, trx_ref: 'TRX' });
    expect(key).toBe('PAYIN-1:additional:TRX:2000000');
    for (const amount_units of ['2000000', '02000000', ' 2000000', '2000000 ', '0x1E8480']) {
      expect(additionalPaymentIdempotencyKey('PAYIN-1', { amount_units, trx_ref: 'TRX' })).toBe(key);
    }
    expect(() => additionalPaymentIdempotencyKey('PAYIN-1', { amount_units: 'a lot', trx_ref: 'TRX' })).toThrow(SyntaxError);
  });
});
