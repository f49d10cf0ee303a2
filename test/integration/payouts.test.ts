/**
 * Area B crypto payouts against real PostgreSQL and Temporal and the sandbox upstream (docs/payouts.md): the
 * PayoutWorkflow with its real activities, the provider's answers by test address, the signed late decision through
 * the platform's own notification route, limits and approvals, attacker tests, and the ledger after each.
 */
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { approvalSignal, decidedSignal } from '../../src/flows/payout/contract';
import { createPayout, decidePayoutApproval, type PayoutRequest, type PayoutRow } from '../../src/flows/payout/service';
import { setPayoutSettings, NO_PAYOUT_SETTINGS } from '../../src/flows/payout/store';
import { payoutScheduleId, removePayoutSchedule, scheduledPayoutKey, setPayoutSchedule } from '../../src/flows/payout/schedules';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { createServiceCredential } from '../../src/service-credentials';
import { SANDBOX_PAYOUT_ADDRESSES } from '../../src/sandbox/upstream-payouts';
import { createReconciliationRepairs } from '../../src/activities';
import { reconcile } from '../../src/flows/reconciliation/activities';
import { runAdminCli } from '../support/admin-cli';
import { createTestMerchant, domainRefusal, eventually, post, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';

const NOTIFICATIONS = '/api/v1/upstream/notifications';
const USDT = 1_000_000n;
/** The seeded fee_payout of USDT_TRC20: 1 USDT. */
const FEE = USDT;
let funding = 0;
let keys = 0;

describe('payouts of merchants wallets', () => {
  let harness: PayinHarness;

  beforeAll(async () => {
    harness = await startPayinHarness({
      env: { PAYOUT_DECISION_TIMEOUT_SECONDS: '120', PAYOUT_APPROVAL_TIMEOUT_SECONDS: '15' },
      payout_decision_delay_seconds: null,
    });
  });
  afterAll(() => harness.stop());

  const deps = () => harness.platform.deps;

  /** A merchant whose wallet holds `units` (credited from settlement, as an operator's credit). */
  async function fundedMerchant(units: bigint): Promise<MerchantCredentials> {
    const merchant = await createTestMerchant(harness);
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
    const address = { owner_type: 'merchant', owner_id: merchant.merchant_id, currency: 'USDT', kind: 'wallet' } as const;
    const wallet = (await deps().ledger.findAccount(address)) ?? (await deps().ledger.openAccount(address));
    await deps().ledger.transfer({
      idempotency_key: `payout-test-funding-${Date.now()}-${(funding += 1)}`,
      description: 'test funding',
      postings: [
        { platform: 'settlement', currency: 'USDT', amount_units: -units },
        { account_id: wallet.id, amount_units: units },
      ],
      metadata: {},
    });
    return merchant;
  }

  async function wallet(merchant: MerchantCredentials): Promise<{ available: bigint; posted: bigint }> {
    const account = await deps().ledger.findAccount({ owner_type: 'merchant', owner_id: merchant.merchant_id, currency: 'USDT', kind: 'wallet' });
    return { available: account!.available_units, posted: account!.posted_units };
  }

  async function ledgerBalances(): Promise<void> {
    expect((await deps().ledger.check()).ok).toBe(true);
  }

  const row = async (payout_reference: string) => (await deps().database<PayoutRow>('payouts').where({ payout_reference }).first())!;
  const decided = (payout_reference: string) =>
    eventually(async () => {
      const payout = await row(payout_reference);
      return payout.status === 'succeeded' || payout.status === 'failed' ? payout : undefined;
    });
  const payoutsOf = (merchant: MerchantCredentials) => deps().database<PayoutRow>('payouts').where({ merchant_id: merchant.merchant_id });
  /** The payout's ledger keys: each hold (`<key>=<state>`) and each transaction's key, sorted. */
  const ledgerKeys = async (payout_reference: string) => {
    const like = `${payout_reference}:%`;
    const holds = (await deps().database('ledger_pending_transfers').where('idempotency_key', 'like', like)) as Array<{ idempotency_key: string; state: string }>;
    const transactions = (await deps().database('ledger_transactions').where('idempotency_key', 'like', like)) as Array<{ idempotency_key: string }>;
    return [...holds.map((hold) => `${hold.idempotency_key}=${hold.state}`), ...transactions.map((transaction) => transaction.idempotency_key)].sort();
  };
  const request = (fields: Partial<PayoutRequest>): PayoutRequest => ({ amount_units: USDT, currency: 'USDT', address: SANDBOX_PAYOUT_ADDRESSES.succeeds, memo: '', ...fields });
  const payoutHttp = (merchant: MerchantCredentials, body: unknown, key = `key-${Date.now()}-${(keys += 1)}`) =>
    post(harness.platform.facadeUrl, '/api/v1/payouts', JSON.stringify(body), { 'X-API-Key': merchant.api_key, 'Idempotency-Key': key });
  const events = (payout_reference: string) => deps().database('events').where({ subject: payout_reference }).orderBy('seq').pluck('type');

  it('pays out the whole balance over the façade: fee shown and charged, both holds posted, payout.succeeded signed webhook', async () => {
    const merchant = await fundedMerchant(10n * USDT);
    const answer = await payoutHttp(merchant, { amount: 9, currency: 'USDT', address: SANDBOX_PAYOUT_ADDRESSES.succeeds, memo: 'weekly', out_trade_no: 'PO-ORDER-1' });
    expect(answer.status).toBe(200);
    expect(answer.json.data).toMatchObject({ amount: 9, fee: 1, currency: 'USDT', address: SANDBOX_PAYOUT_ADDRESSES.succeeds, memo: 'weekly', out_trade_no: 'PO-ORDER-1' });
    const reference = answer.json.data.payout_reference as string;
    const payout = await decided(reference);
    expect(payout).toMatchObject({ status: 'succeeded', amount_units: 9n * USDT, fee_units: FEE });
    expect(payout.provider_reference).toMatch(/^[0-9a-f]{64}$/);
    expect(await ledgerKeys(reference)).toEqual([`${reference}:hold-fee=posted`, `${reference}:hold=posted`, `${reference}:post`, `${reference}:post-fee`].sort());
    expect(await wallet(merchant)).toEqual({ available: 0n, posted: 0n });
    expect(await events(reference)).toEqual(['payout.created', 'payout.succeeded']);
    const webhook = await eventually(async () => harness.receiver.received.find((item) => item.json?.data?.payout_reference === reference));
    expect(webhook.json).toMatchObject({ event: 'payout.succeeded', data: { status: 'succeeded', amount: 9, fee: 1 } });
    // The payout's timeline: its workflow, ledger steps, events and webhook, in time order.
    const timeline = await fetch(`${harness.platform.facadeUrl}/api/v1/payments/${reference}/timeline`, { headers: { 'X-API-Key': merchant.api_key } });
    expect(timeline.status).toBe(200);
    const sources = new Set(((await timeline.json()) as { data: { entries: Array<{ source: string }> } }).data.entries.map((entry) => entry.source));
    expect([...sources].sort()).toEqual(expect.arrayContaining(['event', 'ledger', 'workflow']));
    // Status by reference and by out_trade_no.
    for (const body of [{ payout_reference: reference }, { out_trade_no: 'PO-ORDER-1' }]) {
      const status = await post(harness.platform.facadeUrl, '/api/v1/payouts/status', JSON.stringify(body), { 'X-API-Key': merchant.api_key });
      expect(status.json.data).toMatchObject({ payout_reference: reference, status: 'succeeded' });
    }
    await ledgerBalances();
  });

  it('pays out part of the balance; the rest stays available', async () => {
    const merchant = await fundedMerchant(10n * USDT);
    const payout = await createPayout(deps(), merchant.merchant_id, request({ amount_units: 3n * USDT }), 'partial');
    expect((await decided(payout.payout_reference)).status).toBe('succeeded');
    expect(await wallet(merchant)).toEqual({ available: 6n * USDT, posted: 6n * USDT });
    await ledgerBalances();
  });

  it('refuses, with nothing held or recorded: above the balance, a bad address, below the minimum, above the per-payout and daily limits', async () => {
    const merchant = await fundedMerchant(10n * USDT);
    expect((await domainRefusal(createPayout(deps(), merchant.merchant_id, request({ amount_units: 10n * USDT })))).reason).toBe('PAYOUT_INSUFFICIENT_BALANCE');
    // A TRON-looking address whose checksum is wrong, and one of another network.
    const typo = `${SANDBOX_PAYOUT_ADDRESSES.succeeds.slice(0, -1)}${SANDBOX_PAYOUT_ADDRESSES.succeeds.endsWith('q') ? 'r' : 'q'}`;
    for (const address of [typo, '0x52908400098527886E0F7030069857D2E4169EE7']) {
      const refusal = await domainRefusal(createPayout(deps(), merchant.merchant_id, request({ address })));
      expect(refusal).toMatchObject({ reason: 'VALIDATION_FAILED', fields: { address: ['invalid'] } });
    }
    const http = await payoutHttp(merchant, { amount: 1, currency: 'USDT', address: typo });
    expect(http.status).toBe(422);
    await setPayoutSettings(deps().database, merchant.merchant_id, { ...NO_PAYOUT_SETTINGS, min_units: 2n * USDT, per_payout_max_units: 5n * USDT, daily_max_units: 6n * USDT });
    expect((await domainRefusal(createPayout(deps(), merchant.merchant_id, request({ amount_units: USDT })))).reason).toBe('PAYOUT_BELOW_MINIMUM');
    expect((await domainRefusal(createPayout(deps(), merchant.merchant_id, request({ amount_units: 6n * USDT })))).reason).toBe('PAYOUT_ABOVE_LIMIT');
    const first = await createPayout(deps(), merchant.merchant_id, request({ amount_units: 4n * USDT }));
    await decided(first.payout_reference);
    expect((await domainRefusal(createPayout(deps(), merchant.merchant_id, request({ amount_units: 3n * USDT })))).reason).toBe('PAYOUT_DAILY_LIMIT_EXCEEDED');
    expect(await payoutsOf(merchant)).toHaveLength(1);
    expect(await wallet(merchant)).toEqual({ available: 5n * USDT, posted: 5n * USDT });
    await ledgerBalances();
  });

  it('never overdraws: 20 payouts at once against a balance for 5 → exactly 5', async () => {
    const merchant = await fundedMerchant(5n * (USDT + FEE));
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, index) => createPayout(deps(), merchant.merchant_id, request({}), `burst-${index}`)));
    const made = results.filter((result) => result.status === 'fulfilled');
    expect(made).toHaveLength(5);
    for (const result of results) if (result.status === 'rejected') expect((result.reason as { reason?: string }).reason).toBe('PAYOUT_INSUFFICIENT_BALANCE');
    for (const result of made) await decided(result.value.payout_reference);
    expect(await payoutsOf(merchant)).toHaveLength(5);
    expect(await wallet(merchant)).toEqual({ available: 0n, posted: 0n });
    await ledgerBalances();
  });

  it('a provider failure voids both holds: answered failed, or the address refused for good', async () => {
    const merchant = await fundedMerchant(10n * USDT);
    for (const address of [SANDBOX_PAYOUT_ADDRESSES.fails, SANDBOX_PAYOUT_ADDRESSES.rejected]) {
      const payout = await createPayout(deps(), merchant.merchant_id, request({ address }));
      const failed = await decided(payout.payout_reference);
      expect(failed.status).toBe('failed');
      expect(failed.failure_reason).toBe(address === SANDBOX_PAYOUT_ADDRESSES.fails ? 'The destination rejected the transfer.' : 'refused by the provider');
      expect(await ledgerKeys(payout.payout_reference)).toEqual([`${payout.payout_reference}:hold-fee=voided`, `${payout.payout_reference}:hold=voided`]);
      expect(await events(payout.payout_reference)).toEqual(['payout.created', 'payout.failed']);
    }
    expect(await wallet(merchant)).toEqual({ available: 10n * USDT, posted: 10n * USDT });
    await ledgerBalances();
  });

  it('a late signed decision delivered twice is applied once', async () => {
    const merchant = await fundedMerchant(10n * USDT);
    const payout = await createPayout(deps(), merchant.merchant_id, request({ amount_units: 2n * USDT, address: SANDBOX_PAYOUT_ADDRESSES.pending }));
    await eventually(async () => (await row(payout.payout_reference)).status === 'requested');
    expect(await wallet(merchant)).toEqual({ available: 7n * USDT, posted: 10n * USDT });
    const [first, second] = await Promise.all([harness.sandbox.decidePayout(payout.payout_reference, 'succeeded'), harness.sandbox.decidePayout(payout.payout_reference, 'succeeded')]);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect((await decided(payout.payout_reference)).status).toBe('succeeded');
    expect(await deps().database('payout_notifications').where({ payout_reference: payout.payout_reference })).toHaveLength(1);
    expect(await events(payout.payout_reference)).toEqual(['payout.created', 'payout.succeeded']);
    expect(await wallet(merchant)).toEqual({ available: 7n * USDT, posted: 7n * USDT });
    await ledgerBalances();
  });

  it('the same Idempotency-Key answers the first payout; another body under it is 409; a payout needs the key', async () => {
    const merchant = await fundedMerchant(10n * USDT);
    const body = { amount: 2, currency: 'USDT', address: SANDBOX_PAYOUT_ADDRESSES.succeeds };
    const [first, again] = await Promise.all([payoutHttp(merchant, body, 'same-key'), payoutHttp(merchant, body, 'same-key')]);
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.json.data.payout_reference).toBe(first.json.data.payout_reference);
    const other = await payoutHttp(merchant, { ...body, amount: 3 }, 'same-key');
    expect(other.status).toBe(409);
    const unkeyed = await post(harness.platform.facadeUrl, '/api/v1/payouts', JSON.stringify(body), { 'X-API-Key': merchant.api_key });
    expect(unkeyed.status).toBe(422);
    await decided(first.json.data.payout_reference);
    expect(await payoutsOf(merchant)).toHaveLength(1);
    expect(await wallet(merchant)).toEqual({ available: 7n * USDT, posted: 7n * USDT });
    await ledgerBalances();
  });

  describe('under attack: nothing moves', () => {
    it('a forged provider notification (bad or no signature) is refused and records nothing', async () => {
      const merchant = await fundedMerchant(10n * USDT);
      const payout = await createPayout(deps(), merchant.merchant_id, request({ amount_units: 2n * USDT, address: SANDBOX_PAYOUT_ADDRESSES.pending }));
      await eventually(async () => (await row(payout.payout_reference)).status === 'requested');
      const body = JSON.stringify({ payout_reference: payout.payout_reference, status: 'payout_succeeded', amount: 2, currency: 'USDT', payout_trx_ref: 'f'.repeat(64) });
      const forged = await post(harness.platform.facadeUrl, NOTIFICATIONS, body, { 'X-Upstream-Signature': hmacSha256Hex('not-the-secret', body) });
      const unsigned = await post(harness.platform.facadeUrl, NOTIFICATIONS, body);
      expect([forged.status, unsigned.status]).toEqual([401, 401]);
      expect(await deps().database('payout_notifications').where({ payout_reference: payout.payout_reference })).toHaveLength(0);
      expect((await row(payout.payout_reference)).status).toBe('requested');
      expect(await ledgerKeys(payout.payout_reference)).toEqual([`${payout.payout_reference}:hold-fee=pending`, `${payout.payout_reference}:hold=pending`]);
      // The provider's signed decision is what decides it.
      const failedBody = JSON.stringify({ payout_reference: payout.payout_reference, status: 'payout_failed', amount: 2, currency: 'USDT', failure_reason: 'no' });
      expect((await post(harness.platform.facadeUrl, NOTIFICATIONS, failedBody, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, failedBody) })).status).toBe(200);
      expect((await decided(payout.payout_reference)).status).toBe('failed');
      expect(await wallet(merchant)).toEqual({ available: 10n * USDT, posted: 10n * USDT });
      await ledgerBalances();
    });

    it('a success or an approval told straight to the run through Temporal decides nothing', async () => {
      const merchant = await fundedMerchant(10n * USDT);
      const pending = await createPayout(deps(), merchant.merchant_id, request({ amount_units: 2n * USDT, address: SANDBOX_PAYOUT_ADDRESSES.pending }));
      await eventually(async () => (await row(pending.payout_reference)).status === 'requested');
      await deps().temporal.client.workflow.getHandle(pending.payout_reference).signal(decidedSignal, { status: 'payout_succeeded' });
      await setPayoutSettings(deps().database, merchant.merchant_id, { ...NO_PAYOUT_SETTINGS, approval_threshold_units: 2n * USDT });
      const waiting = await createPayout(deps(), merchant.merchant_id, request({ amount_units: 3n * USDT }));
      expect(waiting.status).toBe('awaiting_approval');
      await deps().temporal.client.workflow.getHandle(waiting.payout_reference).signal(approvalSignal, { decision: 'approve' });
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect((await row(pending.payout_reference)).status).toBe('requested');
      expect((await row(waiting.payout_reference)).status).toBe('awaiting_approval');
      expect(harness.sandbox.payouts.payouts.has(waiting.payout_reference)).toBe(false);
      expect(await wallet(merchant)).toEqual({ available: 10n * USDT - 5n * USDT - 2n * FEE, posted: 10n * USDT });
      await ledgerBalances();
    });

    it("another owner's credential or API key makes no payout and sees none", async () => {
      const victim = await fundedMerchant(10n * USDT);
      const other = await fundedMerchant(10n * USDT);
      const payout = await createPayout(deps(), victim.merchant_id, request({}));
      const theirs = await post(harness.platform.facadeUrl, '/api/v1/payouts/status', JSON.stringify({ payout_reference: payout.payout_reference }), { 'X-API-Key': other.api_key });
      expect(theirs.status).toBe(404);
      const call = (token: string, body: unknown) =>
        fetch(`${harness.platform.rpcUrl}/payments.payout.v1.PayoutService/CreatePayout`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
        });
      const bound = await createServiceCredential(deps().database, { name: 'other merchant', scopes: [`merchant:${other.merchant_id}`] });
      const facade = await createServiceCredential(deps().database, { name: 'a facade', scopes: ['facade'] });
      const attempt = { amountUnits: '1000000', currency: 'USDT', address: SANDBOX_PAYOUT_ADDRESSES.succeeds, idempotencyKey: 'steal' };
      for (const token of [bound.token, facade.token]) expect((await call(token, attempt)).status).toBe(401);
      // An operator's approval RPC is not the façade's or a merchant's.
      const approve = await fetch(`${harness.platform.rpcUrl}/payments.payout.v1.PayoutService/DecidePayoutApproval`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${facade.token}` },
        body: JSON.stringify({ payoutReference: payout.payout_reference, decision: 'approve' }),
      });
      expect(approve.status).toBe(403);
      await decided(payout.payout_reference);
      expect(await payoutsOf(victim)).toHaveLength(1);
      expect(await payoutsOf(other)).toHaveLength(0);
      expect(await wallet(other)).toEqual({ available: 10n * USDT, posted: 10n * USDT });
      await ledgerBalances();
    });
  });

  describe('approval above the threshold', () => {
    async function awaiting(merchant: MerchantCredentials): Promise<PayoutRow> {
      await setPayoutSettings(deps().database, merchant.merchant_id, { ...NO_PAYOUT_SETTINGS, approval_threshold_units: 2n * USDT });
      const payout = await createPayout(deps(), merchant.merchant_id, request({ amount_units: 3n * USDT }));
      expect(payout.status).toBe('awaiting_approval');
      expect(await events(payout.payout_reference)).toEqual(['payout.created', 'payout.pending_approval']);
      expect(await wallet(merchant)).toEqual({ available: 6n * USDT, posted: 10n * USDT });
      return payout;
    }

    it('approved by an operator: sent and posted; the approval is recorded with who', async () => {
      const merchant = await fundedMerchant(10n * USDT);
      const payout = await awaiting(merchant);
      await harness.platform.clients.payout.decidePayoutApproval({ payoutReference: payout.payout_reference, decision: 'approve', note: 'checked' });
      expect((await decided(payout.payout_reference)).status).toBe('succeeded');
      const approval = await deps().database('payout_approvals').where({ payout_reference: payout.payout_reference }).first();
      expect(approval).toMatchObject({ decision: 'approve', note: 'checked' });
      expect(approval.actor).toMatch(/^operator:/);
      expect(await deps().database('audit_records').where({ procedure: 'payments.payout.v1.PayoutService/DecidePayoutApproval' })).not.toHaveLength(0);
      expect(await wallet(merchant)).toEqual({ available: 6n * USDT, posted: 6n * USDT });
      await ledgerBalances();
    });

    it('rejected: voided, never sent; a second decision is refused', async () => {
      const merchant = await fundedMerchant(10n * USDT);
      const payout = await awaiting(merchant);
      await decidePayoutApproval(deps(), payout.payout_reference, 'reject', 'operator:test');
      const failed = await decided(payout.payout_reference);
      expect(failed).toMatchObject({ status: 'failed', failure_reason: 'rejected by an operator' });
      expect(harness.sandbox.payouts.payouts.has(payout.payout_reference)).toBe(false);
      expect((await domainRefusal(decidePayoutApproval(deps(), payout.payout_reference, 'approve', 'operator:test'))).reason).toBe('PAYOUT_NOT_AWAITING_APPROVAL');
      expect(await wallet(merchant)).toEqual({ available: 10n * USDT, posted: 10n * USDT });
      await ledgerBalances();
    });

    it('operators: limits set, the payout approved, listed and shown with `payments admin`', async () => {
      const merchant = await fundedMerchant(10n * USDT);
      const admin = (args: string[]) => runAdminCli(harness.platform, args);
      const limits = await admin(['merchant', 'payout-limits', '--merchant-id', merchant.merchant_id, '--approval-threshold', '2', '--daily-max', '9', '--json']);
      expect(limits).toMatchObject({ code: 0, json: { merchant_id: merchant.merchant_id, approval_threshold: '2.000000', daily_max: '9.000000', min: null } });
      const payout = await createPayout(deps(), merchant.merchant_id, request({ amount_units: 3n * USDT }));
      expect(payout.status).toBe('awaiting_approval');
      const approved = await admin(['payouts', 'approve', payout.payout_reference, '--note', 'called the merchant', '--json']);
      expect(approved).toMatchObject({ code: 0, json: { payout: { payout_reference: payout.payout_reference } } });
      const listed = await admin(['payouts', 'list', '--merchant-id', merchant.merchant_id, '--json']);
      expect(listed.json).toMatchObject({ payouts: [{ payout_reference: payout.payout_reference, amount_units: '3000000', fee_units: '1000000' }] });
      expect((await decided(payout.payout_reference)).status).toBe('succeeded');
      const shown = await admin(['payouts', 'show', payout.payout_reference, '--json']);
      expect(shown.json).toMatchObject({ payout: { payout_reference: payout.payout_reference, status: 'succeeded', merchant_id: merchant.merchant_id } });
      const again = await admin(['payouts', 'reject', payout.payout_reference]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('PAYOUT_NOT_AWAITING_APPROVAL');
      await ledgerBalances();
    });

    it('never approved: voided after PAYOUT_APPROVAL_TIMEOUT_SECONDS', async () => {
      const merchant = await fundedMerchant(10n * USDT);
      const payout = await awaiting(merchant);
      const failed = await decided(payout.payout_reference);
      expect(failed).toMatchObject({ status: 'failed', failure_reason: 'approval_timed_out' });
      expect(await events(payout.payout_reference)).toEqual(['payout.created', 'payout.pending_approval', 'payout.failed']);
      expect(await wallet(merchant)).toEqual({ available: 10n * USDT, posted: 10n * USDT });
      await ledgerBalances();
    });
  });

  describe('schedules', () => {
    it('a schedule fired twice for one period pays once, keeping the reserve; removed, its Temporal Schedule is gone', async () => {
      const merchant = await fundedMerchant(10n * USDT);
      await setPayoutSchedule(deps(), { merchant_id: merchant.merchant_id, every: 'daily', minimum_units: USDT, reserve_units: 2n * USDT, address: SANDBOX_PAYOUT_ADDRESSES.succeeds });
      const handle = deps().temporal.client.schedule.getHandle(payoutScheduleId(merchant.merchant_id));
      // Two firings of the same period (a run's workflow id names its second: the second firing a second later).
      await handle.trigger(ScheduleOverlapPolicy.ALLOW_ALL);
      await eventually(async () => (await handle.describe()).info.recentActions.length >= 1);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await handle.trigger(ScheduleOverlapPolicy.ALLOW_ALL);
      const runs = await eventually(async () => {
        const actions = (await handle.describe()).info.recentActions;
        return actions.length >= 2 ? actions : undefined;
      });
      const results = await Promise.all(runs.map((run) => deps().temporal.client.workflow.getHandle(run.action.workflow.workflowId).result()));
      expect(results.map((result) => result.outcome)).toEqual(['paid', 'paid']);
      expect(new Set(results.map((result) => (result as { payout_reference: string }).payout_reference)).size).toBe(1);
      const payouts = await payoutsOf(merchant);
      expect(payouts).toHaveLength(1);
      expect(payouts[0]).toMatchObject({ source: 'schedule', amount_units: 7n * USDT, request_key: scheduledPayoutKey(merchant.merchant_id, 'daily', new Date()) });
      await decided(payouts[0]!.payout_reference);
      expect(await wallet(merchant)).toEqual({ available: 2n * USDT, posted: 2n * USDT });
      expect(await removePayoutSchedule(deps(), merchant.merchant_id)).toBe(true);
      await expect(handle.describe()).rejects.toThrow();
      await ledgerBalances();
    });
  });

  it('reconciliation reports a provider outcome with no payout and a payout undecided past its timeout', async () => {
    const merchant = await fundedMerchant(10n * USDT);
    const payout = await createPayout(deps(), merchant.merchant_id, request({ amount_units: 2n * USDT, address: SANDBOX_PAYOUT_ADDRESSES.pending }));
    await eventually(async () => (await row(payout.payout_reference)).status === 'requested');
    await deps().database('payouts').where({ payout_reference: payout.payout_reference }).update({ decision_due_at: new Date(Date.now() - 1000) });
    const orphan = JSON.stringify({ payout_reference: 'PO-NOTOURS0000000000000', status: 'payout_succeeded', amount: 1, currency: 'USDT', payout_trx_ref: 'a'.repeat(64) });
    const notified = await post(harness.platform.facadeUrl, NOTIFICATIONS, orphan, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, orphan) });
    expect(notified.status).toBe(200);
    const report = await reconcile(deps(), createReconciliationRepairs(deps()), { repair: true, grace_seconds: 0 });
    expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'payout_undecided', id: payout.payout_reference, action: 'reported' }));
    expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'payout_outcome_unknown', id: 'PO-NOTOURS0000000000000', action: 'reported' }));
    expect((await harness.sandbox.decidePayout(payout.payout_reference, 'failed')).status).toBe(200);
    expect((await decided(payout.payout_reference)).status).toBe('failed');
    await ledgerBalances();
  });
});
