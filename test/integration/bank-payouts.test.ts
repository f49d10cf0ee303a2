/**
 * Area C bank payouts (docs/payouts.md "Bank payouts") against real PostgreSQL and Temporal and the sandbox bank
 * rails: `payout_to_bank` from a user's wallet to one of its verified tokenized bank accounts, signed and idempotent;
 * an unverified or another merchant's account refused with nothing held; `payout_status`; the ledger after each.
 */
import { NO_PAYOUT_SETTINGS, setPayoutSettings, type PayoutRow } from '../../src/flows/payout/store';
import { runAdminCli } from '../support/admin-cli';
import { SANDBOX_BANK_FAILURE_MESSAGE, type SandboxBankRails } from '../../src/sandbox/bank-rails';
import { activateBankAccount, loggedInMerchant, newUser, tokenizeBankAccount, userBalance } from '../support/deposit-setup';
import type { MerchantClient } from '../support/merchant-client';
import { eventually } from '../support/payin-setup';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { fundUser } from '../support/wallets';

let platform: TestPlatform;
let merchant: MerchantClient;
let other: MerchantClient;

beforeAll(async () => {
  platform = await startTestPlatform({ inProcess: true });
  merchant = await loggedInMerchant(platform, 'Payout Mart');
  other = await loggedInMerchant(platform, 'Other Payout Mart');
});
afterAll(() => platform.stop());

const db = () => platform.deps.database;
const decided = (payout_reference: string) =>
  eventually(async () => {
    const row = await db()<PayoutRow>('payouts').where({ payout_reference }).first();
    return row && (row.status === 'succeeded' || row.status === 'failed') ? row : undefined;
  });
const ledgerBalances = async () => expect((await platform.deps.ledger.check()).ok).toBe(true);

/** A user of `client` with `units` USD cents and a bank account (verified unless told). */
async function userWithAccount(client: MerchantClient, units: bigint, verified = true) {
  const user = await newUser(client, 'Payee');
  await fundUser(platform, user.id, units);
  const token = await tokenizeBankAccount(platform, client, user.id);
  if (verified) await activateBankAccount(platform, token);
  return { user, token };
}

describe('payout_to_bank', () => {
  it('pays a verified bank account from the wallet, fee of its bank charged; the same signed body answers the first payout', async () => {
    const { user, token } = await userWithAccount(merchant, 10_000n);
    const body = { user_id: user.id, token, amount: 40, currency: 'USD', request_id: `bank-${Date.now()}` };
    const first = await merchant.action('payout_to_bank', body);
    expect(first.status).toBe(200);
    // ACLEDA's fee_payout (bank 2): 0.5 USD.
    expect(first.body.data).toMatchObject({ status: 'held', amount: 40, fee: 0.5, currency: 'USD' });
    const again = await merchant.action('payout_to_bank', body);
    expect(again.body.data.payout_reference).toBe(first.body.data.payout_reference);
    const payout = await decided(first.body.data.payout_reference);
    expect(payout).toMatchObject({ status: 'succeeded', kind: 'bank', user_id: String(user.id) });
    expect((platform.deps.bankRails as SandboxBankRails).sent.size).toBeGreaterThan(0);
    expect(await userBalance(platform, user.id)).toBe(10_000n - 4_000n - 50n);
    const status = await merchant.action('payout_status', { payout_reference: payout.payout_reference });
    expect(status.body.data).toMatchObject({ payout_reference: payout.payout_reference, status: 'succeeded' });
    // Another merchant does not see it.
    const theirs = await other.action('payout_status', { payout_reference: payout.payout_reference });
    expect(theirs.status).toBe(400);
    await ledgerBalances();
  });

  it('refuses an unverified account, another merchant\'s account and more than the wallet holds, with nothing held', async () => {
    const unverified = await userWithAccount(merchant, 10_000n, false);
    const refused = await merchant.action('payout_to_bank', { user_id: unverified.user.id, token: unverified.token, amount: 1, currency: 'USD' });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toEqual({ token: ['The bank account is not activated yet.'] });
    const foreign = await userWithAccount(other, 10_000n);
    const stolen = await merchant.action('payout_to_bank', { user_id: foreign.user.id, token: foreign.token, amount: 1, currency: 'USD' });
    expect(stolen.status).toBe(400);
    expect(Object.keys(stolen.body.error)).toEqual(['token']);
    const rich = await userWithAccount(merchant, 1_000n);
    const short = await merchant.action('payout_to_bank', { user_id: rich.user.id, token: rich.token, amount: 10, currency: 'USD' });
    expect(short.status).toBe(400);
    expect(short.body.error).toEqual({ amount: ['The wallet balance is insufficient for this payout and its fee.'] });
    for (const user of [unverified.user, foreign.user, rich.user]) expect(await db()('payouts').where({ user_id: String(user.id) })).toHaveLength(0);
    expect(await userBalance(platform, unverified.user.id)).toBe(10_000n);
    expect(await userBalance(platform, foreign.user.id)).toBe(10_000n);
    await ledgerBalances();
  });

  it('a bank that rejects the transfer voids the hold', async () => {
    const { user, token } = await userWithAccount(merchant, 10_000n);
    const answer = await merchant.action('payout_to_bank', { user_id: user.id, token, amount: 13.13, currency: 'USD' });
    expect(answer.status).toBe(200);
    const payout = await decided(answer.body.data.payout_reference);
    expect(payout).toMatchObject({ status: 'failed', failure_reason: SANDBOX_BANK_FAILURE_MESSAGE });
    expect(await userBalance(platform, user.id)).toBe(10_000n);
    await ledgerBalances();
  });
});

