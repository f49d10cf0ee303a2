/**
 * Requests while Temporal cannot be reached (a black-holed connection, the way a dead server or a partition looks):
 * no database transaction stays open across the Temporal call, and every Area A request answers SYSTEMERROR within
 * REQUEST_TIMEOUT_SECONDS instead of hanging. A create whose workflow could not start releases its hold and frees its
 * out_trade_no, so the partner's retry succeeds once Temporal is back.
 */
import net from 'node:net';
import { createLogger } from '../../src/logger';
import { releaseUnstartedPreTransfer } from '../../src/flows/pre-transfer/activities';
import { createPartner } from '../../src/onboarding/partners';
import { createUser } from '../../src/onboarding/users';
import { runRoles, type RunningPlatform } from '../../src/runtime';
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
