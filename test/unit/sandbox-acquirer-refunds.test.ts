/**
 * The acquirer port's reversal and refund as the sandbox acquirer implements them (src/sandbox/acquirer.ts,
 * docs/refunds.md "Providers"): reverse before capture, refund after it up to what was captured, the same key
 * answering the first outcome and refunding once, the card whose refunds fail, `unsupported` for bank accounts.
 * test/integration/refund-providers-acquirer.test.ts drives the same port with deposits made through the platform.
 */
import type { Acquirer, AcquirerRefundRequest } from '../../src/acquirers';
import { BANK_ACCOUNT_REFUND_MESSAGE, createSandboxAcquirer, REFUND_DECLINED_MESSAGE, SANDBOX_CARDS, type SandboxSettlements } from '../../src/sandbox/acquirer';

type Sandbox = Acquirer & SandboxSettlements;

let sandbox: Sandbox;
let counter = 0;

beforeEach(() => {
  sandbox = createSandboxAcquirer({ SANDBOX_OTP: '123456' });
});

/** An approved authorization of `amount_units` USD on `card`, captured unless told otherwise. */
async function authorized(amount_units: bigint, options: { card?: string; capture?: boolean } = {}): Promise<string> {
  counter += 1;
  const authorization = await sandbox.authorize({ idempotency_key: `DEP-${counter}-${Date.now()}`, card_number: options.card ?? SANDBOX_CARDS.approved, amount_units, currency: 'USD' });
  expect(authorization.approved).toBe(true);
  if (options.capture ?? true) await sandbox.capture({ authorization_id: authorization.authorization_id });
  return authorization.authorization_id;
}

const card = (authorization_id: string, amount_units: bigint, idempotency_key: string, currency = 'USD'): AcquirerRefundRequest => ({
  instrument: 'visa_master',
  authorization_id,
  amount_units,
  idempotency_key,
  currency,
});

describe('reverse (before capture)', () => {
  it('releases an authorization that was not captured, and answers a repeat alike', async () => {
    const id = await authorized(1_000n, { capture: false });
    expect(await sandbox.reverse({ authorization_id: id })).toEqual({ status: 'reversed' });
    expect(await sandbox.reverse({ authorization_id: id })).toEqual({ status: 'reversed' });
    expect(sandbox.settlements.filter((entry) => entry.authorization_id === id)).toEqual([{ authorization_id: id, action: 'reverse' }]);
    // Nothing was captured, so nothing can be refunded.
    expect(await sandbox.refund(card(id, 1_000n, 'RFD-after-reversal'))).toEqual({ status: 'failed', message: 'The authorization was reversed: nothing was captured.' });
  });

  it('fails for a captured authorization (refund it instead) and for an id the acquirer never gave', async () => {
    const id = await authorized(1_000n);
    expect(await sandbox.reverse({ authorization_id: id })).toEqual({ status: 'failed', message: 'The authorization was captured: refund it instead.' });
    expect(await sandbox.reverse({ authorization_id: 'AUTH-NOT-OURS' })).toEqual({ status: 'failed', message: 'Unknown authorization.' });
  });
});

