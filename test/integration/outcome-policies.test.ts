/**
 * Per-merchant payment-outcome policies (docs/refunds.md "Outcome policies") against real PostgreSQL and Temporal
 * and the sandbox upstream: the decision the settlement activity takes on the merchant's policy, the refund it
 * records in the same transaction (started by the payin run after the commit, decided by the sandbox provider), the
 * webhooks the merchant receives, a replayed settlement that refunds nothing twice, and the operators' RPC and CLI.
 * The ledger balances after every test.
 */
import { createResolutionRefunds } from '../../src/activities';
import { createPayinActivities } from '../../src/flows/payin/activities';
import { policyRefundReference } from '../../src/flows/payin/resolution';
import type { RefundRow } from '../../src/flows/refund/store';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { readRpcFailure } from '../../src/rpc/errors';
import { SANDBOX_REFUND_ADDRESSES } from '../../src/sandbox/upstream-refunds';
import { runAdminCli } from '../support/admin-cli';
import { createTestMerchant, eventually, post, startPayinHarness, type PayinHarness } from '../support/payin-setup';

const orders = { next: 0 };
const nextOrder = () => `OP-${Date.now()}-${(orders.next += 1)}`;

describe('outcome policies at settlement', () => {
  let harness: PayinHarness;
  /** A merchant with a policy: underpaid refund, overpaid refund_excess, late refund, tolerance 2 %. */
  let strict: MerchantCredentials;
  /** A merchant without a policy (the default). */
  let plain: MerchantCredentials;

  beforeAll(async () => {
    harness = await startPayinHarness({ refund_decision_delay_seconds: 0.3 });
    [strict, plain] = [await createTestMerchant(harness), await createTestMerchant(harness)];
    harness.receiver.configure({ hmac_secret: strict.hmac_secret, signature_header: strict.signature_header });
    await harness.platform.clients.admin.setMerchantOutcomePolicy({
      merchantId: strict.merchant_id,
      underpaid: 'refund',
      overpaid: 'refund_excess',
      late: 'refund',
      tolerancePercent: '2',
    });
  });
  afterAll(() => harness.stop());
  afterEach(async () => {
    expect((await deps().ledger.check()).ok).toBe(true);
  });

  const deps = () => harness.platform.deps;

  async function createPayin(merchant: MerchantCredentials, amount: string): Promise<string> {
    const created = await post(harness.platform.facadeUrl, '/api/v1/payins', `{"amount": ${amount}, "out_trade_no": "${nextOrder()}"}`, { 'X-API-Key': merchant.api_key });
    expect(created.status).toBe(200);
    return created.json.data.invoice_reference as string;
  }

  /** Pays `amount` (from the sandbox payer, or `payer_address`) and waits until the payin shows it settled. */
  async function pay(invoice_reference: string, amount: string, payer_address?: string | null): Promise<void> {
    expect((await harness.sandbox.pay(invoice_reference, amount, payer_address)).status).toBe(200);
    await eventually(async () => (await deps().database('payins').where({ invoice_reference }).first())?.status === 'success');
  }

  const refundsOf = (invoice_reference: string): Promise<RefundRow[]> => deps().database<RefundRow>('refunds').where({ invoice_reference }).orderBy('created_at');
  const eventTypes = async (invoice_reference: string) =>
    (await deps().database('events').where({ subject: invoice_reference }).orderBy('seq')).map((event: { type: string }) => event.type);
  const resolutions = async (invoice_reference: string) =>
    (await deps().database('events').where({ subject: invoice_reference, type: 'payin.resolution' }).orderBy('seq')).map((event: { data: Record<string, unknown> }) => event.data);
  const webhooksOf = (invoice_reference: string) => harness.receiver.received.filter((item) => item.json?.data?.invoice_reference === invoice_reference);

  async function walletPosted(merchant: MerchantCredentials): Promise<bigint> {
    return (await deps().ledger.findAccount({ owner_type: 'merchant', owner_id: merchant.merchant_id, currency: 'USDT', kind: 'wallet' }))!.posted_units;
  }

  async function decidedRefund(refund_reference: string): Promise<RefundRow> {
    return eventually(async () => {
      const row = await deps().database<RefundRow>('refunds').where({ refund_reference }).first();
      return row && (row.status === 'succeeded' || row.status === 'failed') ? row : undefined;
    });
  }

  it('changes nothing without a policy: an underpaid payment is credited, no decision, no refund', async () => {
    const invoice_reference = await createPayin(plain, '10');
    await pay(invoice_reference, '5');
    expect(await refundsOf(invoice_reference)).toEqual([]);
    expect(await eventTypes(invoice_reference)).toEqual(['payin.created', 'payin.success']);
    const [webhook] = await harness.receiver.waitFor(() => webhooksOf(invoice_reference).length >= 1).then(() => webhooksOf(invoice_reference));
    expect(webhook!.json.data).toMatchObject({ status: 'success', amount: 5, payment_match_status: 'underpaid' });
    expect(webhook!.json.data).not.toHaveProperty('resolution');
  });

  it('credits a payment within the tolerance as a success, match status recorded, nothing refunded', async () => {
    const invoice_reference = await createPayin(strict, '10');
    const before = await walletPosted(strict);
    await pay(invoice_reference, '9.8');
    expect(await refundsOf(invoice_reference)).toEqual([]);
    expect(await walletPosted(strict)).toBe(before + 9_702_000n);
    expect(await resolutions(invoice_reference)).toEqual([expect.objectContaining({ rule: 'match', decision: 'within_tolerance', refund_units: '0', refund_reference: null })]);
    const [webhook] = await harness.receiver.waitFor(() => webhooksOf(invoice_reference).length >= 1).then(() => webhooksOf(invoice_reference));
    expect(webhook!.json).toMatchObject({ event: 'payin.success', data: { payment_match_status: 'underpaid', resolution: { decision: 'within_tolerance' } } });
  });

  it('refunds an underpaid payment beyond the tolerance whole (the fee kept), then refund.succeeded', async () => {
    const invoice_reference = await createPayin(strict, '10');
    const before = await walletPosted(strict);
    await pay(invoice_reference, '5');
    const [refund] = await refundsOf(invoice_reference);
    expect(refund).toMatchObject({ refund_reference: policyRefundReference(`${invoice_reference}:settle`), amount_units: 4_950_000n });
    expect((await decidedRefund(refund!.refund_reference)).status).toBe('succeeded');
    // Credited 4.95 (5 less the 1 % fee), all of it refunded: the wallet is where it was.
    expect(await walletPosted(strict)).toBe(before);
    expect(await eventTypes(invoice_reference)).toEqual(['payin.created', 'payin.success', 'payin.resolution', 'refund.created', 'refund.succeeded']);
    expect(await resolutions(invoice_reference)).toEqual([
      expect.objectContaining({ rule: 'underpaid', decision: 'refund_full', paid_units: '5000000', credited_units: '4950000', refund_units: '4950000', refund_reference: refund!.refund_reference }),
    ]);
    const webhooks = await harness.receiver.waitFor(() => webhooksOf(invoice_reference).length >= 2).then(() => webhooksOf(invoice_reference));
    expect(webhooks.map((item) => item.json.event)).toEqual(['payin.success', 'refund.succeeded']);
    expect(webhooks[0]!.json.data).toMatchObject({ payment_match_status: 'underpaid', resolution: { decision: 'refund_full', refund_reference: refund!.refund_reference } });
    expect(webhooks.every((item) => item.signature_valid)).toBe(true);
  });

  it('refunds the excess of an overpaid payment beyond the tolerance to the payer', async () => {
    const invoice_reference = await createPayin(strict, '10');
    const before = await walletPosted(strict);
    await pay(invoice_reference, '12');
    const [refund] = await refundsOf(invoice_reference);
    expect(refund).toMatchObject({ amount_units: 2_000_000n });
    expect((await decidedRefund(refund!.refund_reference)).status).toBe('succeeded');
    // The provider was asked to send it to the payer the upstream reported, for the payment's trx_ref.
    const [notification] = await deps().database('upstream_notifications').where({ invoice_reference, status: 'success' });
    expect(harness.sandbox.refunds.get(refund!.refund_reference)).toMatchObject({
      address: JSON.parse(notification.raw_body).payer_address,
      trx_ref: notification.trx_ref,
      amount_units: 2_000_000n,
    });
    expect(await walletPosted(strict)).toBe(before + 11_880_000n - 2_000_000n);
    expect(await resolutions(invoice_reference)).toEqual([expect.objectContaining({ rule: 'overpaid', decision: 'refund_excess', refund_units: '2000000' })]);
  });

  it('refunds a late payment whole (payin closed before it was paid)', async () => {
    const invoice_reference = await createPayin(strict, '4');
    expect((await harness.sandbox.closePayin(invoice_reference)).status).toBe(200);
    await eventually(async () => (await deps().database('payins').where({ invoice_reference }).first())?.status === 'close');
    await pay(invoice_reference, '4');
    expect(await deps().database('payins').where({ invoice_reference }).first()).toMatchObject({ late: true, payment_match_status: 'exact' });
    const [refund] = await refundsOf(invoice_reference);
    expect(refund).toMatchObject({ amount_units: 3_960_000n });
    expect((await decidedRefund(refund!.refund_reference)).status).toBe('succeeded');
    expect(await resolutions(invoice_reference)).toEqual([expect.objectContaining({ rule: 'late', decision: 'refund_full' })]);
  });

  it('refunds a second payment to a settled invoice whole under refund-excess; a replayed settlement refunds nothing twice', async () => {
    const invoice_reference = await createPayin(strict, '10');
    await pay(invoice_reference, '10');
    expect(await refundsOf(invoice_reference)).toEqual([]);
    expect((await harness.sandbox.pay(invoice_reference, '3')).status).toBe(200);
    const [refund] = await eventually(async () => {
      const rows = await refundsOf(invoice_reference);
      return rows.length > 0 ? rows : undefined;
    });
    expect(refund).toMatchObject({ amount_units: 2_970_000n });
    expect((await decidedRefund(refund!.refund_reference)).status).toBe('succeeded');
    expect((await resolutions(invoice_reference)).map((data) => [data.rule, data.decision])).toEqual([
      ['match', 'within_tolerance'],
      ['additional_payment', 'refund_full'],
    ]);
    // The activity run again for both payments (a retried local activity): same webhooks, no second refund or decision.
    const activities = createPayinActivities(deps(), createResolutionRefunds(deps()));
    const notifications = await deps().database('upstream_notifications').where({ invoice_reference, status: 'success' }).orderBy('id');
    expect(notifications).toHaveLength(2);
    for (const notification of notifications) {
      const again = await activities.settlePayin({ invoice_reference, amount_units: String(notification.amount_units), trx_ref: notification.trx_ref });
      expect(again.webhook_id).not.toBeNull();
      expect(again.refund_references ?? []).toEqual([]);
    }
    expect(await refundsOf(invoice_reference)).toHaveLength(1);
    expect(await resolutions(invoice_reference)).toHaveLength(2);
  });

  it('keeps the first decision when a payment is replayed after the policy changed: nothing refunded later', async () => {
    const merchant = await createTestMerchant(harness);
    await harness.platform.clients.admin.setMerchantOutcomePolicy({ merchantId: merchant.merchant_id, overpaid: 'credit' });
    const invoice_reference = await createPayin(merchant, '10');
    await pay(invoice_reference, '10');
    expect((await harness.sandbox.pay(invoice_reference, '3')).status).toBe(200);
    await eventually(async () => (await resolutions(invoice_reference)).length === 2);
    await harness.platform.clients.admin.setMerchantOutcomePolicy({ merchantId: merchant.merchant_id, overpaid: 'refund_excess' });
    const activities = createPayinActivities(deps(), createResolutionRefunds(deps()));
    for (const notification of await deps().database('upstream_notifications').where({ invoice_reference, status: 'success' }).orderBy('id')) {
      const again = await activities.settlePayin({ invoice_reference, amount_units: String(notification.amount_units), trx_ref: notification.trx_ref });
      expect(again.refund_references ?? []).toEqual([]);
    }
    expect(await refundsOf(invoice_reference)).toEqual([]);
    expect((await resolutions(invoice_reference)).map((data) => data.decision)).toEqual(['within_tolerance', 'credit']);
  });

  it('replays an underpaid settlement whose refund is in flight at the provider: none added, none started again', async () => {
    const invoice_reference = await createPayin(strict, '10');
    // A refund the sandbox leaves pending (decided only on its decide route).
    await pay(invoice_reference, '2', SANDBOX_REFUND_ADDRESSES.pending);
    const [refund] = await refundsOf(invoice_reference);
    // Its run recorded the provider's pending answer: from then on a replay has nothing to start. (Read before that, a
    // replay finds it held and hands it to startRefunds, which finds its run started: tested in the unit suite.)
    await eventually(async () => (await refundsOf(invoice_reference))[0]?.status === 'pending');
    const [notification] = await deps().database('upstream_notifications').where({ invoice_reference, status: 'success' });
    const again = await createPayinActivities(deps(), createResolutionRefunds(deps())).settlePayin({
      invoice_reference,
      amount_units: String(notification.amount_units),
      trx_ref: notification.trx_ref,
    });
    expect(again.refund_references).toEqual([]);
    expect(await refundsOf(invoice_reference)).toHaveLength(1);
    expect((await harness.sandbox.decideRefund(refund!.refund_reference, 'succeeded')).status).toBe(200);
    expect((await decidedRefund(refund!.refund_reference)).status).toBe('succeeded');
  });

  it('credits when the upstream reported no payer address, with decision refund_impossible_no_address', async () => {
    const invoice_reference = await createPayin(strict, '10');
    const before = await walletPosted(strict);
    await pay(invoice_reference, '5', null);
    expect(await refundsOf(invoice_reference)).toEqual([]);
    expect(await walletPosted(strict)).toBe(before + 4_950_000n);
    expect(await resolutions(invoice_reference)).toEqual([expect.objectContaining({ rule: 'underpaid', decision: 'refund_impossible_no_address', refund_units: '0' })]);
    const [webhook] = await harness.receiver.waitFor(() => webhooksOf(invoice_reference).length >= 1).then(() => webhooksOf(invoice_reference));
    expect(webhook!.json.data).toMatchObject({ resolution: { decision: 'refund_impossible_no_address' } });
  });

  it('refuses a notification whose payer_address is no TRON address, recording nothing', async () => {
    const invoice_reference = await createPayin(strict, '10');
    const answer = await harness.sandbox.pay(invoice_reference, '10', 'not-an-address');
    expect(answer.status).toBe(422);
    expect(answer.body).toContain('payer_address');
    expect(await deps().database('upstream_notifications').where({ invoice_reference })).toEqual([]);
  });

  it('refuses bad policy values over the RPC and the CLI and changes nothing; a change is audited', async () => {
    const admin = harness.platform.clients.admin;
    const before = (await admin.getMerchantOutcomePolicy({ merchantId: strict.merchant_id })).policy!;
    for (const bad of [{ underpaid: 'refund_excess' }, { overpaid: 'refund' }, { late: 'later' }, { tolerancePercent: '100.01' }, { tolerancePercent: '1.234' }, { tolerancePercent: '-1' }]) {
      const failure = await admin.setMerchantOutcomePolicy({ merchantId: strict.merchant_id, ...bad }).then(
        () => undefined,
        (error: unknown) => readRpcFailure(error),
      );
      expect(failure?.reason).toBe('VALIDATION_FAILED');
      expect(Object.keys(failure!.fields)).toEqual([Object.keys(bad)[0] === 'tolerancePercent' ? 'tolerance_percent' : Object.keys(bad)[0]]);
    }
    const unknown = await admin.getMerchantOutcomePolicy({ merchantId: 'M-none' }).then(
      () => undefined,
      (error: unknown) => readRpcFailure(error),
    );
    expect(unknown?.reason).toBe('MERCHANT_NOT_FOUND');
    expect((await admin.getMerchantOutcomePolicy({ merchantId: strict.merchant_id })).policy).toEqual(before);

    const shown = await runAdminCli(harness.platform, ['merchant', 'policy', '--merchant-id', plain.merchant_id, '--json']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual({
      policy: { merchant_id: plain.merchant_id, underpaid: 'credit', overpaid: 'credit', late: 'credit', tolerance_percent: '0', refund_fee: 'kept', stored: false, updated_at: null, updated_by: null },
    });
    const refused = await runAdminCli(harness.platform, ['merchant', 'policy', '--merchant-id', plain.merchant_id, '--overpaid', 'refund', '--json']);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toMatch(/^error: VALIDATION_FAILED: .*\(overpaid: must be one of credit, refund_excess\)$/);
    expect(await deps().database('merchant_outcome_policies').where({ merchant_id: plain.merchant_id })).toEqual([]);
    const set = await runAdminCli(harness.platform, ['merchant', 'policy', '--merchant-id', plain.merchant_id, '--overpaid', 'refund-excess', '--tolerance-percent', '0.5', '--json']);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout).policy).toMatchObject({ underpaid: 'credit', overpaid: 'refund_excess', late: 'credit', tolerance_percent: '0.5', stored: true, updated_by: expect.stringMatching(/^cred_/) });
    const audited = await deps().database('audit_records').where({ procedure: 'payments.admin.v1.AdminService/SetMerchantOutcomePolicy' }).orderBy('id');
    // This test's calls, last: six refused over the RPC, one refused from the CLI, then the CLI's change.
    expect(audited.map((record: { outcome: string }) => record.outcome).slice(-8)).toEqual([...Array(7).fill('VALIDATION_FAILED'), 'ok']);
    await deps().database('merchant_outcome_policies').where({ merchant_id: plain.merchant_id }).delete();
  }, 120_000);
});
