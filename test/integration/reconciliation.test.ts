/**
 * Reconciliation (docs/operations.md "Reconciliation") finds what a fault leaves behind and repairs it through the
 * flow's own idempotent path: each case below builds the exact state a killed process or a lost Temporal call
 * leaves (a notification recorded as applied whose signal never left, a pre-transfer whose workflow is gone past
 * its expiry, a webhook event nobody delivers), checks that a report-only run lists it and changes nothing, that a
 * repairing run fixes it once, and that the next run finds nothing.
 */
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { listEvents, recordEvent } from '../../src/events';
import { reconciliationWorkflowId } from '../../src/flows/reconciliation/contract';
import { reconcileNow as reconcileWith, startReconciliationSchedule } from '../../src/flows/reconciliation/service';
import { createReconciliationRepairs } from '../../src/activities';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { createPartner } from '../../src/onboarding/partners';
import { createUser } from '../../src/onboarding/users';
import { generatePartnerKeys, PartnerClient } from '../support/partner-client';
import { createTestMerchant, eventually, post, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';

describe('reconciliation', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;
  let counter = 0;
  const nextOrder = () => `RECON-${Date.now()}-${(counter += 1)}`;

  beforeAll(async () => {
    harness = await startPayinHarness({ env: { PAYIN_TTL_SECONDS: '600', PRE_TRANSFER_TTL_SECONDS: '600' } });
    merchant = await createTestMerchant(harness);
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
  });
  afterAll(() => harness.stop());

  const deps = () => harness.platform.deps;
  /** One reconciliation now, repairing through the flows as the AdminService's does. */
  const reconcileNow = (options: { repair: boolean; grace_seconds: number }) => reconcileWith(deps(), createReconciliationRepairs(deps()), options);
  const base = () => harness.platform.facadeUrl;
  const merchantUsdt = async () => {
    const wallet = (await deps().ledger.accountsOf('merchant', merchant.merchant_id)).find((account) => account.kind === 'wallet' && account.currency === 'USDT')!;
    return wallet.posted_units;
  };
  const ours = (report: Awaited<ReturnType<typeof reconcileNow>>, id: string) => report.findings.filter((finding) => finding.id === id);

  it('credits a payment whose notification was recorded as applied but whose signal never reached the workflow', async () => {
    const created = await post(base(), '/api/v1/payins', JSON.stringify({ amount: 3, out_trade_no: nextOrder() }), { 'X-API-Key': merchant.api_key });
    expect(created.status).toBe(200);
    const invoice_reference = created.json.data.invoice_reference as string;
    // What B4 leaves when its process dies right after committing the notification (or Temporal refuses the signal).
    const body = JSON.stringify({ invoice_reference, status: 'success', amount: 3, trx_ref: `TRX-${invoice_reference}` });
    await deps().database('upstream_notifications').insert({
      idempotency_key: `${invoice_reference}|success|TRX-${invoice_reference}|3000000`,
      invoice_reference,
      status: 'success',
      amount_units: '3000000',
      trx_ref: `TRX-${invoice_reference}`,
      raw_body: body,
      outcome: 'applied',
      received_at: new Date(Date.now() - 60_000),
    });
    const before = await merchantUsdt();

    const report = await reconcileNow({ repair: false, grace_seconds: 30 });
    expect(ours(report, invoice_reference)).toEqual([expect.objectContaining({ kind: 'notification_not_credited', action: 'reported' })]);
    expect(await merchantUsdt()).toBe(before);

    const repaired = await reconcileNow({ repair: true, grace_seconds: 30 });
    expect(ours(repaired, invoice_reference)).toEqual([expect.objectContaining({ kind: 'notification_not_credited', action: 'repaired' })]);
    const payin = await eventually(async () => {
      const row = await deps().database('payins').where({ invoice_reference }).first();
      return row.status === 'success' ? row : undefined;
    });
    expect(payin.paid_amount_units).toBe(3_000_000n);
    // Paid 3 USDT, fee 1 % charged in the same ledger transaction.
    expect(await merchantUsdt()).toBe(before + 3_000_000n - 30_000n);

    // Idempotent: the next run finds nothing for it, and a repeated repair credits nothing twice.
    expect(ours(await reconcileNow({ repair: true, grace_seconds: 30 }), invoice_reference)).toEqual([]);
    expect(await merchantUsdt()).toBe(before + 3_000_000n - 30_000n);
    // The provider's repeat of that notification changes nothing either.
    const repeat = await post(base(), '/api/v1/upstream/notifications', body, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, body) });
    expect(repeat.status).toBe(200);
    expect(await merchantUsdt()).toBe(before + 3_000_000n - 30_000n);
  });

  it('decides a notification recorded by a process that died before deciding it', async () => {
    const created = await post(base(), '/api/v1/payins', JSON.stringify({ amount: 2, out_trade_no: nextOrder() }), { 'X-API-Key': merchant.api_key });
    const invoice_reference = created.json.data.invoice_reference as string;
    await deps().database('upstream_notifications').insert({
      idempotency_key: `${invoice_reference}|success|TRX2-${invoice_reference}|2000000`,
      invoice_reference,
      status: 'success',
      amount_units: '2000000',
      trx_ref: `TRX2-${invoice_reference}`,
      raw_body: '{}',
      outcome: 'received',
      received_at: new Date(Date.now() - 60_000),
    });
    const repaired = await reconcileNow({ repair: true, grace_seconds: 30 });
    expect(ours(repaired, invoice_reference)).toEqual([expect.objectContaining({ kind: 'notification_undecided', action: 'repaired' })]);
    await eventually(async () => (await deps().database('payins').where({ invoice_reference }).first()).status === 'success');
    expect((await deps().database('upstream_notifications').where({ invoice_reference }).first()).outcome).toBe('applied');
  });

  it('voids a pre-transfer hold past its expiry whose workflow is gone', async () => {
    const keys = generatePartnerKeys();
    const { partner: created, credentials } = await createPartner(deps(), { name: 'Recon Partner', public_key_pem: keys.publicKeyPem, float_units: 10_000n });
    await createUser(deps(), { phone_number: '012700300', first_name: 'Re', last_name: 'Con', currency: 'USD' });
    const partner = new PartnerClient(base(), credentials, keys, deps().keys.publicKeyPem);
    expect((await partner.token()).status).toBe(200);
    const reply = await partner.gateway({ service: 'create.unified.fundTransfer', out_trade_no: 'RECON1', receiver_id: '012700300', sender_name: 'Chan Vanna', amount: 12.5, currency: 'USD' });
    expect(reply.status).toBe(200);
    const pre_transfer_id = (reply.body.data as { pre_transfer_id: string }).pre_transfer_id;
    const available = async () => (await deps().ledger.getAccount(created.float_account_id)).available_units;
    expect(await available()).toBe(10_000n - 1_250n);
    // The workflow is lost (terminated by an operator, or its history deleted) and the expiry passed.
    await deps().temporal.client.workflow.getHandle(pre_transfer_id).terminate('lost');
    await deps().database('pre_transfers').where({ id: pre_transfer_id }).update({ expires_at: new Date(Date.now() - 60_000) });

    const report = await reconcileNow({ repair: false, grace_seconds: 30 });
    expect(ours(report, pre_transfer_id)).toEqual([expect.objectContaining({ kind: 'hold_past_expiry', action: 'reported' })]);
    expect(await available()).toBe(10_000n - 1_250n);

    const repaired = await reconcileNow({ repair: true, grace_seconds: 30 });
    expect(ours(repaired, pre_transfer_id)).toEqual([expect.objectContaining({ kind: 'hold_past_expiry', action: 'repaired' })]);
    expect(await available()).toBe(10_000n);
    expect((await deps().database('pre_transfers').where({ id: pre_transfer_id }).first()).state).toBe('expired');
    expect(ours(await reconcileNow({ repair: true, grace_seconds: 30 }), pre_transfer_id)).toEqual([]);
    const query = await partner.gateway({ service: 'query.fundTransfer', out_trade_no: 'RECON1' });
    expect(query.body).toMatchObject({ success: false, error_code: 'EXPIRED' });
  });

  it('delivers a webhook event that no workflow is delivering', async () => {
    const id = `WH-RECON-${Date.now()}`;
    const body = JSON.stringify({ success: true, code: 200, data: { invoice_reference: 'PAYIN-RECON', status: 'success' }, event: 'payin.success' });
    await deps().database('webhook_events').insert({
      id,
      merchant_id: merchant.merchant_id,
      invoice_reference: 'PAYIN-RECON',
      event: 'payin.success',
      body,
      callback_url: harness.receiver.url,
      signature_header: merchant.signature_header,
      status: 'pending',
      created_at: new Date(Date.now() - 60_000),
    });
    const repaired = await reconcileNow({ repair: true, grace_seconds: 30 });
    expect(ours(repaired, id)).toEqual([expect.objectContaining({ kind: 'webhook_stalled', action: 'repaired' })]);
    await eventually(async () => (await deps().database('webhook_events').where({ id }).first()).status === 'delivered');
    expect(harness.receiver.received.filter((request) => request.headers['x-webhook-id'] === id)).toHaveLength(1);
  });

  it('repairs on its own schedule (the ReconciliationWorkflow), with no operator', async () => {
    const id = `WH-SCHED-${Date.now()}`;
    await deps().database('webhook_events').insert({
      id,
      merchant_id: merchant.merchant_id,
      invoice_reference: 'PAYIN-SCHED',
      event: 'payin.success',
      body: JSON.stringify({ success: true, code: 200, data: { invoice_reference: 'PAYIN-SCHED' }, event: 'payin.success' }),
      callback_url: harness.receiver.url,
      signature_header: merchant.signature_header,
      status: 'pending',
      created_at: new Date(Date.now() - 60_000),
    });
    const scheduled = { ...deps(), config: { ...deps().config, RECONCILE_INTERVAL_SECONDS: 1, RECONCILE_GRACE_SECONDS: 30 } };
    await startReconciliationSchedule(scheduled);
    // A second api process starting finds the schedule running.
    await startReconciliationSchedule(scheduled);
    try {
      await eventually(async () => (await deps().database('webhook_events').where({ id }).first()).status === 'delivered');
    } finally {
      await deps().temporal.client.workflow.getHandle(reconciliationWorkflowId(deps().temporal.taskQueue)).terminate('test over');
    }
  });

  it('purges client idempotency keys past their retention, keeps live ones and claims in flight, and only when repairing', async () => {
    const keys = () => deps().database('idempotency_keys').where({ scope: 'merchant:purge-test' });
    const row = (key: string, state: string, expires_seconds: number, locked_seconds: number) => ({
      scope: 'merchant:purge-test',
      key,
      operation: 'area-c.transfer',
      fingerprint: 'f'.repeat(64),
      state,
      locked_until: new Date(Date.now() + locked_seconds * 1000),
      expires_at: new Date(Date.now() + expires_seconds * 1000),
    });
    await keys().insert([
      row('expired', 'completed', -60, -120),
      row('expired-abandoned-claim', 'running', -60, -30),
      row('expired-claim-in-flight', 'running', -60, 30),
      row('live', 'completed', 3600, -60),
    ]);
    const reportOnly = await reconcileNow({ repair: false, grace_seconds: 30 });
    expect(reportOnly.idempotency_keys_purged).toBe(0);
    expect(await keys().count('* as count').first()).toEqual({ count: 4n });
    const repairing = await reconcileNow({ repair: true, grace_seconds: 30 });
    expect(repairing.idempotency_keys_purged).toBeGreaterThanOrEqual(2);
    expect((await keys().select('key').orderBy('key')).map((found: { key: string }) => found.key)).toEqual(['expired-claim-in-flight', 'live']);
  });

  it('purges events past EVENTS_RETENTION_DAYS only when repairing, keeping younger ones and the owner’s sequence', async () => {
    const owner = { type: 'merchant' as const, id: 'M-RETENTION' };
    const write = (subject: string) => deps().database.transaction((trx) => recordEvent(trx, { owner, subject, type: 'payin.created', data: {} }));
    for (const subject of ['PAYIN-OLD-1', 'PAYIN-OLD-2', 'PAYIN-YOUNG']) await write(subject);
    const days = deps().config.EVENTS_RETENTION_DAYS;
    await deps().database('events').where({ owner_id: owner.id }).whereIn('subject', ['PAYIN-OLD-1', 'PAYIN-OLD-2']).update({ created_at: new Date(Date.now() - (days + 1) * 86_400_000) });
    const kept = async () => (await listEvents(deps().database, { owner, after: 0n, limit: 10 })).events.map((event) => [event.seq, event.subject]);
    expect((await reconcileNow({ repair: false, grace_seconds: 30 })).events_purged).toBe(0);
    expect(await kept()).toHaveLength(3);
    expect((await reconcileNow({ repair: true, grace_seconds: 30 })).events_purged).toBeGreaterThanOrEqual(2);
    expect(await kept()).toEqual([[3n, 'PAYIN-YOUNG']]);
    // The sequence was never purged: the next event is 4, and a reader resuming after 3 misses nothing.
    await write('PAYIN-NEXT');
    expect((await listEvents(deps().database, { owner, after: 3n, limit: 10 })).events.map((event) => [event.seq, event.subject])).toEqual([[4n, 'PAYIN-NEXT']]);
  });

  it('reports a completed deposit whose ledger transaction does not exist, as the ledger reads it, and not one that has it', async () => {
    const posted = await deps().ledger.transfer({
      idempotency_key: `RECON-DEP-${Date.now()}`,
      description: 'a credited deposit',
      postings: [{ platform: 'settlement', currency: 'USD', amount_units: -1n }, { platform: 'fee_revenue', currency: 'USD', amount_units: 1n }],
    });
    const stamp = `${Date.now()}`;
    const deposit = (suffix: string, ledger_transaction_id: string | null) => ({
      reference: `DEPRECON${stamp}${suffix}`,
      token_sha256: `recon-${stamp}-${suffix}`,
      merchant_id: merchant.merchant_id,
      instrument_token: 'itk_recon',
      instrument_kind: 'visa_master',
      amount_units: 1,
      currency: 'USD',
      token_type: 2,
      state: 'completed',
      ledger_transaction_id,
      expires_at: new Date(Date.now() + 60_000),
      finished_at: new Date(Date.now() - 60_000),
    });
    const rows = [deposit('A', posted.id), deposit('B', '00000000-0000-4000-8000-000000000000'), deposit('C', null)];
    await deps().database('deposits').insert(rows);
    try {
      const report = await reconcileNow({ repair: false, grace_seconds: 30 });
      const found = report.findings.filter((finding) => finding.kind === 'deposit_not_credited' && finding.id.startsWith(`DEPRECON${stamp}`));
      expect(found.map((finding) => [finding.id, finding.action]).sort()).toEqual([
        [`DEPRECON${stamp}B`, 'reported'],
        [`DEPRECON${stamp}C`, 'reported'],
      ]);
    } finally {
      await deps().database('deposits').whereIn('reference', rows.map((row) => row.reference)).delete();
    }
  });

  it('ends with nothing left to repair and the ledger balanced', async () => {
    const report = await reconcileNow({ repair: false, grace_seconds: 0 });
    expect(report.findings.filter((finding) => finding.kind !== 'outbox_lag')).toEqual([]);
    expect((await deps().ledger.check()).ok).toBe(true);
  });
});
