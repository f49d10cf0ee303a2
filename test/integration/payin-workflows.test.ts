/**
 * PayinWorkflow and WebhookDeliveryWorkflow against real PostgreSQL and Temporal (platform decisions
 * §4, §5): expiry with a short PAYIN_TTL_SECONDS sends payin.expired; a success after expiry is still credited,
 * flagged late; the retry window ends in a failed delivery; a payin keeps its course across a worker restart.
 * The workflow-start outbox: a committed payin whose workflow was never started still expires at its expires_at;
 * a notification that arrives first starts the workflow itself, and the later dispatch starts no second run.
 */
import { readFileSync } from 'node:fs';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { setMerchantStatus, type MerchantCredentials } from '../../src/onboarding/merchants';
import { PAYIN_OUTBOX_TABLE } from '../../src/flows/payin/store';
import { newInvoiceReference } from '../../src/flows/payin/service';
import { startWorker } from '../../src/worker';
import { createTestMerchant, eventually, post, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';

const orders = { next: 0 };
const nextOrder = () => `WF-${Date.now()}-${(orders.next += 1)}`;

describe('payin expiry, late success and the retry window', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;
  beforeAll(async () => {
    harness = await startPayinHarness({ env: { PAYIN_TTL_SECONDS: '2', WEBHOOK_RETRY_WINDOW_SECONDS: '2' } });
    merchant = await createTestMerchant(harness);
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
  });
  afterAll(() => harness.stop());

  const create = async (amount: string) => {
    const out_trade_no = nextOrder();
    const response = await post(harness.platform.facadeUrl, '/api/v1/payins', `{"amount": ${amount}, "out_trade_no": "${out_trade_no}"}`, {
      'X-API-Key': merchant.api_key,
    });
    expect(response.status).toBe(200);
    return { out_trade_no, invoice_reference: response.json.data.invoice_reference as string };
  };
  const webhooksOf = (invoice_reference: string) => harness.receiver.received.filter((item) => item.json.data.invoice_reference === invoice_reference);

  it('expires after PAYIN_TTL_SECONDS with payin.expired, then credits a late success flagged late', async () => {
    const { out_trade_no, invoice_reference } = await create('5');
    await harness.receiver.waitFor(() => webhooksOf(invoice_reference).length >= 1);
    const [expired] = webhooksOf(invoice_reference);
    expect(expired!.json).toEqual({
      success: true,
      code: 200,
      event: 'payin.expired',
      data: {
        trx_ref: `SANDBOX-${invoice_reference}`,
        amount: 0,
        currency: 'USDT',
        fee: 0,
        invoice_reference,
        out_trade_no,
        status: 'expired',
        original_amount: 5,
      },
    });
    expect(expired!.headers['x-webhook-event']).toBe('payin.expired');
    const status = await post(harness.platform.facadeUrl, '/api/v1/payins/status', `{"out_trade_no": "${out_trade_no}"}`, { 'X-API-Key': merchant.api_key });
    expect(status.json.data.status).toBe('expired');

    // Money received after expiry is never dropped (§4).
    const answer = await harness.sandbox.pay(invoice_reference, '5');
    expect(answer.status).toBe(200);
    await harness.receiver.waitFor(() => webhooksOf(invoice_reference).length >= 2);
    const late = webhooksOf(invoice_reference)[1]!;
    expect(late.json.event).toBe('payin.success');
    expect(late.json.data).toMatchObject({ status: 'success', amount: 5, fee: 0.05, payment_match_status: 'exact' });
    expect(late.webhook_id).not.toBe(expired!.webhook_id);
    const row = await harness.platform.deps.database('payins').where({ invoice_reference }).first();
    expect(row).toMatchObject({ status: 'success', late: true, paid_amount_units: 5_000_000n, fee_units: 50_000n });
    const wallet = await harness.platform.deps.ledger.findAccount({ owner_type: 'merchant', owner_id: merchant.merchant_id, currency: 'USDT', kind: 'wallet' });
    expect(wallet!.available_units).toBe(4_950_000n);
  });

  it('a close notification after expiry changes nothing', async () => {
    const { invoice_reference } = await create('1');
    await harness.receiver.waitFor(() => webhooksOf(invoice_reference).length >= 1);
    const answer = await harness.sandbox.closePayin(invoice_reference);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).data).toEqual({ invoice_reference, status: 'expired', applied: false });
  });

  it('marks a delivery failed once WEBHOOK_RETRY_WINDOW_SECONDS have passed, every attempt recorded', async () => {
    const other = await createTestMerchant(harness);
    harness.receiver.configure({ hmac_secret: other.hmac_secret, fail_first: 1000 });
    try {
      const response = await post(harness.platform.facadeUrl, '/api/v1/payins', `{"amount": 1, "out_trade_no": "${nextOrder()}"}`, {
        'X-API-Key': other.api_key,
      });
      const invoice_reference = response.json.data.invoice_reference as string;
      const delivery = await eventually(async () => {
        const answer = await harness.platform.clients.payin.listWebhookDeliveries({ merchantId: other.merchant_id });
        const found = answer.deliveries.find((item) => item.invoiceReference === invoice_reference);
        return found?.status === 'failed' ? found : undefined;
      });
      // initial 0.2 s, doubling: waits 0.2 + 0.4 + 0.8 = 1.4 s fit the 2 s window, the next (1.6 s) does not.
      expect(delivery.attempts.map((attempt) => attempt.attempt)).toEqual([1, 2, 3, 4]);
      expect(delivery.attempts.every((attempt) => attempt.statusCode === 500 && attempt.error === 'HTTP 500')).toBe(true);
      expect(webhooksOf(invoice_reference)).toHaveLength(4);
    } finally {
      harness.receiver.configure({ hmac_secret: merchant.hmac_secret, fail_first: 0 });
    }
  });

  it('delivers a webhook the merchant accepts at once without a delivery workflow; a refused first attempt hands over to one', async () => {
    const client = harness.platform.deps.temporal.client;
    const accepted = await create('3');
    expect((await harness.sandbox.pay(accepted.invoice_reference, '3')).status).toBe(200);
    await harness.receiver.waitFor(() => webhooksOf(accepted.invoice_reference).some((item) => item.json.event === 'payin.success'));
    const acceptedId = webhooksOf(accepted.invoice_reference).find((item) => item.json.event === 'payin.success')!.webhook_id;
    const acceptedRow = await eventually(async () => {
      const row = await harness.platform.deps.database('webhook_events').where({ id: acceptedId }).first();
      return row?.status === 'delivered' ? row : undefined;
    });
    expect(acceptedRow).toMatchObject({ status: 'delivered', attempt_count: 1 });
    await expect(client.workflow.getHandle(acceptedId).describe()).rejects.toMatchObject({ name: 'WorkflowNotFoundError' });

    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, fail_first: 1 });
    try {
      const refused = await create('4');
      expect((await harness.sandbox.pay(refused.invoice_reference, '4')).status).toBe(200);
      await harness.receiver.waitFor(() => webhooksOf(refused.invoice_reference).filter((item) => item.json.event === 'payin.success').length >= 2);
      const deliveries = webhooksOf(refused.invoice_reference).filter((item) => item.json.event === 'payin.success');
      expect(deliveries.map((item) => item.headers['x-webhook-attempt'])).toEqual(['1', '2']);
      const refusedId = deliveries[0]!.webhook_id;
      const handle = client.workflow.getHandle(refusedId);
      expect(await handle.result()).toEqual({ delivered: true, attempts: 2 });
      const attempts = await harness.platform.deps.database('webhook_delivery_attempts').where({ webhook_id: refusedId }).orderBy('attempt');
      // The workflow backed off WEBHOOK_RETRY_INITIAL_SECONDS (0.2 s) after the inline attempt before the second.
      expect(attempts[1].attempted_at.getTime() - attempts[0].attempted_at.getTime()).toBeGreaterThanOrEqual(200);
    } finally {
      harness.receiver.configure({ hmac_secret: merchant.hmac_secret, fail_first: 0 });
    }
  });

  it('settles on the accounts a payin stored when it was created; one stored without them (before migration 038) resolves them', async () => {
    const { database, ledger } = harness.platform.deps;
    const walletBalance = async () =>
      (await ledger.findAccount({ owner_type: 'merchant', owner_id: merchant.merchant_id, currency: 'USDT', kind: 'wallet' }))!.available_units;
    const stored = await create('3');
    const wallet = await ledger.findAccount({ owner_type: 'merchant', owner_id: merchant.merchant_id, currency: 'USDT', kind: 'wallet' });
    const settlement = await ledger.platformAccount('settlement', 'USDT');
    const revenue = await ledger.platformAccount('fee_revenue', 'USDT');
    expect(await database('payins').where({ invoice_reference: stored.invoice_reference }).first('wallet_account_id', 'settlement_account_id', 'fee_revenue_account_id')).toEqual({
      wallet_account_id: wallet!.id,
      settlement_account_id: settlement.id,
      fee_revenue_account_id: revenue.id,
    });
    const older = await create('2');
    await database('payins').where({ invoice_reference: older.invoice_reference }).update({ wallet_account_id: null, settlement_account_id: null, fee_revenue_account_id: null });
    for (const [payin, amount, credited] of [[stored, '3', 2_970_000n], [older, '2', 1_980_000n]] as const) {
      const before = await walletBalance();
      expect((await harness.sandbox.pay(payin.invoice_reference, amount)).status).toBe(200);
      await harness.receiver.waitFor(() => webhooksOf(payin.invoice_reference).some((webhook) => webhook.json.event === 'payin.success'));
      expect((await walletBalance()) - before).toBe(credited);
    }
  });

  it("looks up a merchant's settlement accounts once per process, even for a burst of its creates", async () => {
    // Without it each create of a burst looked up three accounts on three more pool connections, beside its own
    // transaction; the lookup in flight is shared and its ids kept. (The cluster's 500s under a burst were the
    // foreign keys' deadlock, tested below, not this.)
    const burster = await createTestMerchant(harness);
    const { database } = harness.platform.deps;
    const accountStatements: string[] = [];
    const listener = (query: { sql: string }) => {
      if (/\bledger_accounts\b/.test(query.sql)) accountStatements.push(query.sql);
    };
    database.on('query', listener);
    try {
      const answers = await Promise.all(
        Array.from({ length: 12 }, () =>
          post(harness.platform.facadeUrl, '/api/v1/payins', `{"amount": 1, "out_trade_no": "${nextOrder()}"}`, { 'X-API-Key': burster.api_key }),
        ),
      );
      // The statements are what is measured: an answer may still be a 502 when the sandbox upstream is slow to answer.
      expect(answers.some((answer) => answer.status === 200)).toBe(true);
    } finally {
      database.removeListener('query', listener);
    }
    // At most two statements for each of the three: the wallet is an insert, then (when it existed) a read; a platform
    // account a read, then (when missing) an insert.
    expect(accountStatements.length).toBeGreaterThan(0);
    expect(accountStatements.length).toBeLessThanOrEqual(6);
    const stored = await database('payins').where({ merchant_id: burster.merchant_id }).whereNotNull('wallet_account_id').distinct('wallet_account_id', 'settlement_account_id', 'fee_revenue_account_id');
    expect(stored).toHaveLength(1);
  });

  it('keeps no foreign key from a payin to the ledger accounts, whose rows settlements hold FOR UPDATE', async () => {
    // A key check locks the referenced account rows FOR KEY SHARE in column order, settlements lock them FOR UPDATE in
    // id order: a burst of creates beside settlements deadlocked (a cluster answered 128 of 200 creates with 500).
    const keys = await harness.platform.deps.database.raw(
      `select conname from pg_constraint where contype = 'f' and conrelid = 'payins'::regclass and confrelid = 'ledger_accounts'::regclass`,
    );
    expect(keys.rows).toEqual([]);
  });

  it('leaves the ledger balanced', async () => {
    expect((await harness.platform.deps.ledger.check()).imbalances).toEqual([]);
  });
});

