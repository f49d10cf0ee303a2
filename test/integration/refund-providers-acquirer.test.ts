/**
 * The acquirer port's refund on deposits made through the platform (docs/refunds.md "Providers"): a Visa/Master
 * deposit confirmed on its hosted form is authorized and then captured by the DepositWorkflow; the sandbox acquirer
 * then refunds it by the authorization id the deposit recorded, up to the captured amount, once per key, and the
 * refund-failing test card's deposit completes but its refunds fail. Real PostgreSQL, Temporal, RPC and façade;
 * `stop()` checks the ledger (which an acquirer refund alone does not touch).
 */
import type { Acquirer } from '../../src/acquirers';
import { REFUND_DECLINED_MESSAGE, SANDBOX_CARDS, type SandboxSettlements } from '../../src/sandbox/acquirer';
import { encryptedSecurityCode, formAction, loggedInMerchant, newUser, tokenizeVisaMaster } from '../support/deposit-setup';
import type { MerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';

let platform: TestPlatform;
let merchant: MerchantClient;
let payer: { id: number };

beforeAll(async () => {
  // inProcess: the sandbox acquirer's memory (captures, refunds) lives in the platform's own process.
  platform = await startTestPlatform({ inProcess: true });
  merchant = await loggedInMerchant(platform, 'Refund Mart');
  payer = await newUser(merchant, 'Payer');
});
afterAll(() => platform.stop());

const acquirer = () => platform.deps.acquirer as Acquirer & SandboxSettlements;

async function until<T>(what: string, read: () => Promise<T | undefined>, seconds = 20): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A completed Visa/Master deposit of `amount` USD on `number`: its reference and the authorization it captured. */
async function cardDeposit(number: string, amount: number): Promise<{ reference: string; authorization_id: string }> {
  const token = await tokenizeVisaMaster(platform, merchant, payer.id, number);
  const started = await merchant.action('deposit_by_visa_master', { token, amount, currency: 'USD', security_code: encryptedSecurityCode(platform) });
  expect(started.status).toBe(200);
  const action = formAction(started.body.data.html_confirm_payment)!;
  const url = action.replace(`${platform.config.PUBLIC_BASE_URL}${platform.config.MERCHANT_PREFIX}`, platform.facadeUrl);
  await (await fetch(url, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' })).arrayBuffer();
  const reference = started.body.data.reference as string;
  const row = await until('the deposit to complete', async () => {
    const deposit = await platform.deps.database('deposits').where({ reference }).first('state');
    return deposit?.state === 'completed' ? deposit : undefined;
  });
  expect(row.state).toBe('completed');
  const confirmation = await platform.deps.database('deposit_confirmations').where({ deposit_reference: reference, outcome: 'approved' }).first('authorization_id');
  const authorization_id = confirmation.authorization_id as string;
  // The workflow captures after the completion committed.
  await until('the capture', async () => (acquirer().settlements.some((entry) => entry.authorization_id === authorization_id && entry.action === 'capture') ? true : undefined));
  return { reference, authorization_id };
}

describe('refunds of deposits at the sandbox acquirer', () => {
  it('refunds a captured Visa/Master deposit by its recorded authorization, partly and then the rest, once per key, never above it', async () => {
    const { reference, authorization_id } = await cardDeposit(SANDBOX_CARDS.approved, 10);
    const refund = (amount_units: bigint, key: string) => acquirer().refund({ instrument: 'visa_master', authorization_id, amount_units, currency: 'USD', idempotency_key: key });

    // Captured: a reversal is too late.
    expect(await acquirer().reverse({ authorization_id })).toEqual({ status: 'failed', message: 'The authorization was captured: refund it instead.' });
    const first = await refund(400n, `${reference}:refund:1`);
    expect(first).toEqual({ status: 'succeeded', refund_id: expect.stringMatching(/^SBXRF/) });
    expect(await refund(400n, `${reference}:refund:1`)).toEqual(first);
    expect(await refund(601n, `${reference}:refund:2`)).toEqual({ status: 'failed', message: 'The refunds would exceed the captured amount.' });
    expect((await refund(600n, `${reference}:refund:3`)).status).toBe('succeeded');
    expect(acquirer().refunds.filter((entry) => entry.target === authorization_id).map((entry) => entry.amount_units)).toEqual([400n, 600n]);
  });

  it('completes a deposit on the refund-failing test card, and fails its refunds', async () => {
    const { reference, authorization_id } = await cardDeposit(SANDBOX_CARDS.refundFails, 3);
    expect(authorization_id).toMatch(/^SBXR[0-9A-F]{24}$/);
    const outcome = await acquirer().refund({ instrument: 'visa_master', authorization_id, amount_units: 300n, currency: 'USD', idempotency_key: `${reference}:refund:1` });
    expect(outcome).toEqual({ status: 'failed', message: REFUND_DECLINED_MESSAGE });
  });
});
