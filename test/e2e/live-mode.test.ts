/**
 * Live mode (PAYMENTS_MODE=live) has no sandbox: without a configured card acquirer a card or bank deposit is refused
 * with a documented error and moves nothing; the sandbox test card does not work.
 */
import { encryptedSecurityCode, loggedInMerchant, newUser, tokenizeVisaMaster } from '../support/deposit-setup';
import { startTestPlatform, type TestPlatform } from '../support/platform';

describe('live mode', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ env: { PAYMENTS_MODE: 'live' } });
  });
  afterAll(() => platform.stop());

  it('refuses a deposit with the sandbox card, and moves nothing', async () => {
    const merchant = await loggedInMerchant(platform, 'Live Shop');
    const user = await newUser(merchant);
    const visaCard = await tokenizeVisaMaster(platform, merchant, user.id);
    const deposits = Number((await platform.deps.database('deposits').count('* as n').first())!.n);
    const reply = await merchant.action('deposit_by_visa_master', { token: visaCard, amount: 1, currency: 'USD', security_code: encryptedSecurityCode(platform) });
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ success: false, code: 400, message: 'Bad Request', error: { token: ['Card and bank deposits are not available.'] } });
    expect(Number((await platform.deps.database('deposits').count('* as n').first())!.n)).toBe(deposits);
    expect((await platform.deps.ledger.check()).ok).toBe(true);
  });
});
