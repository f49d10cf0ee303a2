/**
 * A suspension takes effect on the very next request, although credential lookups are cached for
 * AUTH_CACHE_SECONDS: the change is announced to every process (PostgreSQL NOTIFY) and caches drop it at once.
 */
import { MerchantStatus } from '../../src/gen/payments/admin/v1/admin_pb';
import { createMerchant } from '../../src/onboarding/merchants';
import { createPartner } from '../../src/onboarding/partners';
import { generatePartnerKeys, PartnerClient } from '../support/partner-client';
import { onboardMerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';

describe('suspension is immediate', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ roles: ['api', 'facade'], env: { AUTH_CACHE_SECONDS: '60' } });
  });
  afterAll(() => platform.stop());

  it('refuses a suspended merchant’s next Area B request with 403, and its next Area C action with 401', async () => {
    const { credentials } = await createMerchant(platform.deps, { name: 'Soon Suspended', callback_url: 'https://merchant.example/cb' });
    const balance = () => fetch(`${platform.facadeUrl}/api/v1/balance`, { headers: { 'X-API-Key': credentials.api_key } });
    expect((await balance()).status).toBe(200);
    expect((await balance()).status).toBe(200); // now cached

    const wallet = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Wallet Soon Suspended');
    await wallet.client.login();
    expect((await wallet.client.action('list_fees')).status).toBe(200);

    for (const merchant_id of [credentials.merchant_id, wallet.merchant.id]) {
      await platform.clients.admin.setMerchantStatus({ merchantId: merchant_id, status: MerchantStatus.SUSPENDED });
    }
    const refused = await balance();
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ success: false, message: 'Merchant account is suspended', errors: null });
    const action = await wallet.client.action('list_fees');
    expect(action.status).toBe(401);

    await platform.clients.admin.setMerchantStatus({ merchantId: credentials.merchant_id, status: MerchantStatus.ACTIVE });
    expect((await balance()).status).toBe(200);
  });

  it('refuses a suspended partner’s next gateway call, with the access token it already holds, and its token requests', async () => {
    const keys = generatePartnerKeys();
    const { credentials } = await createPartner(platform.deps, { name: 'Soon Suspended Partner', public_key_pem: keys.publicKeyPem, float_units: 0n });
    const partner = new PartnerClient(platform.facadeUrl, credentials, keys, platform.deps.keys.publicKeyPem);
    expect((await partner.token()).status).toBe(200);
    const query = () => partner.gateway({ service: 'query.fundTransfer', out_trade_no: 'NO-SUCH-ORDER' });
    expect((await query()).status).toBe(400); // authenticated: NOTEXIST

    await platform.clients.admin.setPartnerStatus({ partnerId: credentials.partner_id, status: MerchantStatus.SUSPENDED });
    expect((await query()).status).toBe(401);
    expect((await partner.token()).status).toBe(401);

    await platform.clients.admin.setPartnerStatus({ partnerId: credentials.partner_id, status: MerchantStatus.ACTIVE });
    expect((await partner.token()).status).toBe(200);
    expect((await query()).status).toBe(400);
  });
});
