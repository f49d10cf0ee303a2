/**
 * The payin fee on refunds (docs/refunds.md "What can be refunded (fees)"), per merchant (`refund_fee` of its outcome
 * policy), against real PostgreSQL and Temporal and the sandbox upstream: `kept` (default) refunds at most what was
 * credited, all from the wallet; `returned` refunds up to what was paid, the fee's share held on fee_revenue
 * (`<ref>:hold-fee`) and posted or voided with the wallet's hold; the setting in force at creation stays the refund's;
 * policy refunds follow it; bad values are refused over the RPC and the CLI. The ledger balances after every test.
 */
import { policyRefundReference } from '../../src/flows/payin/resolution';
import { createRefund, type RefundRequest, type RefundRow } from '../../src/flows/refund/service';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { readRpcFailure } from '../../src/rpc/errors';
import { SANDBOX_REFUND_ADDRESSES } from '../../src/sandbox/upstream-refunds';
import { runAdminCli } from '../support/admin-cli';
import { createTestMerchant, decidedRefund, domainRefusal, eventually, settledPayin as settledPayinOf, startPayinHarness, type PayinHarness } from '../support/payin-setup';

const orders = { next: 0 };
const nextOrder = () => `RFEE-${Date.now()}-${(orders.next += 1)}`;

