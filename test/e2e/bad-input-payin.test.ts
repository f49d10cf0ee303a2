/**
 * Bad input in Area B gets the documented 422 envelope and changes nothing: control characters in B1 and B2 fields,
 * and validly signed upstream notifications whose fields break platform decisions §4's shape (trx_ref of the wrong
 * type, missing, too long or with a NUL; amount as a string) are refused before anything is recorded.
 */
import { hmacSha256Hex } from '../../src/crypto/hmac';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { createTestMerchant, post, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';

describe('bad input, Area B', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;
  beforeAll(async () => {
    harness = await startPayinHarness();
    merchant = await createTestMerchant(harness);
  });
  afterAll(() => harness.stop());

  const base = () => harness.platform.facadeUrl;
  const count = async (table: string) => Number((await harness.platform.deps.database(table).count('* as n').first())!.n);

  it.each([
    ['memo', { amount: 1, out_trade_no: 'NUL-MEMO', memo: 'a\u0000b' }, { memo: ['The memo must not contain control characters.'] }],
    ['out_trade_no', { amount: 1, out_trade_no: 'NUL\u0000ORDER' }, { out_trade_no: ['The out trade no must not contain control characters.'] }],
  ])('B1 refuses a control character in %s with 422 and records nothing', async (_field, body, errors) => {
    const payins = await count('payins');
    const response = await post(base(), '/api/v1/payins', JSON.stringify(body), { 'X-API-Key': merchant.api_key });
    expect(response.status).toBe(422);
    expect(response.json).toEqual({ success: false, message: 'Validation errors', errors });
    expect(await count('payins')).toBe(payins);
  });

  it('B2 refuses a control character in out_trade_no with 422', async () => {
    const response = await post(base(), '/api/v1/payins/status', JSON.stringify({ out_trade_no: 'x\u0000y' }), { 'X-API-Key': merchant.api_key });
    expect(response.status).toBe(422);
    expect(response.json).toEqual({ success: false, message: 'Validation error', errors: { out_trade_no: ['The out trade no must not contain control characters.'] } });
  });

  describe('validly signed notifications with malformed fields', () => {
    let invoice_reference: string;
    beforeAll(async () => {
      const created = await post(base(), '/api/v1/payins', JSON.stringify({ amount: 2, out_trade_no: `SHAPE-${Date.now()}` }), { 'X-API-Key': merchant.api_key });
      expect(created.status).toBe(200);
      invoice_reference = created.json.data.invoice_reference;
    });

    const signed = (body: string) => post(base(), '/api/v1/upstream/notifications', body, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, body) });
    const shaped = (fields: Record<string, unknown>) =>
      JSON.stringify({ invoice_reference, status: 'success', amount: 2, currency: 'USDT', trx_ref: 'TRX-OK', ...fields });

    it.each([
      ['trx_ref as a number', shaped({ trx_ref: 12345 }), 'trx_ref'],
      ['trx_ref as an object', shaped({ trx_ref: { a: 1 } }), 'trx_ref'],
      ['trx_ref as an array', shaped({ trx_ref: ['a'] }), 'trx_ref'],
      ['trx_ref missing', JSON.stringify({ invoice_reference: 'PAYIN-X', status: 'success', amount: 2, currency: 'USDT' }).replace('PAYIN-X', 'REPLACE'), 'trx_ref'],
      ['trx_ref with a NUL', shaped({ trx_ref: 'TRX\u0000REF' }), 'trx_ref'],
      ['trx_ref of 601 characters', shaped({ trx_ref: 'T'.repeat(601) }), 'trx_ref'],
      ['amount as a string', shaped({ amount: '2' }), 'amount'],
      ['invoice_reference with a NUL', shaped({ invoice_reference: 'PAYIN-\u0000' }), 'invoice_reference'],
    ])('refuses %s with 422, records nothing and credits nothing', async (_name, rawBody, field) => {
      const body = rawBody.replace('REPLACE', invoice_reference);
      const notifications = await count('upstream_notifications');
      const response = await signed(body);
      expect(response.status).toBe(422);
      expect(response.json).toMatchObject({ success: false, message: 'Validation errors' });
      expect(Object.keys(response.json.errors)).toContain(field);
      expect(await count('upstream_notifications')).toBe(notifications);
      expect((await harness.platform.deps.database('payins').where({ invoice_reference }).first()).status).toBe('waiting');
    });
  });
});
