/**
 * Requests while Temporal cannot be reached (a black-holed connection, the way a dead server or a partition looks):
 * no database transaction stays open across the Temporal call, and every Area A request answers SYSTEMERROR within
 * REQUEST_TIMEOUT_SECONDS instead of hanging (Areas B and C: below). A create whose workflow could not start releases its hold and frees its
 * out_trade_no, so the partner's retry succeeds once Temporal is back.
 */
import net from 'node:net';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { createLogger } from '../../src/logger';
import { releaseUnstartedPreTransfer } from '../../src/flows/pre-transfer/activities';
import { startRefundWorkflow } from '../../src/flows/refund/service';
import { startWebhookDeliveries } from '../../src/webhooks';
import { PAYIN_OUTBOX_TABLE } from '../../src/flows/payin/store';
import { freePort } from '../../src/net';
import { createMerchant, type MerchantCredentials } from '../../src/onboarding/merchants';
import { createPartner } from '../../src/onboarding/partners';
import { createUser } from '../../src/onboarding/users';
import { runRoles, type RunningPlatform } from '../../src/runtime';
import { startSandboxUpstream, type SandboxUpstream } from '../../src/sandbox/upstream';
import { newUser as newUserFor, tokenizeLocalCard as tokenizeLocalCardFor, userBalance } from '../support/deposit-setup';
import { onboardMerchantClient, type MerchantClient } from '../support/merchant-client';
import { eventually, post } from '../support/payin-setup';
import { generatePartnerKeys, PartnerClient } from '../support/partner-client';
import { startTestPlatform, testConfig, type TestPlatform } from '../support/platform';