describe("the merchant's USD payout limits (docs/payouts.md \"Limits\")", () => {
  it('refuses below the minimum, above the per-payout and the daily limits, with nothing held; USDT limits are not USD ones', async () => {
    const limited = await loggedInMerchant(platform, 'Limited Payout Mart');
    const merchant_id = limited.options.merchantId;
    // USDT limits (its crypto payouts') that would refuse every payout below: they do not apply to USD bank payouts.
    await setPayoutSettings(db(), merchant_id, { ...NO_PAYOUT_SETTINGS, min_units: 1_000_000_000n }, 'USDT');
    const set = await runAdminCli(platform, ['merchant', 'payout-limits', '--merchant-id', merchant_id, '--currency', 'USD', '--min', '2', '--per-payout-max', '50', '--daily-max', '60', '--json']);
    expect(set).toMatchObject({ code: 0, json: { merchant_id, currency: 'USD', min: '2.00', per_payout_max: '50.00', daily_max: '60.00', approval_threshold: null } });
    const { user, token } = await userWithAccount(limited, 20_000n);
    const refusal = async (amount: number) => {
      const answer = await limited.action('payout_to_bank', { user_id: user.id, token, amount, currency: 'USD' });
      expect(answer.status).toBe(400);
      return answer.body.error;
    };
    expect(await refusal(1)).toEqual({ amount: ['The amount is below the minimum payout.'] });
    expect(await refusal(51)).toEqual({ amount: ['The amount is above the largest payout allowed.'] });
    const first = await limited.action('payout_to_bank', { user_id: user.id, token, amount: 40, currency: 'USD' });
    expect(first.status).toBe(200);
    expect((await decided(first.body.data.payout_reference)).status).toBe('succeeded');
    expect(await refusal(25)).toEqual({ amount: ["The amount would take today's payouts above the daily payout limit."] });
    expect(await db()('payouts').where({ user_id: String(user.id) })).toHaveLength(1);
    expect(await userBalance(platform, user.id)).toBe(20_000n - 4_000n - 50n);
    await ledgerBalances();
  });

  it('above the USD approval threshold the payout waits, held, until an operator approves it', async () => {
    const limited = await loggedInMerchant(platform, 'Approving Payout Mart');
    await setPayoutSettings(db(), limited.options.merchantId, { ...NO_PAYOUT_SETTINGS, approval_threshold_units: 3_000n }, 'USD');
    const { user, token } = await userWithAccount(limited, 10_000n);
    const small = await limited.action('payout_to_bank', { user_id: user.id, token, amount: 30, currency: 'USD' });
    expect(small.body.data).toMatchObject({ status: 'held' });
    const large = await limited.action('payout_to_bank', { user_id: user.id, token, amount: 31, currency: 'USD' });
    expect(large.status).toBe(200);
    expect(large.body.data).toMatchObject({ status: 'awaiting_approval', amount: 31 });
    const reference = large.body.data.payout_reference as string;
    // Held meanwhile: the user's wallet cannot spend it, and the bank rails never saw it.
    await decided(small.body.data.payout_reference);
    expect(await userBalance(platform, user.id)).toBe(10_000n - 3_000n - 50n);
    const sentToBank = () => [...(platform.deps.bankRails as SandboxBankRails).sent.values()].some((sent) => sent.payout_reference === reference);
    expect(sentToBank()).toBe(false);
    const status = await limited.action('payout_status', { payout_reference: reference });
    expect(status.body.data).toMatchObject({ status: 'awaiting_approval' });
    await platform.clients.payout.decidePayoutApproval({ payoutReference: reference, decision: 'approve', note: 'called the merchant' });
    expect((await decided(reference)).status).toBe('succeeded');
    expect(sentToBank()).toBe(true);
    expect(await userBalance(platform, user.id)).toBe(10_000n - 6_100n - 100n);
    await ledgerBalances();
  });
});
