/**
 * B1 with an Idempotency-Key (docs/idempotency.md): a merchant's retry after a timeout gets the first payin back byte
 * for byte (one payin, forwarded upstream once) instead of "already been taken"; the key with other fields is refused.
 */
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { createTestMerchant, post, startPayinHarness, type PayinHarness } from '../support/payin-setup';

describe('B1 idempotency', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;
  beforeAll(async () => {
    harness = await startPayinHarness();
    merchant = await createTestMerchant(harness);
  });
  afterAll(() => harness.stop());

  const create = (body: string, key: string) =>
    post(harness.platform.facadeUrl, '/api/v1/payins', body, { 'X-API-Key': merchant.api_key, 'Idempotency-Key': key });

  it('answers a retry with the same key with the first payin, byte for byte, and forwards it once', async () => {
    const body = '{"amount": 3.5, "out_trade_no": "IDEMP-1"}';
    const forwardedBefore = harness.sandbox.received.length;
    const first = await create(body, 'b1-retry-1');
    const second = await create(body, 'b1-retry-1');
    expect(first.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(harness.sandbox.received.length - forwardedBefore).toBe(1);
    expect(await harness.platform.deps.database('payins').where({ out_trade_no: 'IDEMP-1' }).count('* as n').first()).toMatchObject({ n: 1n });
  });

  it('refuses the same key with other fields with 422 on Idempotency-Key', async () => {
    const reply = await create('{"amount": 4, "out_trade_no": "IDEMP-1"}', 'b1-retry-1');
    expect(reply.status).toBe(422);
    expect(reply.json).toEqual({
      success: false,
      message: 'Validation errors',
      errors: { 'Idempotency-Key': ['The idempotency key was already used with other parameters.'] },
    });
  });

  it('answers a retry whose first run died after the upstream answered but before the answer was kept', async () => {
    const body = '{"amount": 2, "out_trade_no": "IDEMP-CRASH"}';
    const first = await create(body, 'b1-crash-1');
    expect(first.status).toBe(200);
    // What a process killed between recording the forward and recording the answer leaves: a claim still running,
    // past its lock (so a retry takes it over), and the forwarded payin holding its out_trade_no.
    await harness.platform.deps
      .database('idempotency_keys')
      .where({ key: 'b1-crash-1' })
      .update({ state: 'running', response: null, locked_until: new Date(Date.now() - 1000) });
    const forwardedBefore = harness.sandbox.received.length;
    const retried = await create(body, 'b1-crash-1');
    expect(retried.status).toBe(200);
    expect(retried.text).toBe(first.text);
    expect(harness.sandbox.received.length).toBe(forwardedBefore);
    expect(await harness.platform.deps.database('payins').where({ out_trade_no: 'IDEMP-CRASH' }).count('* as n').first()).toMatchObject({ n: 1n });
  });
});
