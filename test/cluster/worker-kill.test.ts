/**
 * A worker process of the cluster killed (SIGKILL) in the middle of a burst of Area B payins (only run by
 * `npm run test:cluster`, against the cluster PAYMENTS_TEST_CLUSTER describes): CLUSTER_FAULT_PAYINS (200) payin
 * creations through the façade, each followed by the upstream's success notification, 16 at a time; one of the two
 * worker processes is killed once a fifth of them has been answered.
 *
 * Every request must succeed at its first attempt (no worker is on the request path: creation commits the payin and
 * its outbox row, the notification signals the workflow). After convergence: every PayinWorkflow completed, and each
 * one that closed after the kill (beyond the in-flight window) had its last workflow task completed by a worker other than the killed one; every
 * payin settled exactly once with its fee; every success webhook delivered; the merchant's balance is the sum of what
 * was paid less the fees (money difference 0); the ledger check is ok. Bounded: the whole scenario must end within
 * CLUSTER_FAULT_SECONDS (120).
 */
import os from 'node:os';
import { createDatabase, type Knex } from '../../src/db/knex';
import { hmacSha256Hex } from '../../src/crypto/hmac';
import { createPlatformClients, type PlatformClients } from '../../src/rpc/clients';
import { createServiceCredential } from '../../src/service-credentials';
import { connectTemporal, type TemporalHandle } from '../../src/temporal/client';
import { loadConfig } from '../../src/config';
import { temporalConnectionOptions } from '../../src/temporal/connection-options';
import { clusterRpcTls, clusterTemporalSettings, readClusterState, type ClusterState } from '../support/cluster';
import { converge, eachLimited, Histogram } from '../support/fault-harness';
import { startMerchantReceiver, type MerchantReceiver } from '../support/merchant-receiver';

const PAYINS = Number(process.env.CLUSTER_FAULT_PAYINS ?? 200);
const BOUND_SECONDS = Number(process.env.CLUSTER_FAULT_SECONDS ?? 120);
/** How long after the kill a completion the victim already had in flight may still reach the server (milliseconds). */
const IN_FLIGHT_MS = 2_000;

const state = readClusterState();
const describeCluster = state ? describe : describe.skip;

