/**
 * The PayinWorkflow cannot drop a message and trusts no amount a message carries (platform decisions §4), against
 * real PostgreSQL and Temporal. A worker of this file slows one activity down, so a notification arrives while the
 * run is busy in another step; its settlement must still be credited, exactly once. A `settled` signal sent straight
 * to Temporal, without an applied upstream notification, must credit nothing.
 */
import { readFileSync } from 'node:fs';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { settledSignal } from '../../src/flows/payin/contract';
import { signalPayin } from '../../src/flows/payin/notifications';
import { payinWorkflow } from '../../workflows/payin';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { startWorker, type RunningWorker } from '../../src/worker';
import { createTestMerchant, eventually, post, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';

const SLOW_STEP_MS = 12_000;
const NOTIFY_AFTER_MS = 3_000;

describe('PayinWorkflow messages', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;
  let worker: RunningWorker;
  /** Invoice references whose named step this worker holds for SLOW_STEP_MS. */
  const slow = { expirePayin: new Set<string>(), startWebhookDeliveries: new Set<string>() };
  const entered = new Map<string, number>();

  beforeAll(async () => {
    harness = await startPayinHarness({ roles: ['api', 'facade'], env: { PAYIN_TTL_SECONDS: '1' } });
    merchant = await createTestMerchant(harness, { payin_fee_percent: '1' });
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
    worker = await startWorker(harness.platform.deps, {
      address: harness.platform.config.TEMPORAL_ADDRESS!,
      bundle: { code: readFileSync(process.env.PAYMENTS_TEST_WORKFLOW_BUNDLE!, 'utf8') },
      wrapActivities: (activities) => ({
        ...activities,
        async expirePayin(input) {
          if (slow.expirePayin.delete(input.invoice_reference)) {
            entered.set(`expire:${input.invoice_reference}`, Date.now());
            await new Promise((resolve) => setTimeout(resolve, SLOW_STEP_MS));
          }
          return activities.expirePayin(input);
        },
        async startWebhookDeliveries(input) {
          const held = input.webhook_ids.find((id) => [...slow.startWebhookDeliveries].some((reference) => id.includes(reference.replace(/^PAYIN-/, ''))));
          if (held) {
            for (const reference of slow.startWebhookDeliveries) if (held.includes(reference.replace(/^PAYIN-/, ''))) slow.startWebhookDeliveries.delete(reference);
            entered.set(`deliveries:${held}`, Date.now());
            await new Promise((resolve) => setTimeout(resolve, SLOW_STEP_MS));
          }
          return activities.startWebhookDeliveries(input);
        },
      }),
    });
  });
  afterAll(async () => {
    await worker?.shutdown();
    await harness.stop();
  });

  const create = async (amount: string) => {
    const out_trade_no = `MSG-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
    const response = await post(harness.platform.facadeUrl, '/api/v1/payins', `{"amount": ${amount}, "out_trade_no": "${out_trade_no}"}`, {
      'X-API-Key': merchant.api_key,
    });
    expect(response.status).toBe(200);
    return response.json.data.invoice_reference as string;
  };
  const notify = (invoice_reference: string, amount: string, trx_ref: string) => {
    const body = JSON.stringify({ invoice_reference, status: 'success', amount: Number(amount), currency: 'USDT', trx_ref });
    return post(harness.platform.facadeUrl, '/api/v1/upstream/notifications', body, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, body) });
  };
  const payin = (invoice_reference: string) => harness.platform.deps.database('payins').where({ invoice_reference }).first();
  const walletUnits = async () => {
    const accounts = await harness.platform.deps.ledger.accountsOf('merchant', merchant.merchant_id);
    return accounts.find((account) => account.kind === 'wallet' && account.currency === 'USDT')?.posted_units ?? 0n;
  };
  const waitUntilEntered = (key: string) => eventually(async () => entered.get(key), 20_000);

  it('credits a success that arrives while the expiry step is slow (expiry held 12 s, notified at +3 s)', async () => {
    const before = await walletUnits();
    const invoice_reference = await create('3');
    slow.expirePayin.add(invoice_reference);
    await waitUntilEntered(`expire:${invoice_reference}`);
    await new Promise((resolve) => setTimeout(resolve, NOTIFY_AFTER_MS));
    expect((await notify(invoice_reference, '3', `TRX-SLOW-EXPIRY-${invoice_reference}`)).status).toBe(200);
    const settled = await eventually(async () => ((await payin(invoice_reference))?.status === 'success' ? payin(invoice_reference) : undefined), 40_000);
    expect(settled).toMatchObject({ status: 'success', late: true, paid_amount_units: 3_000_000n, fee_units: 30_000n });
    expect((await walletUnits()) - before).toBe(3_000_000n - 30_000n);
  }, 60_000);

  it('credits a success that arrives while the webhook start after expiry is slow (held 12 s, notified at +3 s)', async () => {
    const before = await walletUnits();
    const invoice_reference = await create('4');
    slow.startWebhookDeliveries.add(invoice_reference);
    await eventually(async () => [...entered.keys()].find((key) => key.startsWith('deliveries:') && key.includes(invoice_reference.replace(/^PAYIN-/, ''))), 20_000);
    expect((await payin(invoice_reference)).status).toBe('expired');
    await new Promise((resolve) => setTimeout(resolve, NOTIFY_AFTER_MS));
    const answer = await notify(invoice_reference, '4', `TRX-SLOW-START-${invoice_reference}`);
    expect(answer.json.data).toMatchObject({ applied: true });
    const settled = await eventually(async () => ((await payin(invoice_reference))?.status === 'success' ? payin(invoice_reference) : undefined), 40_000);
    expect(settled).toMatchObject({ status: 'success', late: true, paid_amount_units: 4_000_000n });
    expect((await walletUnits()) - before).toBe(4_000_000n - 40_000n);
  }, 60_000);

  it('credits nothing for a settled signal sent to Temporal without an applied notification', async () => {
    const invoice_reference = await create('5');
    await eventually(async () => (await payin(invoice_reference))?.status === 'expired', 20_000);
    const before = await walletUnits();
    // Whoever reaches the Temporal frontend can signal-with-start the payin's workflow with any amount.
    const forged = await harness.platform.deps.temporal.client.workflow.signalWithStart(payinWorkflow, {
      taskQueue: harness.platform.deps.temporal.taskQueue,
      workflowId: invoice_reference,
      args: [{ invoice_reference, ttl_seconds: 1 }],
      signal: settledSignal,
      signalArgs: [{ amount_units: '1000000000', trx_ref: 'FORGED' }],
    });
    await forged.result();
    expect(await payin(invoice_reference)).toMatchObject({ status: 'expired', paid_amount_units: null });
    expect(await walletUnits()).toBe(before);
    expect((await harness.platform.deps.ledger.check()).ok).toBe(true);
  }, 40_000);

  it('starts a run from a re-driven signal with the payin’s search attributes, as the outbox does', async () => {
    const invoice_reference = await create('4');
    await eventually(async () => (await payin(invoice_reference))?.status === 'expired', 20_000);
    const handle = harness.platform.deps.temporal.client.workflow.getHandle(invoice_reference);
    await handle.result();
    const row = (await payin(invoice_reference))!;
    // The completed run is followed by a new one (signal-with-start): it must be as findable in the Web UI.
    await signalPayin(harness.platform.deps, row, { status: 'close', amount_units: 0n, trx_ref: 'TRX-REDRIVEN' });
    const described = await harness.platform.deps.temporal.client.workflow.getHandle(invoice_reference).describe();
    expect(Object.fromEntries(['PaymentOwnerId', 'PaymentKind', 'PaymentAmountUnits', 'PaymentCurrency'].map((name) => [name, described.searchAttributes[name]?.[0]]))).toEqual({
      PaymentOwnerId: `merchant:${merchant.merchant_id}`,
      PaymentKind: 'payin',
      PaymentAmountUnits: 4_000_000,
      PaymentCurrency: 'USDT',
    });
    await harness.platform.deps.temporal.client.workflow.getHandle(invoice_reference).result();
  }, 40_000);

  it('re-drives the signal of an applied notification when its repeat arrives and the payin does not show it', async () => {
    const before = await walletUnits();
    const invoice_reference = await create('6');
    const trx_ref = `TRX-REDRIVE-${invoice_reference}`;
    const body = JSON.stringify({ invoice_reference, status: 'success', amount: 6, currency: 'USDT', trx_ref });
    // The notification was recorded and marked applied, then its signal never reached Temporal (it was down, or the
    // process died right after the commit): exactly the row the first delivery leaves behind.
    await harness.platform.deps.database('upstream_notifications').insert({
      idempotency_key: `${invoice_reference}|success|${trx_ref}|6000000`,
      invoice_reference,
      status: 'success',
      amount_units: '6000000',
      trx_ref,
      raw_body: body,
      outcome: 'applied',
    });
    const repeat = await post(harness.platform.facadeUrl, '/api/v1/upstream/notifications', body, {
      'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, body),
    });
    expect(repeat.status).toBe(200);
    expect(repeat.json.data).toMatchObject({ applied: false });
    const settled = await eventually(async () => ((await payin(invoice_reference))?.status === 'success' ? payin(invoice_reference) : undefined), 20_000);
    expect(settled).toMatchObject({ paid_amount_units: 6_000_000n, trx_ref });
    expect((await walletUnits()) - before).toBe(6_000_000n - 60_000n);
  }, 40_000);

  it('credits and announces a second payment to a settled payin, once', async () => {
    const invoice_reference = await create('7');
    expect((await notify(invoice_reference, '7', `TRX-FIRST-${invoice_reference}`)).json.data).toMatchObject({ applied: true });
    await eventually(async () => (await payin(invoice_reference))?.status === 'success', 20_000);
    const before = await walletUnits();
    const second = await notify(invoice_reference, '2', `TRX-SECOND-${invoice_reference}`);
    expect(second.json.data).toMatchObject({ applied: true });
    const [announced] = await harness.receiver.waitFor(
      (received) => received.some((item) => item.json.event === 'payin.additional_payment' && item.json.data.invoice_reference === invoice_reference),
      20_000,
    ).then((received) => received.filter((item) => item.json.event === 'payin.additional_payment' && item.json.data.invoice_reference === invoice_reference));
    expect(announced!.json.data).toMatchObject({ amount: 2, fee: 0.02, trx_ref: `TRX-SECOND-${invoice_reference}`, status: 'success' });
    expect(announced!.signature_valid).toBe(true);
    expect((await walletUnits()) - before).toBe(2_000_000n - 20_000n);
    // The provider repeats the second notification: nothing moves again.
    expect((await notify(invoice_reference, '2', `TRX-SECOND-${invoice_reference}`)).json.data).toMatchObject({ applied: false });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await walletUnits()) - before).toBe(2_000_000n - 20_000n);
    expect(await payin(invoice_reference)).toMatchObject({ status: 'success', paid_amount_units: 7_000_000n });
  }, 40_000);
});
