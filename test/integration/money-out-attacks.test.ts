/**
 * The money-out saga's attacker tests (docs/money-out.md "What the kernel guarantees"), on Area B refunds against real
 * PostgreSQL and Temporal and the sandbox upstream: a forged provider notification, a run told of a success straight
 * through Temporal, the same request twice, a provider that refuses for good, and a signed decision delivered twice at
 * once. The outcome is read only from a record the authenticated path wrote; money moves once; the ledger balances
 * after each.
 */
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { createMoneyOutSteps } from '../../src/flows/money-out/activities';
import { refundPort } from '../../src/flows/refund/activities';
import { decidedSignal } from '../../src/flows/refund/contract';
import { createRefund, type RefundRequest, type RefundRow } from '../../src/flows/refund/service';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { SANDBOX_REFUND_ADDRESSES } from '../../src/sandbox/upstream-refunds';
import { UpstreamRefundError } from '../../src/upstream/client';
import { createTestMerchant, decidedRefund, eventually, post, settledPayin as settledPayinOf, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';

const orders = { next: 0 };
const nextOrder = () => `MO-${Date.now()}-${(orders.next += 1)}`;
const NOTIFICATIONS = '/api/v1/upstream/notifications';

describe('the money-out saga under attack (Area B refunds)', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;

  beforeAll(async () => {
    // A long decision timeout: a pending refund is decided only by what these tests send.
    harness = await startPayinHarness({ env: { REFUND_DECISION_TIMEOUT_SECONDS: '120' }, refund_decision_delay_seconds: null });
    merchant = await createTestMerchant(harness);
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
  });
  afterAll(() => harness.stop());

  const deps = () => harness.platform.deps;
  const request = (fields: Partial<RefundRequest>): RefundRequest => ({ reason: 'attack test', address: SANDBOX_REFUND_ADDRESSES.succeeds, ...fields });
  const row = async (refund_reference: string) => (await deps().database<RefundRow>('refunds').where({ refund_reference }).first())!;
  /** What the refund did in the ledger: each hold (`<key>=<state>`) and each transaction's key, sorted. */
  const ledgerKeys = async (refund_reference: string) => {
    const like = `${refund_reference}:%`;
    const holds = (await deps().database('ledger_pending_transfers').where('idempotency_key', 'like', like)) as Array<{ idempotency_key: string; state: string }>;
    const transactions = (await deps().database('ledger_transactions').where('idempotency_key', 'like', like)) as Array<{ idempotency_key: string }>;
    return [...holds.map((hold) => `${hold.idempotency_key}=${hold.state}`), ...transactions.map((transaction) => transaction.idempotency_key)].sort();
  };

  const settledPayin = (amount: string) => settledPayinOf(harness, merchant, amount, nextOrder());

  async function walletAvailable(): Promise<bigint> {
    const wallet = await deps().ledger.findAccount({ owner_type: 'merchant', owner_id: merchant.merchant_id, currency: 'USDT', kind: 'wallet' });
    return wallet!.available_units;
  }

  async function ledgerBalances(): Promise<void> {
    expect((await deps().ledger.check()).ok).toBe(true);
  }

  /** A refund the provider answered `pending`: held, its run waiting for the decision. */
  async function pendingRefund(amount: string): Promise<RefundRow> {
    const invoice_reference = await settledPayin(amount);
    const refund = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, address: SANDBOX_REFUND_ADDRESSES.pending }));
    await eventually(async () => (await row(refund.refund_reference)).status === 'pending');
    return refund;
  }

  const notification = (refund: RefundRow, status: 'refund_succeeded' | 'refund_failed') =>
    JSON.stringify({ refund_reference: refund.refund_reference, status, amount: Number(refund.amount_units) / 1e6, currency: 'USDT', refund_trx_ref: 'a'.repeat(64) });

  it('a forged provider notification (bad signature) is refused and changes nothing', async () => {
    const refund = await pendingRefund('2');
    const before = await walletAvailable();
    const body = notification(refund, 'refund_succeeded');
    const forged = await post(harness.platform.facadeUrl, NOTIFICATIONS, body, { 'X-Upstream-Signature': hmacSha256Hex('not-the-upstream-secret', body) });
    const unsigned = await post(harness.platform.facadeUrl, NOTIFICATIONS, body);
    expect([forged.status, unsigned.status]).toEqual([401, 401]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await deps().database('refund_notifications').where({ refund_reference: refund.refund_reference })).toHaveLength(0);
    expect((await row(refund.refund_reference)).status).toBe('pending');
    expect(await ledgerKeys(refund.refund_reference)).toEqual([`${refund.refund_reference}:hold=pending`]);
    expect(await walletAvailable()).toBe(before);
    await ledgerBalances();
  });

  it('a success told straight to the run through Temporal (signal, update) decides nothing: the outcome is read from the record', async () => {
    const refund = await pendingRefund('2');
    const before = await walletAvailable();
    const handle = deps().temporal.client.workflow.getHandle(refund.refund_reference);
    await handle.signal(decidedSignal, { status: 'refund_succeeded' });
    await handle.signal('decided', { status: 'refund_succeeded', refund_trx_ref: 'f'.repeat(64), authority: 'me' });
    // No update is registered: one claiming a decision is refused by the run.
    await expect(handle.executeUpdate('decide', { args: [{ status: 'succeeded' }] })).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect((await row(refund.refund_reference)).status).toBe('pending');
    expect(await ledgerKeys(refund.refund_reference)).toEqual([`${refund.refund_reference}:hold=pending`]);
    expect(await walletAvailable()).toBe(before);
    await ledgerBalances();
    // The provider's signed decision, recorded by the upstream's door, is what decides it.
    const body = notification(refund, 'refund_failed');
    expect((await post(harness.platform.facadeUrl, NOTIFICATIONS, body, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, body) })).status).toBe(200);
    expect((await decidedRefund(deps().database, refund.refund_reference)).status).toBe('failed');
    expect(await walletAvailable()).toBe(before + refund.amount_units);
    await ledgerBalances();
  });

  it('the same refund key twice, at once, moves money once; its deciding step run twice at once posts once', async () => {
    const invoice_reference = await settledPayin('3');
    const before = await walletAvailable();
    const key = `attack-${Date.now()}`;
    const [first, second] = await Promise.all([
      createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 1_000_000n }), key),
      createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 1_000_000n }), key),
    ]);
    expect(second.refund_reference).toBe(first.refund_reference);
    expect(await deps().database('refunds').where({ invoice_reference })).toHaveLength(1);
    // The run and two more deciding steps of the saga at once (a retried activity, an operator's restart).
    const steps = createMoneyOutSteps(deps(), refundPort(deps(), deps().upstream));
    const answers = await Promise.all([steps.request(first.refund_reference), steps.request(first.refund_reference)]);
    expect(answers.map((answer) => answer.status)).toEqual(['succeeded', 'succeeded']);
    await decidedRefund(deps().database, first.refund_reference);
    expect(await ledgerKeys(first.refund_reference)).toEqual([`${first.refund_reference}:hold=posted`, `${first.refund_reference}:post`]);
    expect(await deps().database('events').where({ subject: invoice_reference, type: 'refund.succeeded' })).toHaveLength(1);
    expect(await walletAvailable()).toBe(before - 1_000_000n);
    await ledgerBalances();
  });

  it('a provider failure voids the hold: answered failed, or refused for good', async () => {
    const invoice_reference = await settledPayin('4');
    const before = await walletAvailable();
    const failed = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 1_000_000n, address: SANDBOX_REFUND_ADDRESSES.fails }));
    expect(await decidedRefund(deps().database, failed.refund_reference)).toMatchObject({ status: 'failed' });
    expect(await ledgerKeys(failed.refund_reference)).toEqual([`${failed.refund_reference}:hold=voided`]);
    expect(await walletAvailable()).toBe(before);
    // A provider that refuses the request for good (a 4xx): nothing was sent, the saga voids the hold.
    const refused = await pendingRefund('1');
    const held = await walletAvailable();
    await deps().temporal.client.workflow.getHandle(refused.refund_reference).terminate('test: decided by the refusing provider below');
    const refusing = { refund: async () => Promise.reject(new UpstreamRefundError('refused', 'HTTP 422', 422)) };
    const step = await createMoneyOutSteps(deps(), refundPort(deps(), refusing)).request(refused.refund_reference);
    expect(step.status).toBe('failed');
    expect(await row(refused.refund_reference)).toMatchObject({ status: 'failed', failure_reason: 'refused by the provider' });
    expect(await ledgerKeys(refused.refund_reference)).toEqual([`${refused.refund_reference}:hold=voided`]);
    expect(await walletAvailable()).toBe(held + refused.amount_units);
    await ledgerBalances();
  });

  it('a late signed decision delivered twice at once is recorded and applied once', async () => {
    const refund = await pendingRefund('2');
    const before = await walletAvailable();
    const body = notification(refund, 'refund_succeeded');
    const signature = hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, body);
    const answers = await Promise.all([post(harness.platform.facadeUrl, NOTIFICATIONS, body, { 'X-Upstream-Signature': signature }), post(harness.platform.facadeUrl, NOTIFICATIONS, body, { 'X-Upstream-Signature': signature })]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect((await decidedRefund(deps().database, refund.refund_reference)).status).toBe('succeeded');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await deps().database('refund_notifications').where({ refund_reference: refund.refund_reference })).toHaveLength(1);
    expect(await deps().database('events').where({ subject: refund.invoice_reference, type: 'refund.succeeded' })).toHaveLength(1);
    expect(await ledgerKeys(refund.refund_reference)).toEqual([`${refund.refund_reference}:hold=posted`, `${refund.refund_reference}:post`]);
    expect(await walletAvailable()).toBe(before);
    await ledgerBalances();
  });
});