describe('refund (after capture)', () => {
  it('refunds all or part of the captured amount, several times, and never above it', async () => {
    const id = await authorized(1_000n);
    const first = await sandbox.refund(card(id, 300n, 'RFD-A'));
    expect(first).toEqual({ status: 'succeeded', refund_id: expect.stringMatching(/^SBXRF[0-9A-F]{24}$/) });
    expect(await sandbox.refund(card(id, 701n, 'RFD-B'))).toEqual({ status: 'failed', message: 'The refunds would exceed the captured amount.' });
    const rest = await sandbox.refund(card(id, 700n, 'RFD-C'));
    expect(rest.status).toBe('succeeded');
    expect(await sandbox.refund(card(id, 1n, 'RFD-D'))).toEqual({ status: 'failed', message: 'The refunds would exceed the captured amount.' });
    expect(sandbox.refunds.filter((entry) => entry.target === id).map((entry) => entry.amount_units)).toEqual([300n, 700n]);
  });

  it('answers a repeat of the same key with the first outcome and refunds once', async () => {
    const id = await authorized(1_000n);
    const first = await sandbox.refund(card(id, 600n, 'RFD-SAME'));
    const repeats = await Promise.all([1, 2, 3].map(() => sandbox.refund(card(id, 600n, 'RFD-SAME'))));
    expect(repeats).toEqual([first, first, first]);
    expect(sandbox.refunds.filter((entry) => entry.target === id)).toHaveLength(1);
    // Refunded once: 400 are still refundable, not 1,000 − 4 × 600.
    expect((await sandbox.refund(card(id, 400n, 'RFD-REST'))).status).toBe('succeeded');
  });

  it('refuses the key with other parameters, leaving the first refund as it was', async () => {
    const id = await authorized(1_000n);
    const first = await sandbox.refund(card(id, 100n, 'RFD-KEY'));
    expect(await sandbox.refund(card(id, 900n, 'RFD-KEY'))).toEqual({ status: 'failed', message: 'The idempotency key was used with other parameters.' });
    expect(await sandbox.refund(card(id, 100n, 'RFD-KEY'))).toEqual(first);
    expect(sandbox.refunds.filter((entry) => entry.target === id)).toHaveLength(1);
  });

  it('fails before capture (reverse instead), in another currency, and for a zero amount', async () => {
    const pending = await authorized(1_000n, { capture: false });
    expect(await sandbox.refund(card(pending, 100n, 'RFD-EARLY'))).toEqual({ status: 'failed', message: 'The authorization was not captured: reverse it instead.' });
    const captured = await authorized(1_000n);
    expect(await sandbox.refund(card(captured, 100n, 'RFD-KHR', 'KHR'))).toEqual({ status: 'failed', message: 'The refund is not in the currency captured.' });
    expect(await sandbox.refund(card(captured, 0n, 'RFD-ZERO'))).toEqual({ status: 'failed', message: 'The refund amount must be positive.' });
    expect(await sandbox.refund(card('AUTH-NOT-OURS', 100n, 'RFD-UNKNOWN'))).toEqual({ status: 'failed', message: 'Unknown authorization.' });
  });

  it('fails every refund of the refund-failing test card, though the card is approved and captured', async () => {
    const id = await authorized(1_000n, { card: SANDBOX_CARDS.refundFails });
    expect(await sandbox.refund(card(id, 1_000n, 'RFD-DECLINED'))).toEqual({ status: 'failed', message: REFUND_DECLINED_MESSAGE });
    expect(await sandbox.refund(card(id, 1_000n, 'RFD-DECLINED'))).toEqual({ status: 'failed', message: REFUND_DECLINED_MESSAGE });
    // Another process's sandbox (a second worker, a restart) decides alike: the card is marked in the id.
    const elsewhere = createSandboxAcquirer({ SANDBOX_OTP: '123456' });
    expect(await elsewhere.refund(card(id, 10n, 'RFD-ELSEWHERE'))).toEqual({ status: 'failed', message: REFUND_DECLINED_MESSAGE });
    expect(sandbox.refunds.filter((entry) => entry.target === id)).toEqual([]);
  });

  it('answers a bank-account deposit `unsupported`, and refunds a local-card deposit by its reference', async () => {
    const bank = { instrument: 'bank_account', deposit_reference: 'DEP-BANK', amount_units: 500n, currency: 'USD', idempotency_key: 'RFD-BANK' } as const;
    expect(await sandbox.refund(bank)).toEqual({ status: 'unsupported', message: BANK_ACCOUNT_REFUND_MESSAGE });
    const local = { instrument: 'local_card', deposit_reference: 'DEP-LOCAL', amount_units: 500n, currency: 'USD', idempotency_key: 'RFD-LOCAL' } as const;
    const refunded = await sandbox.refund(local);
    expect(refunded.status).toBe('succeeded');
    expect(await sandbox.refund(local)).toEqual(refunded);
    expect(sandbox.refunds.filter((entry) => entry.instrument !== 'visa_master')).toEqual([
      { refund_id: (refunded as { refund_id: string }).refund_id, idempotency_key: 'RFD-LOCAL', instrument: 'local_card', target: 'DEP-LOCAL', amount_units: 500n, currency: 'USD' },
    ]);
  });
});