describe('worker restarted while payins wait', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;
  beforeAll(async () => {
    // A notification waits 1 s for a workflow that cannot answer (no worker), then is queued as a signal.
    harness = await startPayinHarness({ roles: ['api', 'facade'], env: { PAYIN_TTL_SECONDS: '4', NOTIFICATION_APPLY_WAIT_SECONDS: '1' } });
    merchant = await createTestMerchant(harness);
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
  });
  afterAll(() => harness.stop());

  it('still expires one payin and settles the other once a new worker polls', async () => {
    const bundle = { code: readFileSync(process.env.PAYMENTS_TEST_WORKFLOW_BUNDLE!, 'utf8') };
    const address = harness.platform.config.TEMPORAL_ADDRESS!;
    const first = await startWorker(harness.platform.deps, { address, bundle });
    const create = async () => {
      const response = await post(harness.platform.facadeUrl, '/api/v1/payins', `{"amount": 3, "out_trade_no": "${nextOrder()}"}`, {
        'X-API-Key': merchant.api_key,
      });
      expect(response.status).toBe(200);
      return response.json.data.invoice_reference as string;
    };
    const expiring = await create();
    const settling = await create();
    await first.shutdown();
    // Accepted although no worker can apply it: queued in the workflow, the payin still waiting.
    const accepted = await harness.sandbox.pay(settling, '3');
    expect(accepted.status).toBe(200);
    expect(JSON.parse(accepted.body).data).toEqual({ invoice_reference: settling, status: 'waiting', applied: true });
    // Past the TTL with no worker at all: nothing can have happened yet.
    await new Promise((resolve) => setTimeout(resolve, 4500));
    expect(harness.receiver.received).toHaveLength(0);
    const second = await startWorker(harness.platform.deps, { address, bundle });
    try {
      await harness.receiver.waitFor((list) => list.length >= 2, 45_000);
      const byInvoice = Object.fromEntries(harness.receiver.received.map((item) => [item.json.data.invoice_reference, item.json]));
      expect(byInvoice[expiring]).toMatchObject({ event: 'payin.expired', data: { status: 'expired' } });
      expect(byInvoice[settling]).toMatchObject({ event: 'payin.success', data: { status: 'success', amount: 3 } });
      const statuses = await harness.platform.deps.database('payins').whereIn('invoice_reference', [expiring, settling]).select('invoice_reference', 'status');
      expect(Object.fromEntries(statuses.map((row: { invoice_reference: string; status: string }) => [row.invoice_reference, row.status]))).toEqual({
        [expiring]: 'expired',
        [settling]: 'success',
      });
      expect((await harness.platform.deps.ledger.check()).imbalances).toEqual([]);
    } finally {
      await second.shutdown();
    }
  });
});