describe('the payin fee on refunds', () => {
  let harness: PayinHarness;
  /** No policy: the fee is kept. */
  let kept: MerchantCredentials;
  /** refund_fee returned (nothing else set). */
  let returned: MerchantCredentials;

  beforeAll(async () => {
    harness = await startPayinHarness({ env: { REFUND_DECISION_TIMEOUT_SECONDS: '3' }, refund_decision_delay_seconds: 0.3 });
    [kept, returned] = [await createTestMerchant(harness), await createTestMerchant(harness)];
    await harness.platform.clients.admin.setMerchantOutcomePolicy({ merchantId: returned.merchant_id, refundFee: 'returned' });
    // Its webhooks accepted (a merchant's webhooks are delivered in order: a refused one holds the next back).
    harness.receiver.configure({ hmac_secret: returned.hmac_secret, signature_header: returned.signature_header });
  });
  afterAll(() => harness.stop());
  afterEach(async () => {
    expect((await deps().ledger.check()).ok).toBe(true);
  });

  const deps = () => harness.platform.deps;

  /** A payin of `amount` USDT of `merchant`, paid in full through the sandbox and settled (1 % fee). */
  const settledPayin = (merchant: MerchantCredentials, amount: string, paid = amount) => settledPayinOf(harness, merchant, amount, nextOrder(), paid);

  const wallet = async (merchant: MerchantCredentials) =>
    (await deps().ledger.findAccount({ owner_type: 'merchant', owner_id: merchant.merchant_id, currency: 'USDT', kind: 'wallet' }))!;
  const feeRevenue = () => deps().ledger.platformAccount('fee_revenue', 'USDT');
  /** Available units of the merchant's wallet and of fee_revenue. */
  const balances = async (merchant: MerchantCredentials) => ({ wallet: (await wallet(merchant)).available_units, revenue: (await feeRevenue()).available_units });

  const decided = (refund_reference: string) => decidedRefund(deps().database, refund_reference);

  const refusal = domainRefusal;

  const ledgerKeys = async (refund_reference: string) =>
    (await deps().database('ledger_transactions').where('idempotency_key', 'like', `${refund_reference}:%`).orderBy('idempotency_key')).map(
      (row: { idempotency_key: string }) => row.idempotency_key,
    );
  const holdKeys = async (refund_reference: string) =>
    (await deps().database('ledger_pending_transfers').where('idempotency_key', 'like', `${refund_reference}:%`).orderBy('idempotency_key')).map(
      (row: { idempotency_key: string }) => row.idempotency_key,
    );

  const request = (fields: Partial<RefundRequest>): RefundRequest => ({ reason: 'the customer asked', address: SANDBOX_REFUND_ADDRESSES.succeeds, ...fields });

  it('keeps the fee by default: at most what was credited, all from the wallet, one hold', async () => {
    const invoice_reference = await settledPayin(kept, '10');
    const before = await balances(kept);
    const refund = await createRefund(deps(), kept.merchant_id, request({ invoice_reference }));
    expect(refund).toMatchObject({ amount_units: 9_900_000n, refund_fee: 'kept', fee_units: 0n, fee_pending_transfer_id: null });
    expect((await decided(refund.refund_reference)).status).toBe('succeeded');
    expect(await balances(kept)).toEqual({ wallet: before.wallet - 9_900_000n, revenue: before.revenue });
    expect(await ledgerKeys(refund.refund_reference)).toEqual([`${refund.refund_reference}:post`]);
  });

  it('returns the fee under returned: a full refund of 10 USDT pays 10, the wallet −9.90, fee_revenue −0.10', async () => {
    const invoice_reference = await settledPayin(returned, '10');
    const before = await balances(returned);
    const refund = await createRefund(deps(), returned.merchant_id, request({ invoice_reference }));
    expect(refund).toMatchObject({ amount_units: 10_000_000n, refund_fee: 'returned', fee_units: 100_000n, fee_pending_transfer_id: expect.any(String) });
    // Held: each part on its own account.
    expect(await balances(returned)).toEqual({ wallet: before.wallet - 9_900_000n, revenue: before.revenue - 100_000n });
    expect(await holdKeys(refund.refund_reference)).toEqual([`${refund.refund_reference}:hold`, `${refund.refund_reference}:hold-fee`]);
    expect((await decided(refund.refund_reference)).status).toBe('succeeded');
    expect(await balances(returned)).toEqual({ wallet: before.wallet - 9_900_000n, revenue: before.revenue - 100_000n });
    expect(await ledgerKeys(refund.refund_reference)).toEqual([`${refund.refund_reference}:post`, `${refund.refund_reference}:post-fee`]);
    const [webhook] = await harness.receiver.waitFor(() => harness.receiver.received.some((item) => item.json?.data?.refund_reference === refund.refund_reference)).then(() =>
      harness.receiver.received.filter((item) => item.json?.data?.refund_reference === refund.refund_reference),
    );
    expect(webhook!.json).toMatchObject({ event: 'refund.succeeded', data: { amount: 10, status: 'succeeded' } });
    expect((await refusal(createRefund(deps(), returned.merchant_id, request({ invoice_reference })))).reason).toBe('REFUND_AMOUNT_EXCEEDS_REFUNDABLE');
  });

  it('adds partial refunds up exactly: the fee shares sum to the fee, never beyond what was paid', async () => {
    const invoice_reference = await settledPayin(returned, '10');
    const before = await balances(returned);
    const parts = [3_333_333n, 3_333_333n];
    const refunds: RefundRow[] = [];
    for (const amount_units of parts) refunds.push(await createRefund(deps(), returned.merchant_id, request({ invoice_reference, amount_units })));
    expect(refunds.map((refund) => refund.fee_units)).toEqual([33_333n, 33_333n]);
    // More than what is left of what was paid (3.333334): refused, nothing held.
    expect((await refusal(createRefund(deps(), returned.merchant_id, request({ invoice_reference, amount_units: 3_333_335n })))).reason).toBe('REFUND_AMOUNT_EXCEEDS_REFUNDABLE');
    const last = await createRefund(deps(), returned.merchant_id, request({ invoice_reference }));
    expect(last).toMatchObject({ amount_units: 3_333_334n, fee_units: 33_334n });
    for (const refund of [...refunds, last]) expect((await decided(refund.refund_reference)).status).toBe('succeeded');
    expect(await balances(returned)).toEqual({ wallet: before.wallet - 9_900_000n, revenue: before.revenue - 100_000n });
    expect((await refusal(createRefund(deps(), returned.merchant_id, request({ invoice_reference, amount_units: 1n })))).reason).toBe('REFUND_AMOUNT_EXCEEDS_REFUNDABLE');
  });

  it('voids both holds when the provider fails the refund', async () => {
    const invoice_reference = await settledPayin(returned, '3');
    const before = await balances(returned);
    const refund = await createRefund(deps(), returned.merchant_id, request({ invoice_reference, address: SANDBOX_REFUND_ADDRESSES.fails }));
    expect(refund).toMatchObject({ amount_units: 3_000_000n, fee_units: 30_000n });
    expect((await decided(refund.refund_reference)).status).toBe('failed');
    expect(await balances(returned)).toEqual(before);
    expect(await ledgerKeys(refund.refund_reference)).toEqual([]);
    const holds = await deps().database('ledger_pending_transfers').where('idempotency_key', 'like', `${refund.refund_reference}:%`).orderBy('idempotency_key');
    expect(holds.map((hold: { idempotency_key: string; state: string }) => [hold.idempotency_key, hold.state])).toEqual([
      [`${refund.refund_reference}:hold`, 'voided'],
      [`${refund.refund_reference}:hold-fee`, 'voided'],
    ]);
  });

  it('keeps the setting a held refund was created with when the policy changes meanwhile', async () => {
    const invoice_reference = await settledPayin(returned, '2');
    const before = await balances(returned);
    const refund = await createRefund(deps(), returned.merchant_id, request({ invoice_reference, address: SANDBOX_REFUND_ADDRESSES.pending }));
    await eventually(async () => (await deps().database<RefundRow>('refunds').where({ refund_reference: refund.refund_reference }).first())?.status === 'pending');
    await harness.platform.clients.admin.setMerchantOutcomePolicy({ merchantId: returned.merchant_id, refundFee: 'kept' });
    try {
      expect((await harness.sandbox.decideRefund(refund.refund_reference, 'succeeded')).status).toBe(200);
      expect(await decided(refund.refund_reference)).toMatchObject({ status: 'succeeded', refund_fee: 'returned', amount_units: 2_000_000n, fee_units: 20_000n });
      expect(await balances(returned)).toEqual({ wallet: before.wallet - 1_980_000n, revenue: before.revenue - 20_000n });
      expect(await ledgerKeys(refund.refund_reference)).toEqual([`${refund.refund_reference}:post`, `${refund.refund_reference}:post-fee`]);
    } finally {
      await harness.platform.clients.admin.setMerchantOutcomePolicy({ merchantId: returned.merchant_id, refundFee: 'returned' });
    }
  });

  it('returns the fee on a policy refund too: an underpaid payment refunded whole, as paid', async () => {
    await harness.platform.clients.admin.setMerchantOutcomePolicy({ merchantId: returned.merchant_id, underpaid: 'refund' });
    try {
      const before = await balances(returned);
      const invoice_reference = await settledPayin(returned, '10', '5');
      const refund = await eventually(async () => (await deps().database<RefundRow>('refunds').where({ invoice_reference }))[0]);
      expect(refund).toMatchObject({ refund_reference: policyRefundReference(`${invoice_reference}:settle`), amount_units: 5_000_000n, refund_fee: 'returned', fee_units: 50_000n });
      expect((await decided(refund.refund_reference)).status).toBe('succeeded');
      // Credited 4.95 and took 0.05 of fee: both given back, the payer got the 5 paid.
      expect(await balances(returned)).toEqual(before);
    } finally {
      await harness.platform.clients.admin.setMerchantOutcomePolicy({ merchantId: returned.merchant_id, underpaid: 'credit' });
    }
  });

  it('refuses a bad refund_fee over the RPC and the CLI, changing nothing; shows the setting in JSON', async () => {
    const admin = harness.platform.clients.admin;
    const before = (await admin.getMerchantOutcomePolicy({ merchantId: returned.merchant_id })).policy!;
    expect(before.refundFee).toBe('returned');
    for (const bad of ['yes', 'RETURNED', '']) {
      const failure = await admin.setMerchantOutcomePolicy({ merchantId: returned.merchant_id, refundFee: bad }).then(
        () => undefined,
        (error: unknown) => readRpcFailure(error),
      );
      expect(failure?.reason).toBe('VALIDATION_FAILED');
      expect(Object.keys(failure!.fields)).toEqual(['refund_fee']);
    }
    expect((await admin.getMerchantOutcomePolicy({ merchantId: returned.merchant_id })).policy).toEqual(before);

    const refused = await runAdminCli(harness.platform, ['merchant', 'policy', '--merchant-id', kept.merchant_id, '--refund-fee', 'sometimes', '--json']);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toMatch(/^error: VALIDATION_FAILED: .*\(refund_fee: must be one of kept, returned\)$/);
    expect(await deps().database('merchant_outcome_policies').where({ merchant_id: kept.merchant_id })).toEqual([]);
    const set = await runAdminCli(harness.platform, ['merchant', 'policy', '--merchant-id', kept.merchant_id, '--refund-fee', 'returned', '--json']);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout).policy).toMatchObject({ underpaid: 'credit', overpaid: 'credit', late: 'credit', tolerance_percent: '0', refund_fee: 'returned', stored: true });
    const shown = await runAdminCli(harness.platform, ['merchant', 'policy', '--merchant-id', kept.merchant_id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('returned');
    await deps().database('merchant_outcome_policies').where({ merchant_id: kept.merchant_id }).delete();
  }, 120_000);
});
