/**
 * Area C money-moving services with an Idempotency-Key (docs/idempotency.md): a client's retry after a timeout, or a
 * captured signed request replayed later, moves money once and gets the first answer byte for byte; the same key
 * with other parameters is refused.
 */
import { signRequestParameters } from '../../src/crypto/rsa2';
import { getUser } from '../../src/onboarding';
import { onboardMerchantClient, type MerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { fundUser } from '../support/wallets';

describe('Area C idempotency', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let from: { id: number; user_token: string };
  let to: { id: number };
  let privateKey: string;

  beforeAll(async () => {
    platform = await startTestPlatform();
    const onboarded = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Idempotent Shop');
    merchant = onboarded.client;
    privateKey = onboarded.credentials.private_key!;
    await merchant.login();
    const make = async (phone: string) =>
      (await merchant.action('create_user', { phone_number: phone, first_name: 'Sok', last_name: 'Dara', address: 'Phnom Penh', currency: 'USD' })).body.data;
    from = await make('012500100');
    to = await make('012500101');
    await fundUser(platform, from.id, 10_000n);
  });
  afterAll(() => platform.stop());

  const posted = async (userId: number) => {
    const user = (await getUser(platform.deps.database, String(userId)))!;
    return (await platform.deps.ledger.getAccount(user.wallet_account_id)).posted_units;
  };

  it('replays a transfer retried with the same Idempotency-Key byte for byte, and moves the money once', async () => {
    const headers = { 'Idempotency-Key': 'transfer-retry-1' };
    // The test client gives each call a fresh request_id: two signed bodies, one key.
    const fields = { from_user_id: from.id, to_user_id: to.id, amount: 10, currency: 'USD' };
    const first = await merchant.action('transfer', fields, { headers });
    const second = await merchant.action('transfer', fields, { headers });
    expect(first.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(await posted(from.id)).toBe(10_000n - 1_000n);
    expect(await posted(to.id)).toBe(1_000n);
  });

  it('refuses the same key with other parameters with 409, and moves nothing: a key only narrows', async () => {
    const reused = await merchant.action('transfer', { from_user_id: from.id, to_user_id: to.id, amount: 11, currency: 'USD' }, { headers: { 'Idempotency-Key': 'transfer-retry-1' } });
    expect(reused.status).toBe(409);
    expect(reused.body).toEqual({ success: false, code: 409, message: 'Conflict', error: { 'Idempotency-Key': ['was already used with other parameters'] } });
    expect(await posted(from.id)).toBe(9_000n);
  });

  it('refuses a signed request_id used again with other parameters with 409 on request_id', async () => {
    const first = await merchant.action('transfer', { from_user_id: from.id, to_user_id: to.id, amount: 1, currency: 'USD', request_id: 'REQ-NARROW' });
    expect(first.status).toBe(200);
    const other = await merchant.action('transfer', { from_user_id: from.id, to_user_id: to.id, amount: 2, currency: 'USD', request_id: 'REQ-NARROW' });
    expect(other.status).toBe(409);
    expect(other.body.error).toEqual({ request_id: ['was already used with other parameters'] });
    expect(await posted(from.id)).toBe(9_000n - 100n);
  });

  it('moves money again for the same fields under a new request_id: two deliberate movements', async () => {
    const before = await posted(from.id);
    const fields = { from_user_id: from.id, to_user_id: to.id, amount: 1, currency: 'USD' };
    const one = await merchant.action('transfer', { ...fields, request_id: 'DELIBERATE-1' });
    const two = await merchant.action('transfer', { ...fields, request_id: 'DELIBERATE-2' });
    expect([one.status, two.status]).toEqual([200, 200]);
    expect(two.body.data.reference).not.toBe(one.body.data.reference);
    expect(await posted(from.id)).toBe(before - 200n);
  });

  it('answers a replayed refusal with the refusal, even once the cause is gone: a new movement needs a new request_id', async () => {
    const broke = await merchant.action('create_user', { phone_number: '012500102', first_name: 'No', last_name: 'Funds', address: 'Phnom Penh', currency: 'USD' });
    const fields = { from_user_id: broke.body.data.id, to_user_id: to.id, amount: 1, currency: 'USD', request_id: 'REFUSED-1' };
    const refused = await merchant.action('transfer', fields);
    expect(refused.body.error).toEqual({ amount: ['Insufficient balance.'] });
    await fundUser(platform, broke.body.data.id, 500n);
    const replayed = await merchant.action('transfer', fields);
    expect(replayed.text).toBe(refused.text);
    expect(await posted(broke.body.data.id)).toBe(500n);
    expect((await merchant.action('transfer', { ...fields, request_id: 'REFUSED-2' })).status).toBe(200);
  });

  it('refuses a signed request_id that is no valid key, on request_id, and moves nothing', async () => {
    const before = await posted(from.id);
    const response = await merchant.action('transfer', { from_user_id: from.id, to_user_id: to.id, amount: 1, currency: 'USD', request_id: 'has spaces' });
    expect(response.status).toBe(400);
    expect(response.body.error).toEqual({ request_id: ['must be 1 to 255 visible ASCII characters'] });
    expect(await posted(from.id)).toBe(before);
  });

  it('moves nothing again when a captured signed request (its request_id inside the signature) is replayed', async () => {
    const before = await posted(from.id);
    const fields = { from_user_id: from.id, to_user_id: to.id, amount: 5, currency: 'USD', request_id: 'REQ-0001' };
    const first = await merchant.action('transfer', fields);
    const replayed = await merchant.action('transfer', fields);
    expect(first.status).toBe(200);
    expect(replayed.text).toBe(first.text);
    expect(await posted(from.id)).toBe(before - 500n);
  });

  describe('a captured signed transfer replayed with three fresh Idempotency-Keys', () => {
    it.each([
      ['with a request_id', 'with-request-id', { request_id: 'REPLAYED-1' }],
      ['without a request_id', 'without-request-id', { memo: 'replayed body without request_id' }],
    ])('moves the money once %s, and answers every replay with the first answer', async (_label, keys, extra) => {
      const before = await posted(from.id);
      const fields = { from_user_id: from.id, to_user_id: to.id, amount: 3, currency: 'USD', ...extra };
      // What the merchant sent and the attacker captured: one signed body.
      const raw = JSON.stringify(signRequestParameters({ service: 'transfer', ...fields }, privateKey));
      const first = await merchant.post('/do-action', {}, { raw, headers: { 'Idempotency-Key': `original-${keys}` } });
      expect(first.status).toBe(200);
      const replies = [];
      for (const key of ['fresh-1', 'fresh-2', 'fresh-3']) {
        replies.push(await merchant.post('/do-action', {}, { raw, headers: { 'Idempotency-Key': `${key}-${keys}` } }));
      }
      replies.push(await merchant.post('/do-action', {}, { raw }));
      expect(await posted(from.id)).toBe(before - 300n);
      for (const replayed of replies) expect(replayed.text).toBe(first.text);
    });
  });

  it('blocks money once for a retried block_money', async () => {
    const headers = { 'Idempotency-Key': 'block-1' };
    const fields = { user_token: from.user_token, amount: 1, currency: 'USD', reference: 'HOLD-1' };
    const first = await merchant.action('block_money', fields, { headers });
    const second = await merchant.action('block_money', fields, { headers });
    expect(first.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(await platform.deps.database('blocked_money').where({ reference: 'HOLD-1' }).count('* as n').first()).toMatchObject({ n: 1n });
  });
});