describe('workflow-start outbox and the credential cache', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;
  beforeAll(async () => {
    // A TTL far longer than the test: any expiry seen here comes from the payin's own expires_at.
    harness = await startPayinHarness({ env: { PAYIN_TTL_SECONDS: '3600', AUTH_CACHE_SECONDS: '1' } });
    merchant = await createTestMerchant(harness);
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
  });
  afterAll(() => harness.stop());

  const database = () => harness.platform.deps.database;
  /** A payin row as B1 commits it (before forwarding), with or without its outbox row. */
  const insertPayin = async (options: { expires_in_ms: number; outbox: boolean }) => {
    const invoice_reference = newInvoiceReference();
    await database()('payins').insert({
      invoice_reference,
      merchant_id: merchant.merchant_id,
      out_trade_no: nextOrder(),
      amount_units: 2_000_000n,
      fee_units: 20_000n,
      payin_fee_percent: '1.0',
      currency: 'USDT',
      status: 'waiting',
      expires_at: new Date(Date.now() + options.expires_in_ms),
    });
    if (options.outbox) await database()(PAYIN_OUTBOX_TABLE).insert({ invoice_reference });
    return invoice_reference;
  };
  const webhooksOf = (invoice_reference: string) => harness.receiver.received.filter((item) => item.json.data.invoice_reference === invoice_reference);

  it('starts the workflow of a committed payin left in the outbox, which expires at its expires_at', async () => {
    const started = Date.now();
    const invoice_reference = await insertPayin({ expires_in_ms: 1500, outbox: true });
    await harness.receiver.waitFor(() => webhooksOf(invoice_reference).length >= 1, 20_000);
    expect(webhooksOf(invoice_reference)[0]!.json).toMatchObject({ event: 'payin.expired', data: { status: 'expired' } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    expect(await database()(PAYIN_OUTBOX_TABLE).where({ invoice_reference }).first()).toBeUndefined();
    expect(await database()('payins').where({ invoice_reference }).first()).toMatchObject({ status: 'expired' });
  });

  it('settles a payin notified before its workflow started; the later dispatch starts no second run', async () => {
    const invoice_reference = await insertPayin({ expires_in_ms: 3_600_000, outbox: false });
    const body = `{"invoice_reference":"${invoice_reference}","status":"success","amount":2,"currency":"USDT","trx_ref":"0xabc"}`;
    const answer = await post(harness.platform.facadeUrl, '/api/v1/upstream/notifications', body, {
      'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, body),
    });
    expect(answer.json.data).toEqual({ invoice_reference, status: 'success', applied: true });
    await harness.receiver.waitFor(() => webhooksOf(invoice_reference).length >= 1, 20_000);
    const handle = harness.platform.deps.temporal.client.workflow.getHandle(invoice_reference);
    await eventually(async () => (await handle.describe()).status.name === 'COMPLETED');
    const { runId } = await handle.describe();
    // The outbox row of this payin is dispatched late: the workflow id was used, so nothing starts.
    await database()(PAYIN_OUTBOX_TABLE).insert({ invoice_reference });
    await eventually(async () => (await database()(PAYIN_OUTBOX_TABLE).where({ invoice_reference }).first()) === undefined);
    const latest = await handle.describe();
    expect([latest.runId, latest.status.name]).toEqual([runId, 'COMPLETED']);
    expect(webhooksOf(invoice_reference).map((item) => item.json.event)).toEqual(['payin.success']);
    expect(await database()('payins').where({ invoice_reference }).first()).toMatchObject({ status: 'success', paid_amount_units: 2_000_000n });
  });

  it('a suspension reaches B1 within AUTH_CACHE_SECONDS', async () => {
    const other = await createTestMerchant(harness);
    const create = () =>
      post(harness.platform.facadeUrl, '/api/v1/payins', `{"amount": 1, "out_trade_no": "${nextOrder()}"}`, { 'X-API-Key': other.api_key });
    expect((await create()).status).toBe(200);
    await setMerchantStatus(database(), other.merchant_id, 'suspended');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const refused = await create();
    expect(refused.status).toBe(403);
    expect(refused.json).toEqual({ success: false, message: 'Merchant account is suspended', errors: null });
  });

  it('leaves the ledger balanced', async () => {
    expect((await harness.platform.deps.ledger.check()).imbalances).toEqual([]);
  });
});
