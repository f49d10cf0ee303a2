/**
 * DepositWorkflow durability (docs/area-c.md "Deposits and confirmations"): deposits waiting for their
 * OTP survive a worker restart; the wrong-OTP count lives in the workflow and carries over the restart (the limit
 * is reached across both workers), and a right OTP after the restart completes the deposit once. Passwords are
 * sealed on their way through Temporal: workflow history never holds one readable.
 */
import { readFileSync } from 'node:fs';
import { DEPOSIT_MESSAGES } from '../../rest-facade/merchant/contract';
import { startWorker } from '../../src/worker';
import { loggedInMerchant, newUser, tokenizeLocalCard, userBalance } from '../support/deposit-setup';
import { startTestPlatform, type TestPlatform } from '../support/platform';

describe('deposits across a worker restart', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ roles: ['api', 'facade'], env: { DEPOSIT_MAX_OTP_ATTEMPTS: '2', SANDBOX_OTP: '730519' } });
  });
  afterAll(() => platform.stop());

  it('keeps the wrong-OTP count and completes a waiting deposit after the restart', async () => {
    const bundle = { code: readFileSync(process.env.PAYMENTS_TEST_WORKFLOW_BUNDLE!, 'utf8') };
    const address = platform.config.TEMPORAL_ADDRESS!;
    const first = await startWorker(platform.deps, { address, bundle });
    let second: Awaited<ReturnType<typeof startWorker>> | undefined;
    try {
      const merchant = await loggedInMerchant(platform, 'Durable Shop');
      const user = await newUser(merchant);
      const card = await tokenizeLocalCard(platform, merchant, user.id);
      const guessed = (await merchant.action('deposit_by_local_card', { token: card, amount: 2, currency: 'USD' })).body.data;
      const waiting = (await merchant.action('deposit_by_local_card', { token: card, amount: 3, currency: 'USD' })).body.data;
      const wrong = await merchant.action('confirm_payments', { user_id: user.id, token: guessed.token, password: '999999' });
      expect(wrong.body.error).toEqual({ password: [DEPOSIT_MESSAGES.passwordIncorrect] });

      await first.shutdown();
      const states = await platform.deps.database('deposits').whereIn('reference', [guessed.reference, waiting.reference]).pluck('state');
      expect(states).toEqual(['pending', 'pending']);
      second = await startWorker(platform.deps, { address, bundle });

      // The second wrong OTP reaches the limit of 2: the first one was remembered across the restart.
      const again = await merchant.action('confirm_payments', { user_id: user.id, token: guessed.token, password: '999999' });
      expect(again.body.error).toEqual({ password: [DEPOSIT_MESSAGES.passwordIncorrect], token: [DEPOSIT_MESSAGES.cancelled] });
      // A deposit without a preorder names the settlement account in its posting: no separate lookup of it.
      const lookups = jest.spyOn(platform.deps.ledger, 'platformAccount');
      const right = await merchant.action('confirm_payments', { user_id: user.id, token: waiting.token, password: platform.config.SANDBOX_OTP });
      expect(right.status).toBe(200);
      expect(await userBalance(platform, user.id)).toBe(300n);
      const history = await platform.deps.temporal.client.workflow.getHandle(waiting.reference).result();
      expect(history).toEqual({ state: 'completed' });
      expect(lookups).not.toHaveBeenCalled();
      lookups.mockRestore();

      // Passwords travel sealed: neither the right one nor a wrong one is readable in workflow history.
      for (const reference of [guessed.reference, waiting.reference]) {
        const events = JSON.stringify(await platform.deps.temporal.client.workflow.getHandle(reference).fetchHistory());
        expect(events).toContain('confirmWithPassword');
        expect(events).not.toContain('730519');
        expect(events).not.toContain('999999');
        expect(events).not.toContain(Buffer.from('730519').toString('base64'));
        expect(events).not.toContain(Buffer.from('"730519"').toString('base64'));
      }
    } finally {
      await second?.shutdown();
      await first.shutdown().catch(() => undefined);
    }
  });
});
