/**
 * Refunds of Area B payins against real PostgreSQL and Temporal and the sandbox upstream (docs/refunds.md): the
 * RefundWorkflow with its real activities, the provider's answers by test address, the signed late decision through
 * the platform's own notification route, and the ledger after each (CheckLedger).
 */
import { WorkflowIdReusePolicy } from '@temporalio/client';
import { createReconciliationRepairs } from '../../src/activities';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { reconcile } from '../../src/flows/reconciliation/activities';
import { decidedSignal } from '../../src/flows/refund/contract';
import { createRefund, newRefundReference, startRefundWorkflow, type RefundRequest, type RefundRow } from '../../src/flows/refund/service';
import { insertRefund } from '../../src/flows/refund/store';
import { refundWorkflow } from '../../workflows/refund';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { SANDBOX_REFUND_ADDRESSES } from '../../src/sandbox/upstream-refunds';
import { runAdminCli } from '../support/admin-cli';
import { createTestMerchant, decidedRefund, domainRefusal, eventually, post, settledPayin as settledPayinOf, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';


const orders = { next: 0 };
const nextOrder = () => `RF-${Date.now()}-${(orders.next += 1)}`;

describe('refunds of settled payins', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;

  beforeAll(async () => {
    harness = await startPayinHarness({ env: { REFUND_DECISION_TIMEOUT_SECONDS: '3' }, refund_decision_delay_seconds: 0.3 });
    merchant = await createTestMerchant(harness);
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
  });
  afterAll(() => harness.stop());

  const deps = () => harness.platform.deps;

  /** A payin of `amount` USDT paid in full through the sandbox and settled (1% fee). */
  async function settledPayin(amount: string): Promise<{ invoice_reference: string; out_trade_no: string }> {
    const out_trade_no = nextOrder();
    return { invoice_reference: await settledPayinOf(harness, merchant, amount, out_trade_no), out_trade_no };
  }

  async function walletAvailable(): Promise<bigint> {
    const wallet = await deps().ledger.findAccount({ owner_type: 'merchant', owner_id: merchant.merchant_id, currency: 'USDT', kind: 'wallet' });
    return wallet!.available_units;
  }

  const decided = (refund_reference: string) => decidedRefund(deps().database, refund_reference);

  const refusal = domainRefusal;

  const refundWebhooks = (refund_reference: string) => harness.receiver.received.filter((item) => item.json?.data?.refund_reference === refund_reference);

  async function ledgerBalances(): Promise<void> {
    expect((await deps().ledger.check()).ok).toBe(true);
  }

  const request = (fields: Partial<RefundRequest>): RefundRequest => ({ reason: 'the customer asked', address: SANDBOX_REFUND_ADDRESSES.succeeds, ...fields });

  it('refunds everything refundable (the payin fee kept): hold posted, refund.succeeded signed webhook, events on the payin', async () => {
    const { invoice_reference, out_trade_no } = await settledPayin('5');
    const before = await walletAvailable();
    const refund = await createRefund(deps(), merchant.merchant_id, request({ out_trade_no }));
    expect(refund).toMatchObject({ status: 'held', amount_units: 4_950_000n, invoice_reference });
    expect(refund.refund_reference).toMatch(/^RFD-[A-Z0-9]{20}$/);
    const done = await decided(refund.refund_reference);
    expect(done).toMatchObject({ status: 'succeeded', refund_trx_ref: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(await walletAvailable()).toBe(before - 4_950_000n);
    const [webhook] = await harness.receiver.waitFor(() => refundWebhooks(refund.refund_reference).length >= 1).then(() => refundWebhooks(refund.refund_reference));
    expect(webhook!.signature_valid).toBe(true);
    expect(webhook!.json).toMatchObject({ event: 'refund.succeeded', data: { refund_reference: refund.refund_reference, invoice_reference, amount: 4.95, status: 'succeeded' } });
    const events = await deps().database('events').where({ subject: invoice_reference }).orderBy('seq');
    expect(events.map((event: { type: string }) => event.type)).toEqual(['payin.created', 'payin.success', 'refund.created', 'refund.succeeded']);
    const keys = (await deps().database('ledger_transactions').where('idempotency_key', 'like', `${refund.refund_reference}:%`)).map((row: { idempotency_key: string }) => row.idempotency_key);
    expect(keys).toEqual([`${refund.refund_reference}:post`]);
    // The operator finds it in the Web UI by owner, kind, amount, currency and its decided status (the run marks it
    // in the workflow task after the one that recorded the decision: read it once the run has closed).
    await deps().temporal.client.workflow.getHandle(refund.refund_reference).result();
    const described = await deps().temporal.client.workflow.getHandle(refund.refund_reference).describe();
    expect(Object.fromEntries(['PaymentOwnerId', 'PaymentKind', 'PaymentAmountUnits', 'PaymentCurrency', 'PaymentStatus'].map((name) => [name, described.searchAttributes[name]?.[0]]))).toEqual({
      PaymentOwnerId: `merchant:${merchant.merchant_id}`,
      PaymentKind: 'refund',
      PaymentAmountUnits: 4_950_000,
      PaymentCurrency: 'USDT',
      PaymentStatus: 'succeeded',
    });
    await ledgerBalances();
  });

  it('refunds partially, several times up to the credited amount; above it refuses and holds nothing', async () => {
    const { invoice_reference } = await settledPayin('10');
    const first = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 4_000_000n }));
    const second = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 5_000_000n }));
    await decided(first.refund_reference);
    await decided(second.refund_reference);
    const before = await walletAvailable();
    const refused = await refusal(createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 1_000_000n })));
    expect(refused.reason).toBe('REFUND_AMOUNT_EXCEEDS_REFUNDABLE');
    expect(await walletAvailable()).toBe(before);
    expect(await deps().database('refunds').where({ invoice_reference })).toHaveLength(2);
    // What is left: 9.90 credited − 9 refunded.
    const last = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference }));
    expect(last.amount_units).toBe(900_000n);
    expect((await decided(last.refund_reference)).status).toBe('succeeded');
    expect((await refusal(createRefund(deps(), merchant.merchant_id, request({ invoice_reference })))).reason).toBe('REFUND_AMOUNT_EXCEEDS_REFUNDABLE');
    await ledgerBalances();
  });

  it('voids the hold when the provider fails the refund, and the amount is refundable again', async () => {
    const { invoice_reference } = await settledPayin('3');
    const before = await walletAvailable();
    const refund = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, address: SANDBOX_REFUND_ADDRESSES.fails }));
    expect(await walletAvailable()).toBe(before - 2_970_000n);
    const done = await decided(refund.refund_reference);
    expect(done).toMatchObject({ status: 'failed', failure_reason: 'The refund address rejected the transfer.' });
    expect(await walletAvailable()).toBe(before);
    await harness.receiver.waitFor(() => refundWebhooks(refund.refund_reference).some((item) => item.json.event === 'refund.failed'));
    const again = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference }));
    expect(again.amount_units).toBe(2_970_000n);
    expect((await decided(again.refund_reference)).status).toBe('succeeded');
    await ledgerBalances();
  });

  it('applies a late decision notified through the signed route once, however often it arrives', async () => {
    const { invoice_reference } = await settledPayin('2');
    const before = await walletAvailable();
    const refund = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, address: SANDBOX_REFUND_ADDRESSES.pending }));
    await eventually(async () => (await deps().database<RefundRow>('refunds').where({ refund_reference: refund.refund_reference }).first())?.status === 'pending');
    // A decision sent straight to Temporal without the provider's signed notification decides nothing.
    await deps().temporal.client.workflow.getHandle(refund.refund_reference).signal(decidedSignal, { status: 'refund_succeeded' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await deps().database<RefundRow>('refunds').where({ refund_reference: refund.refund_reference }).first())!.status).toBe('pending');
    expect(await walletAvailable()).toBe(before - 1_980_000n);

    expect((await harness.sandbox.decideRefund(refund.refund_reference, 'succeeded')).status).toBe(200);
    expect((await decided(refund.refund_reference)).status).toBe('succeeded');
    // The same notification again (the provider's retry): recorded once, applied once.
    expect((await harness.sandbox.decideRefund(refund.refund_reference, 'succeeded')).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await deps().database('refund_notifications').where({ refund_reference: refund.refund_reference })).toHaveLength(1);
    expect(await deps().database('events').where({ subject: invoice_reference, type: 'refund.succeeded' })).toHaveLength(1);
    expect(await walletAvailable()).toBe(before - 1_980_000n);
    await ledgerBalances();
  });

  it('decides a late failure from the sandbox timer and voids the hold', async () => {
    const { invoice_reference } = await settledPayin('2');
    const before = await walletAvailable();
    const refund = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, address: SANDBOX_REFUND_ADDRESSES.late_failure }));
    expect(await decided(refund.refund_reference)).toMatchObject({ status: 'failed', failure_reason: 'The refund transfer was not confirmed on chain.' });
    expect(await walletAvailable()).toBe(before);
    await ledgerBalances();
  });

  /** A refund recorded as another path may record it: its row only, without its hold, and its workflow started. */
  async function recordedWithoutHold(amount_units: bigint): Promise<string> {
    const { invoice_reference, out_trade_no } = await settledPayin('2');
    const payin = await deps().database('payins').where({ invoice_reference }).first();
    const refund_reference = newRefundReference();
    await deps().database.transaction((trx) =>
      insertRefund(trx, {
        refund_reference,
        merchant_id: merchant.merchant_id,
        invoice_reference,
        out_trade_no,
        trx_ref: payin.trx_ref ?? invoice_reference,
        amount_units,
        refund_fee: 'kept',
        fee_units: 0n,
        currency: 'USDT',
        address: SANDBOX_REFUND_ADDRESSES.succeeds,
        reason: 'recorded elsewhere',
        request_key: null,
        request_fingerprint: null,
        pending_transfer_id: null,
        decision_due_at: new Date(Date.now() + 3_600_000),
      }),
    );
    await startRefundWorkflow(deps(), refund_reference);
    return refund_reference;
  }

  it('holds a refund recorded without its hold before the provider is asked, and never asks while it cannot be held', async () => {
    // More than the wallet has: the hold is refused, so the provider must never hear of it.
    const unheld = await recordedWithoutHold(10n ** 15n);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(harness.sandbox.refunds.has(unheld)).toBe(false);
    expect(await deps().database('refunds').where({ refund_reference: unheld }).first()).toMatchObject({ status: 'held', pending_transfer_id: null });
    await deps().temporal.client.workflow.getHandle(unheld).terminate('test: a refund that cannot be held');
    await deps().database('refunds').where({ refund_reference: unheld }).delete();
    // Within the wallet: held, asked, posted, announced once (its payin credits 1.98 first).
    const before = await walletAvailable();
    const held = await recordedWithoutHold(1_000_000n);
    expect(await decided(held)).toMatchObject({ status: 'succeeded', pending_transfer_id: expect.any(String) });
    expect(harness.sandbox.refunds.get(held)?.status).toBe('succeeded');
    await harness.receiver.waitFor(() => refundWebhooks(held).length >= 1);
    await ledgerBalances();
    // A second run of the decided refund (an operator's restart) decides nothing again and hands over the same webhook.
    await deps().temporal.client.workflow.getHandle(held).result(); // the first run closes after the decision is recorded
    const rerun = await deps().temporal.client.workflow.start(refundWorkflow, {
      taskQueue: deps().temporal.taskQueue,
      workflowId: held,
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      args: [{ refund_reference: held, decision_timeout_seconds: 3 }],
    });
    expect(await rerun.result()).toEqual({ status: 'succeeded', webhook_ids: [expect.stringMatching(/-SUCCEEDED$/)] });
    expect(refundWebhooks(held)).toHaveLength(1);
    const keys = (await deps().database('ledger_transactions').where('idempotency_key', 'like', `${held}:%`)).map((row: { idempotency_key: string }) => row.idempotency_key);
    expect(keys).toEqual([`${held}:post`]);
    expect(await walletAvailable()).toBe(before + 1_980_000n - 1_000_000n);
    await ledgerBalances();
  });

  it('answers the first refund for the same Idempotency-Key; another body under it is refused', async () => {
    const { invoice_reference } = await settledPayin('4');
    const key = `refund-key-${Date.now()}`;
    const first = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 1_000_000n }), key);
    const again = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 1_000_000n }), key);
    expect(again.refund_reference).toBe(first.refund_reference);
    expect((await refusal(createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 2_000_000n }), key))).reason).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await deps().database('refunds').where({ invoice_reference })).toHaveLength(1);
    await decided(first.refund_reference);
    await ledgerBalances();
  });

  it('refuses another merchant’s payin, an unsettled payin and bad input, holding nothing', async () => {
    const { invoice_reference } = await settledPayin('1');
    const other = await createTestMerchant(harness);
    expect((await refusal(createRefund(deps(), other.merchant_id, request({ invoice_reference })))).reason).toBe('REFUND_PAYIN_NOT_FOUND');
    const out_trade_no = nextOrder();
    await post(harness.platform.facadeUrl, '/api/v1/payins', `{"amount": 1, "out_trade_no": "${out_trade_no}"}`, { 'X-API-Key': merchant.api_key });
    expect((await refusal(createRefund(deps(), merchant.merchant_id, request({ out_trade_no })))).reason).toBe('REFUND_PAYIN_NOT_SETTLED');
    const invalid = await refusal(createRefund(deps(), merchant.merchant_id, request({ invoice_reference, address: 'not-an-address', amount_units: 0n })));
    expect(invalid.reason).toBe('VALIDATION_FAILED');
    expect(Object.keys(invalid.fields).sort()).toEqual(['address', 'amount']);
    expect(await deps().database('refunds').where({ invoice_reference })).toHaveLength(0);
    await ledgerBalances();
  });
  describe('POST /api/v1/payins/refunds and /refunds/status', () => {
    const refundsUrl = '/api/v1/payins/refunds';
    let keys = 0;
    const send = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      post(harness.platform.facadeUrl, path, JSON.stringify(body), { 'X-API-Key': merchant.api_key, 'Idempotency-Key': `key-${Date.now()}-${(keys += 1)}`, ...headers });

    it('refuses a refund without an Idempotency-Key, holding nothing: a retried request must never refund twice', async () => {
      const { out_trade_no, invoice_reference } = await settledPayin('2');
      const before = await walletAvailable();
      const body = JSON.stringify({ out_trade_no, amount: 1, address: SANDBOX_REFUND_ADDRESSES.succeeds });
      const unkeyed = await post(harness.platform.facadeUrl, refundsUrl, body, { 'X-API-Key': merchant.api_key });
      expect(unkeyed.status).toBe(422);
      expect(unkeyed.json).toEqual({ success: false, message: 'Validation errors', errors: { 'Idempotency-Key': ['The idempotency key must be 1 to 255 visible ASCII characters.'] } });
      expect(await deps().database('refunds').where({ invoice_reference })).toHaveLength(0);
      expect(await walletAvailable()).toBe(before);
    });

    it('refunds partially under an Idempotency-Key: the first refund again for the same body, 409 for another, 422 above the refundable amount', async () => {
      const { out_trade_no, invoice_reference } = await settledPayin('6');
      const body = { out_trade_no, amount: 2.5, reason: 'returned goods', address: SANDBOX_REFUND_ADDRESSES.succeeds };
      const first = await send(refundsUrl, body, { 'Idempotency-Key': `k-${out_trade_no}` });
      expect(first.status).toBe(200);
      expect(first.json).toMatchObject({ success: true, code: 200, data: { invoice_reference, out_trade_no, amount: 2.5, currency: 'USDT', status: 'held', reason: 'returned goods' } });
      const again = await send(refundsUrl, body, { 'Idempotency-Key': `k-${out_trade_no}` });
      expect(again.json.data.refund_reference).toBe(first.json.data.refund_reference);
      const conflict = await send(refundsUrl, { ...body, amount: 1 }, { 'Idempotency-Key': `k-${out_trade_no}` });
      expect(conflict.status).toBe(409);
      expect(conflict.json.success).toBe(false);
      const before = await walletAvailable();
      const above = await send(refundsUrl, { ...body, amount: 3.5 });
      expect(above.status).toBe(422);
      expect(above.json).toEqual({ success: false, message: 'Validation errors', errors: { amount: ['The amount exceeds the refundable amount of the top-up.'] } });
      expect(await walletAvailable()).toBe(before);
      expect(await deps().database('refunds').where({ invoice_reference })).toHaveLength(1);

      await decided(first.json.data.refund_reference as string);
      const one = await send(`${refundsUrl}/status`, { refund_reference: first.json.data.refund_reference });
      expect(one.json.data).toMatchObject({ refund_reference: first.json.data.refund_reference, status: 'succeeded', refund_trx_ref: expect.any(String) });
      const all = await send(`${refundsUrl}/status`, { out_trade_no });
      expect(all.json.data.refunds).toHaveLength(1);
      // 6 paid, 0.06 fee kept, 2.5 refunded.
      expect(all.json.data.refundable_amount).toBe(3.44);
      await ledgerBalances();
    });

    it('needs the API key, names the refused fields, and never shows another merchant’s refund', async () => {
      const { out_trade_no } = await settledPayin('1');
      expect((await post(harness.platform.facadeUrl, refundsUrl, JSON.stringify({ out_trade_no, address: SANDBOX_REFUND_ADDRESSES.succeeds }))).status).toBe(401);
      const invalid = await send(refundsUrl, { amount: 'x' });
      expect(invalid.status).toBe(422);
      expect(Object.keys(invalid.json.errors).sort()).toEqual(['address', 'amount', 'out_trade_no']);
      const mine = await send(refundsUrl, { out_trade_no, address: SANDBOX_REFUND_ADDRESSES.succeeds });
      expect(mine.status).toBe(200);
      const other = await createTestMerchant(harness);
      const theirs = await post(harness.platform.facadeUrl, `${refundsUrl}/status`, JSON.stringify({ refund_reference: mine.json.data.refund_reference }), { 'X-API-Key': other.api_key });
      expect(theirs.status).toBe(404);
      expect(theirs.json).toEqual({ success: false, message: 'Refund not found.', errors: null });
      await decided(mine.json.data.refund_reference as string);
      await ledgerBalances();
    });
  });
  describe('operators', () => {
    const admin = (args: string[]) => runAdminCli(harness.platform, args);

    it('lists and shows refunds with payments admin refunds list|show --json', async () => {
      const { invoice_reference } = await settledPayin('1');
      const refund = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 500_000n }));
      await decided(refund.refund_reference);
      const listed = await admin(['refunds', 'list', '--merchant-id', merchant.merchant_id, '--json']);
      expect(listed.code).toBe(0);
      expect((listed.json!.refunds as Array<{ refund_reference: string }>).map((entry) => entry.refund_reference)).toContain(refund.refund_reference);
      const shown = await admin(['refunds', 'show', refund.refund_reference, '--json']);
      expect(shown.json!.refund).toMatchObject({ refund_reference: refund.refund_reference, merchant_id: merchant.merchant_id, amount_units: '500000', status: 'succeeded' });
      const unknown = await admin(['refunds', 'show', 'RFD-NOSUCHREFUND000000', '--json']);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).not.toBe('');
    });

    it("answers a refund's RFD-… timeline as its payin's (with the refund's holds and workflow), to its merchant and operators only", async () => {
      const { invoice_reference } = await settledPayin('1');
      const refund = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 200_000n }));
      await decided(refund.refund_reference);
      const operator = await harness.platform.clients.timeline.getPaymentTimeline({ reference: refund.refund_reference });
      expect(operator.reference).toBe(invoice_reference);
      expect(operator.refundReference).toBe(refund.refund_reference);
      const details = operator.entries.map((entry) => JSON.parse(entry.detailsJson) as { workflow_id?: string; idempotency_key?: string });
      expect(new Set(details.map((detail) => detail.workflow_id).filter(Boolean))).toEqual(new Set([invoice_reference, refund.refund_reference]));
      expect(details.map((detail) => detail.idempotency_key)).toContain(`${refund.refund_reference}:hold`);
      expect(operator.entries.map((entry) => entry.kind)).toEqual(expect.arrayContaining(['refund.created', 'ledger.held']));

      const timelineOf = (reference: string, api_key: string) =>
        fetch(`${harness.platform.facadeUrl}/api/v1/payments/${reference}/timeline`, { headers: { 'X-API-Key': api_key } }).then(async (response) => ({ status: response.status, json: (await response.json()) as { data: { reference: string } } }));
      const mine = await timelineOf(refund.refund_reference, merchant.api_key);
      expect(mine.status).toBe(200);
      expect(mine.json.data.reference).toBe(invoice_reference);
      const other = await createTestMerchant(harness);
      const theirs = await timelineOf(refund.refund_reference, other.api_key);
      const unknown = await timelineOf('RFD-NOSUCHREFUND000000000', other.api_key);
      expect(theirs.status).toBe(404);
      expect(theirs.json).toEqual(unknown.json);
      await ledgerBalances();
    });

    it("shows every refund's money in its payin's own timeline: the holds, their post or void, and the refund's workflow", async () => {
      const { invoice_reference } = await settledPayin('1');
      const first = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 200_000n }));
      await decided(first.refund_reference);
      const second = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, amount_units: 100_000n }));
      await decided(second.refund_reference);
      {
        const story = await harness.platform.clients.timeline.getPaymentTimeline({ reference: invoice_reference });
        expect(story.reference).toBe(invoice_reference);
        expect(story.refundReference).toBe('');
        const ledger = story.entries.filter((entry) => entry.source === 'ledger').map((entry) => [entry.kind, JSON.parse(entry.detailsJson).idempotency_key as string]);
        for (const refund of [first, second]) {
          expect(ledger).toContainEqual(['ledger.held', `${refund.refund_reference}:hold`]);
          expect(ledger).toContainEqual(['ledger.hold_posted', `${refund.refund_reference}:hold`]);
        }
        const workflows = new Set(story.entries.map((entry) => (JSON.parse(entry.detailsJson) as { workflow_id?: string }).workflow_id).filter(Boolean));
        expect(workflows).toEqual(new Set([invoice_reference, first.refund_reference, second.refund_reference]));
      }
      const owner = await fetch(`${harness.platform.facadeUrl}/api/v1/payments/${invoice_reference}/timeline`, { headers: { 'X-API-Key': merchant.api_key } });
      const entries = ((await owner.json()) as { data: { entries: Array<{ kind: string; details: { idempotency_key?: string } }> } }).data.entries;
      expect(entries.filter((entry) => entry.kind === 'ledger.hold_posted').map((entry) => entry.details.idempotency_key)).toEqual(
        expect.arrayContaining([`${first.refund_reference}:hold`, `${second.refund_reference}:hold`]),
      );
      await ledgerBalances();
    });

    it('reconciliation reports a refund held past its decision timeout and a provider outcome for no refund', async () => {
      const { invoice_reference } = await settledPayin('1');
      const refund = await createRefund(deps(), merchant.merchant_id, request({ invoice_reference, address: SANDBOX_REFUND_ADDRESSES.pending }));
      await eventually(async () => (await deps().database<RefundRow>('refunds').where({ refund_reference: refund.refund_reference }).first())?.status === 'pending');
      await deps().database('refunds').where({ refund_reference: refund.refund_reference }).update({ decision_due_at: new Date(Date.now() - 60_000) });
      const orphan = JSON.stringify({ refund_reference: 'RFD-NOTOURS00000000000', status: 'refund_succeeded', amount: 1, currency: 'USDT', refund_trx_ref: 'abc' });
      const notified = await post(harness.platform.facadeUrl, '/api/v1/upstream/notifications', orphan, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, orphan) });
      expect(notified.status).toBe(200);
      expect(notified.json.data.applied).toBe(false);

      const report = await reconcile(deps(), createReconciliationRepairs(deps()), { repair: true, grace_seconds: 0 });
      const undecided = report.findings.find((finding) => finding.kind === 'refund_undecided' && finding.id === refund.refund_reference);
      expect(undecided).toMatchObject({ action: 'reported', detail: expect.stringContaining('its workflow waits for the provider') });
      expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'refund_outcome_unknown', id: 'RFD-NOTOURS00000000000', action: 'reported' }));
      // Still held, nothing moved: the provider's decision ends it.
      expect((await harness.sandbox.decideRefund(refund.refund_reference, 'failed')).status).toBe(200);
      expect((await decided(refund.refund_reference)).status).toBe('failed');
      await ledgerBalances();
    });
  });
});