/** A TCP proxy to Temporal that can stop forwarding (connections stay open, bytes go nowhere). */
async function startBlackholeProxy(target: string): Promise<{ address: string; blackhole: boolean; close(): Promise<void> }> {
  const [host, port] = target.split(':');
  const state = { blackhole: false };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.on('data', (chunk) => state.blackhole || upstream.write(chunk));
    upstream.on('data', (chunk) => state.blackhole || client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    get blackhole() {
      return state.blackhole;
    },
    set blackhole(value: boolean) {
      state.blackhole = value;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('Area A while Temporal cannot be reached', () => {
  let platform: TestPlatform;
  let proxy: Awaited<ReturnType<typeof startBlackholeProxy>>;
  let api: RunningPlatform;
  let partner: PartnerClient;
  let floatAccountId: string;

  beforeAll(async () => {
    platform = await startTestPlatform();
    proxy = await startBlackholeProxy(platform.config.TEMPORAL_ADDRESS!);
    // The api and façade roles reach Temporal through the proxy; the worker of `platform` keeps polling directly.
    api = await runRoles(
      testConfig({
        DATABASE_URL: platform.config.DATABASE_URL!,
        TEMPORAL_ADDRESS: proxy.address,
        TEMPORAL_TASK_QUEUE: platform.config.TEMPORAL_TASK_QUEUE,
        PLATFORM_KEY_DIR: platform.config.PLATFORM_KEY_DIR,
        REQUEST_TIMEOUT_SECONDS: '2',
      }),
      ['api', 'facade'],
      createLogger('silent'),
    );
    const keys = generatePartnerKeys();
    const { partner: created, credentials } = await createPartner(platform.deps, { name: 'Outage Partner', public_key_pem: keys.publicKeyPem, float_units: 10_000n });
    floatAccountId = created.float_account_id;
    partner = new PartnerClient(api.facadeUrl!, credentials, keys, platform.deps.keys.publicKeyPem);
    expect((await partner.token()).status).toBe(200);
    await createUser(platform.deps, { phone_number: '012700100', first_name: 'Out', last_name: 'Age', currency: 'USD' });
  });
  afterAll(async () => {
    await api?.stop();
    await proxy?.close();
    await platform?.stop();
  });

  const available = async () => (await platform.deps.ledger.getAccount(floatAccountId)).available_units;
  const idleInTransaction = async () =>
    Number(
      (
        await platform.deps.database.raw(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and state = 'idle in transaction'",
        )
      ).rows[0].n,
    );
  const create = (out_trade_no: string) =>
    partner.gateway({ service: 'create.unified.fundTransfer', out_trade_no, receiver_id: '012700100', sender_name: 'Chan Vanna', amount: 12.5, currency: 'USD' });

  it('answers a create with SYSTEMERROR, holds no transaction open meanwhile, and releases the hold', async () => {
    const before = await available();
    proxy.blackhole = true;
    try {
      const pending = create('OUTAGE1');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(await idleInTransaction()).toBe(0);
      const reply = await pending;
      expect(reply.status).toBe(500);
      expect(reply.body).toMatchObject({ success: false, error_code: 'SYSTEMERROR' });
    } finally {
      proxy.blackhole = false;
    }
    expect(await available()).toBe(before);
    expect(await platform.deps.database('pre_transfers').where({ out_trade_no: 'OUTAGE1' }).first()).toBeUndefined();

    // Temporal is back: the partner's retry with the same out_trade_no creates the pre-transfer.
    const retry = await create('OUTAGE1');
    expect(retry.status).toBe(200);
    expect(await available()).toBe(before - 1250n);
  }, 40_000);

  it('answers a confirm with SYSTEMERROR within the deadline while Temporal is unreachable, and confirms on retry', async () => {
    const created = await create('OUTAGE2');
    expect(created.status).toBe(200);
    const pre_transfer_id = (created.body.data as { pre_transfer_id: string }).pre_transfer_id;
    proxy.blackhole = true;
    let reply;
    try {
      reply = await partner.gateway({ service: 'confirm.fundTransfer', pre_transfer_id, partner_transaction_id: 'PTXOUTAGE2' });
    } finally {
      proxy.blackhole = false;
    }
    expect(reply.status).toBe(500);
    expect(reply.body).toMatchObject({ success: false, error_code: 'SYSTEMERROR' });
    const retry = await partner.gateway({ service: 'confirm.fundTransfer', pre_transfer_id, partner_transaction_id: 'PTXOUTAGE2' });
    // Either this retry confirms, or the first confirm went through after all and the retry is USED; the query tells.
    expect([200, 400]).toContain(retry.status);
    const query = await partner.gateway({ service: 'query.fundTransfer', out_trade_no: 'OUTAGE2' });
    expect(query.body).toMatchObject({ success: true, data: { result_code: 'SUCCESS' } });
  }, 40_000);

  it('gives up a webhook delivery start and a refund start at the deadline: the caller retries, nothing hangs', async () => {
    // Both run in activities and after commits, where a hung start would hold a workflow task or a request open for
    // as long as the client's own retries last; with the deadline each fails with DEADLINE_EXCEEDED, and its caller's
    // retry (the activity's, or reconciliation's) starts it once Temporal is back.
    const deps = api.deps!;
    proxy.blackhole = true;
    try {
      await expect(startWebhookDeliveries(deps, ['WH-OUTAGE-DEADLINE'])).rejects.toMatchObject({ reason: 'DEADLINE_EXCEEDED' });
      await expect(startRefundWorkflow(deps, 'RFD-OUTAGEDEADLINE0000000')).rejects.toMatchObject({ reason: 'DEADLINE_EXCEEDED' });
    } finally {
      proxy.blackhole = false;
    }
  }, 40_000);

  it('never answers a repeat with a pre-transfer that the first request then releases', async () => {
    const created = await create('OUTAGE3');
    expect(created.status).toBe(200);
    const pre_transfer_id = (created.body.data as { pre_transfer_id: string }).pre_transfer_id;
    // The first request's state just before its workflow start failed: row and hold committed, workflow not known to run.
    await platform.deps.temporal.client.workflow.getHandle(pre_transfer_id).terminate('start lost');
    await platform.deps.database('pre_transfers').where({ id: pre_transfer_id }).update({ workflow_started_at: null });
    // The partner's repeat arrives: it starts the workflow itself before answering.
    const repeat = await create('OUTAGE3');
    expect(repeat.status).toBe(200);
    expect((repeat.body.data as { pre_transfer_id: string }).pre_transfer_id).toBe(pre_transfer_id);
    // The first request's start now fails and it releases what it created: the repeat's pre-transfer stays.
    await releaseUnstartedPreTransfer(platform.deps, pre_transfer_id);
    expect(await platform.deps.database('pre_transfers').where({ id: pre_transfer_id }).first()).toMatchObject({ state: 'pending' });
    const confirmed = await partner.gateway({ service: 'confirm.fundTransfer', pre_transfer_id, partner_transaction_id: 'PTXOUTAGE3' });
    expect(confirmed.body).toMatchObject({ success: true, data: { result_code: 'SUCCESS' } });
  }, 40_000);
});

/**
 * Deposits and payins while the api cannot reach Temporal (the worker can): every workflow start and hand-over
 * happens after its record committed, so no connection stays `idle in transaction` across one; an upstream
 * notification is recorded and answered within the upstream's own 10 s (platform decisions §4), then applied once
 * Temporal is back.
 */
describe('Area B and C while Temporal cannot be reached', () => {
  let platform: TestPlatform;
  let proxy: Awaited<ReturnType<typeof startBlackholeProxy>>;
  let sandbox: SandboxUpstream;
  let api: RunningPlatform;
  let merchant: MerchantClient;
  let payinMerchant: MerchantCredentials;
  const UPSTREAM_SECRET = 'outage-upstream-secret';

  beforeAll(async () => {
    // Only the worker runs here (directly on Temporal); the api and façade, the outbox dispatcher with them, reach
    // Temporal through the proxy. A request gives Temporal 9 s (REQUEST_TIMEOUT_SECONDS 12).
    platform = await startTestPlatform({ roles: ['worker'] });
    proxy = await startBlackholeProxy(platform.config.TEMPORAL_ADDRESS!);
    sandbox = await startSandboxUpstream({ api_key: 'outage-upstream-key', webhook_secret: UPSTREAM_SECRET });
    const port = await freePort();
    api = await runRoles(
      testConfig({
        DATABASE_URL: platform.config.DATABASE_URL!,
        TEMPORAL_ADDRESS: proxy.address,
        TEMPORAL_TASK_QUEUE: platform.config.TEMPORAL_TASK_QUEUE,
        PLATFORM_KEY_DIR: platform.config.PLATFORM_KEY_DIR,
        REQUEST_TIMEOUT_SECONDS: '12',
        HTTP_PORT: String(port),
        PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
        UPSTREAM_PAYIN_URL: sandbox.payinUrl,
        UPSTREAM_API_KEY: 'outage-upstream-key',
        UPSTREAM_WEBHOOK_SECRET: UPSTREAM_SECRET,
        PAYIN_TTL_SECONDS: '3600',
      }),
      ['api', 'facade'],
      createLogger('silent'),
    );
    merchant = (await onboardMerchantClient(platform.deps, api.facadeUrl!, 'Outage Shop')).client;
    expect((await merchant.login()).status).toBe(200);
    payinMerchant = (await createMerchant(platform.deps, { name: 'Outage Payins', callback_url: 'http://127.0.0.1:9/never', payin_fee_percent: '1' })).credentials;
  });
  afterAll(async () => {
    await api?.stop();
    await proxy?.close();
    await sandbox?.close();
    await platform?.stop();
  });

  /** Connections of this database idle inside a transaction for over a second: one held open across a network call. */
  const idleInTransaction = async () =>
    Number(
      (
        await platform.deps.database.raw(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and state = 'idle in transaction' and now() - state_change > interval '1 second'",
        )
      ).rows[0].n,
    );
  /** The most such connections seen while `pending` runs (sampled every 250 ms). */
  const mostIdleInTransactionDuring = async (pending: Promise<unknown>) => {
    let most = 0;
    let done = false;
    void pending.finally(() => (done = true)).catch(() => undefined);
    while (!done) {
      most = Math.max(most, await idleInTransaction());
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    return most;
  };
  const during = async <T>(work: () => Promise<T>): Promise<T> => {
    proxy.blackhole = true;
    try {
      return await work();
    } finally {
      proxy.blackhole = false;
    }
  };

  it('records a deposit without holding a transaction across its workflow start; its confirmation starts the workflow later', async () => {
    const user = await newUserFor(merchant);
    const card = await tokenizeLocalCardFor(platform, merchant, user.id);
    const before = await userBalance(platform, user.id);
    const { started, most } = await during(async () => {
      const pending = merchant.action('deposit_by_local_card', { token: card, amount: 2, currency: 'USD' });
      const most = await mostIdleInTransactionDuring(pending);
      return { started: await pending, most };
    });
    expect(most).toBe(0);
    expect(started.status).toBe(200);
    const { reference, token } = started.body.data as { reference: string; token: string };
    expect(await platform.deps.database('deposits').where({ reference }).first()).toMatchObject({ state: 'pending' });

    // Temporal is back: the confirmation reaches the workflow (started now if the first start never got through).
    const confirmed = await merchant.action('confirm_payments', { user_id: user.id, token, password: platform.config.SANDBOX_OTP });
    expect(confirmed.status).toBe(200);
    expect(await userBalance(platform, user.id)).toBe(before + 200n);
  }, 60_000);

  it('starts the workflows of the payin outbox outside any transaction, and once Temporal is back', async () => {
    const invoice_reference = await during(async () => {
      const created = await post(api.facadeUrl!, '/api/v1/payins', `{"amount": 1, "out_trade_no": "OUTAGE-OUTBOX"}`, { 'X-API-Key': payinMerchant.api_key });
      expect(created.status).toBe(200);
      // The dispatcher sweeps every second: several start attempts fall in this window.
      expect(await mostIdleInTransactionDuring(new Promise((resolve) => setTimeout(resolve, 4000)))).toBe(0);
      return created.json.data.invoice_reference as string;
    });
    await eventually(async () => (await platform.deps.temporal.client.workflow.getHandle(invoice_reference).describe().catch(() => undefined))?.status.name === 'RUNNING', 40_000);
    await eventually(async () => (await platform.deps.database(PAYIN_OUTBOX_TABLE).where({ invoice_reference }).first()) === undefined, 20_000);
  }, 60_000);

  it('answers an upstream notification within 10 s, then settles the payin exactly once when Temporal is back', async () => {
    const created = await post(api.facadeUrl!, '/api/v1/payins', `{"amount": 3, "out_trade_no": "OUTAGE-NOTIFY"}`, { 'X-API-Key': payinMerchant.api_key });
    const invoice_reference = created.json.data.invoice_reference as string;
    await eventually(async () => (await platform.deps.temporal.client.workflow.getHandle(invoice_reference).describe().catch(() => undefined))?.status.name === 'RUNNING', 20_000);
    const wallet = async () =>
      (await platform.deps.ledger.accountsOf('merchant', payinMerchant.merchant_id)).find((account) => account.kind === 'wallet' && account.currency === 'USDT')?.posted_units ?? 0n;
    const before = await wallet();
    const body = JSON.stringify({ invoice_reference, status: 'success', amount: 3, currency: 'USDT', trx_ref: 'TRX-OUTAGE' });
    const answer = await during(async () => {
      // The upstream's own timeout (platform decisions §4): an answer after it counts as none.
      const response = await fetch(`${api.facadeUrl}/api/v1/upstream/notifications`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'x-upstream-signature': hmacSha256Hex(UPSTREAM_SECRET, body) },
        signal: AbortSignal.timeout(10_000),
      });
      return { status: response.status, json: (await response.json()) as { data: unknown } };
    });
    expect(answer.status).toBe(200);
    expect(answer.json.data).toEqual({ invoice_reference, status: 'waiting', applied: true });
    expect(await platform.deps.database('upstream_notifications').where({ invoice_reference }).first()).toMatchObject({ outcome: 'applied' });

    // Temporal is back: the notification is handed over and settles the payin, once.
    await eventually(async () => (await platform.deps.database('payins').where({ invoice_reference }).first())?.status === 'success', 40_000);
    expect(await wallet()).toBe(before + 3_000_000n - 30_000n);
    // The upstream repeats it: applied already, nothing moves again.
    const repeat = await post(api.facadeUrl!, '/api/v1/upstream/notifications', body, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_SECRET, body) });
    expect(repeat.json.data).toEqual({ invoice_reference, status: 'success', applied: false });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await wallet()).toBe(before + 3_000_000n - 30_000n);
    expect(await platform.deps.database('upstream_notifications').where({ invoice_reference }).first()).toMatchObject({ handed_at: expect.any(Date) });
  }, 90_000);
});
