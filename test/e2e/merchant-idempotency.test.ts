/**
 * Area C money-moving services with an Idempotency-Key (docs/idempotency.md): a client's retry after a timeout, or a
 * captured signed request replayed later, moves money once and gets the first answer byte for byte; the same key
 * with other parameters is refused.
 */
import { getUser } from '../../src/onboarding';
import { onboardMerchantClient, type MerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { fundUser } from '../support/wallets';

describe('Area C idempotency', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let from: { id: number; user_token: string };
  let to: { id: number };

  beforeAll(async () => {
    platform = await startTestPlatform();
    merchant = (await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Idempotent Shop')).client;
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
    const fields = { from_user_id: from.id, to_user_id: to.id, amount: 10, currency: 'USD' };
    const first = await merchant.action('transfer', fields, { headers });
    const second = await merchant.action('transfer', fields, { headers });
    expect(first.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(await posted(from.id)).toBe(10_000n - 1_000n);
    expect(await posted(to.id)).toBe(1_000n);
  });

  it('refuses the same key with other parameters, and moves nothing', async () => {
    const reused = await merchant.action('transfer', { from_user_id: from.id, to_user_id: to.id, amount: 11, currency: 'USD' }, { headers: { 'Idempotency-Key': 'transfer-retry-1' } });
    expect(reused.status).toBe(400);
    expect(reused.body).toMatchObject({ success: false, code: 400, error: { 'Idempotency-Key': [expect.any(String)] } });
    expect(await posted(from.id)).toBe(9_000n);
  });

  it('moves nothing again when a captured signed request (its request_id inside the signature) is replayed', async () => {
    const fields = { from_user_id: from.id, to_user_id: to.id, amount: 5, currency: 'USD', request_id: 'REQ-0001' };
    const first = await merchant.action('transfer', fields);
    const replayed = await merchant.action('transfer', fields);
    expect(first.status).toBe(200);
    expect(replayed.text).toBe(first.text);
    expect(await posted(from.id)).toBe(9_000n - 500n);
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