describeCluster('a cluster worker killed during a burst of payins', () => {
  const cluster = state as ClusterState;
  let database: Knex;
  let admin: PlatformClients;
  let temporal: TemporalHandle;
  let receiver: MerchantReceiver;
  let merchant: { merchantId: string; apiKey: string };

  beforeAll(async () => {
    if (!cluster.upstream) throw new Error('the cluster runs without the sandbox upstream: the burst needs it (PAYMENTS_MODE=test, no UPSTREAM_PAYIN_URL)');
    database = createDatabase(cluster.databaseUrl, 4);
    const { token } = await createServiceCredential(database, { name: 'cluster fault test', scopes: ['admin'] });
    admin = createPlatformClients(cluster.rpcUrl, { credentials: { token, tls: clusterRpcTls() } });
    temporal = await connectTemporal(cluster.temporalAddress, cluster.namespace, cluster.taskQueue, temporalConnectionOptions(loadConfig({ PAYMENTS_MODE: 'test', ...clusterTemporalSettings() })));
    receiver = await startMerchantReceiver();
    const created = await admin.admin.createMerchant({ name: 'Cluster Fault Merchant', callbackUrl: receiver.url, signatureHeader: 'X-Signature' });
    merchant = { merchantId: created.merchantId, apiKey: created.apiKey };
    receiver.configure({ hmac_secret: created.hmacSecret, signature_header: created.signatureHeader });
  });

  afterAll(async () => {
    await receiver?.close();
    await temporal?.close();
    await database?.destroy();
  });

  async function post(path: string, body: string, headers: Record<string, string>): Promise<{ status: number | 'error'; json?: Record<string, unknown>; elapsedMs: number }> {
    const started = Date.now();
    try {
      const response = await fetch(`${cluster.facadeUrl}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, signal: AbortSignal.timeout(30_000) });
      const text = await response.text();
      let json: Record<string, unknown> | undefined;
      try {
        json = JSON.parse(text) as Record<string, unknown>;
      } catch {
        json = undefined;
      }
      return { status: response.status, json, elapsedMs: Date.now() - started };
    } catch {
      return { status: 'error', elapsedMs: Date.now() - started };
    }
  }

  it(`answers all ${PAYINS} payins and their settlements, and completes every workflow on the surviving worker`, async () => {
    const started = Date.now();
    const workers = cluster.processes.filter((process) => process.role === 'worker');
    expect(workers.length).toBeGreaterThanOrEqual(2);
    const victim = workers[0]!;
    const victimIdentity = `${victim.pid}@${os.hostname()}`;
    const histogram = new Histogram();
    const failures: string[] = [];
    let answered = 0;
    let killedAt = 0;
    const kill = () => {
      if (killedAt) return;
      killedAt = Date.now();
      process.kill(victim.pid, 'SIGKILL');
    };
    const run = Date.now().toString(36);
    const payins = await eachLimited(Array.from({ length: PAYINS }), 16, async (_, index) => {
      const amount = (1 + (index % 7) * 0.25).toFixed(2);
      const units = BigInt(Math.round(Number(amount) * 100)) * 10_000n;
      const created = await post('/api/v1/payins', JSON.stringify({ amount: Number(amount), out_trade_no: `CLUSTER-${run}-${index}` }), { 'X-API-Key': merchant.apiKey });
      histogram.add(created.status, created.elapsedMs);
      if (created.status !== 200) {
        failures.push(`create ${index}: ${created.status} ${JSON.stringify(created.json)}`);
        return undefined;
      }
      const invoice = (created.json!.data as { invoice_reference: string }).invoice_reference;
      const notification = JSON.stringify({ invoice_reference: invoice, status: 'success', amount: Number(amount), trx_ref: `TRX-${invoice}` });
      const settled = await post('/api/v1/upstream/notifications', notification, { 'X-Upstream-Signature': hmacSha256Hex(cluster.upstream!.webhookSecret, notification) });
      histogram.add(settled.status, settled.elapsedMs);
      if (settled.status !== 200) failures.push(`notify ${invoice}: ${settled.status} ${JSON.stringify(settled.json)}`);
      answered += 1;
      if (answered === Math.ceil(PAYINS / 5)) kill();
      return { invoice, units };
    });
    const burstSeconds = (Date.now() - started) / 1000;
    expect(killedAt).toBeGreaterThan(0);
    // No failed request: every first attempt answered 200.
    expect(failures).toEqual([]);
    const invoices = payins.map((payin) => payin!.invoice);

    // Every PayinWorkflow completes (on the surviving worker) and every success webhook is delivered.
    const convergeSeconds = await converge('payin workflows completed and webhooks delivered', BOUND_SECONDS, async () => {
      const delivered = (await database('webhook_events').whereIn('invoice_reference', invoices).where({ status: 'delivered', event: 'payin.success' }).count('* as n').first()) as unknown as { n: string };
      if (Number(delivered.n) !== invoices.length) return false;
      const statuses = await Promise.all(invoices.map(async (invoice) => (await temporal.client.workflow.getHandle(invoice).describe()).status.name));
      return statuses.every((status) => status === 'COMPLETED');
    });

    // Who completed each workflow's tasks: a workflow that closed after the kill finished on a surviving worker.
    let touchedByVictim = 0;
    let closedBeforeKill = 0;
    const finishers = new Map<string, number>();
    await eachLimited(invoices, 16, async (invoice) => {
      const handle = temporal.client.workflow.getHandle(invoice);
      const history = await handle.fetchHistory();
      const identities = (history.events ?? []).map((event) => event.workflowTaskCompletedEventAttributes?.identity).filter((identity): identity is string => Boolean(identity));
      if (identities.includes(victimIdentity)) touchedByVictim += 1;
      // A task completion the victim sent just before SIGKILL landed is still committed by the server a moment later:
      // a workflow closing within IN_FLIGHT_MS of the kill may legitimately be the victim's last word.
      if ((await handle.describe()).closeTime!.getTime() < killedAt + IN_FLIGHT_MS) {
        closedBeforeKill += 1;
        return;
      }
      const last = identities.at(-1)!;
      finishers.set(last, (finishers.get(last) ?? 0) + 1);
    });
    expect(finishers.has(victimIdentity)).toBe(false);

    // Settled exactly once, with its fee; the merchant's balance is what was paid less the fees; the books balance.
    const rows = (await database('payins').whereIn('invoice_reference', invoices).select('status', 'amount_units', 'paid_amount_units', 'fee_units')) as Array<{
      status: string;
      amount_units: string;
      paid_amount_units: string | null;
      fee_units: string;
    }>;
    expect(rows.filter((row) => row.status !== 'success')).toEqual([]);
    for (const row of rows) expect(BigInt(row.paid_amount_units!)).toBe(BigInt(row.amount_units));
    const settlements = (await database('ledger_idempotency_keys').whereIn('idempotency_key', invoices.map((invoice) => `${invoice}:settle`)).count('* as n').first()) as unknown as { n: string };
    expect(Number(settlements.n)).toBe(invoices.length);
    const expected = rows.reduce((sum, row) => sum + BigInt(row.paid_amount_units!) - BigInt(row.fee_units), 0n);
    const balances = await admin.admin.getWalletBalances({ owner: { merchantId: merchant.merchantId } });
    const difference = BigInt(balances.wallets.find((wallet) => wallet.currency === 'USDT')!.balanceUnits) - expected;
    expect(difference).toBe(0n);
    const ledger = await admin.admin.checkLedger({});
    expect(ledger).toMatchObject({ ok: true, imbalances: [] });
    const seconds = (Date.now() - started) / 1000;
    expect(seconds).toBeLessThan(BOUND_SECONDS);

    process.stderr.write(
      [
        '',
        'cluster worker kill',
        `  requests ${PAYINS * 2} (${PAYINS} creations + ${PAYINS} settlements, 16 at a time), statuses ${histogram.toString()}`,
        `  worker pid ${victim.pid} killed (SIGKILL) ${((killedAt - started) / 1000).toFixed(1)} s into the burst (after ${Math.ceil(PAYINS / 5)} answered); burst ${burstSeconds.toFixed(1)} s`,
        `  ${touchedByVictim} of ${invoices.length} workflows had tasks completed by the killed worker; ${closedBeforeKill} closed before the kill; the last task of the ${invoices.length - closedBeforeKill} others completed by ${[...finishers.entries()].map(([identity, count]) => `${identity}×${count}`).join(', ')}`,
        `  every workflow completed and webhook delivered ${convergeSeconds.toFixed(1)} s after the burst; money difference ${difference} minor units; scenario ${seconds.toFixed(1)} s`,
        '',
      ].join('\n'),
    );
  }, (BOUND_SECONDS + 60) * 1000);
});
