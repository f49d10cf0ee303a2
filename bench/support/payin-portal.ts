/**
 * The Area B portal as the payin benches drive it (events, refunds, timeline): the sandbox upstream, a merchant's
 * webhook receiver, every role in this process on the bench's database and Temporal, and one merchant; then payins
 * created through the façade, each PayinWorkflow started before the caller times anything.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { createLogger } from '../../src/logger';
import { freePort } from '../../src/net';
import { createMerchant } from '../../src/onboarding';
import type { PlatformDeps } from '../../src/platform-deps';
import { runRoles } from '../../src/runtime';
import { startSandboxUpstream, type SandboxUpstream } from '../../src/sandbox/upstream';
import { startMerchantReceiver, type MerchantReceiver } from '../../test/support/merchant-receiver';
import { measure, type BenchEnvironment } from './harness';

export interface PayinPortal {
  facadeUrl: string;
  deps: PlatformDeps;
  sandbox: SandboxUpstream;
  receiver: MerchantReceiver;
  merchantId: string;
  /** The merchant's Area B API key. */
  apiKey: string;
  /**
   * Creates `count` payins of 1.5 USDT (`out_trade_no` `<prefix>-<run>-<index>`), `concurrency` at a time, and waits
   * until the outbox has started every PayinWorkflow. @returns each payin's invoice reference and order number
   */
  createPayins(count: number, concurrency: number, prefix: string): Promise<Array<{ invoice: string; order: string }>>;
  /** Sends the upstream's success notification of one payin (1.5 USDT). @throws on an answer other than 200 */
  settle(invoice: string): Promise<void>;
  /** Stops the roles, the receiver and the sandbox (not the environment). */
  stop(): Promise<void>;
}

/** Starts the portal; `settings` are added to the bench environment's configuration. */
export async function startPayinPortal(environment: BenchEnvironment, merchantName: string, settings: Record<string, string> = {}): Promise<PayinPortal> {
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const step of stops.reverse()) await step().catch(() => undefined);
  };
  try {
    const secret = randomBytes(16).toString('hex');
    const sandbox = await startSandboxUpstream({ api_key: 'bench-key', webhook_secret: secret });
    stops.push(() => sandbox.close());
    const receiver = await startMerchantReceiver();
    stops.push(() => receiver.close());
    const port = await freePort();
    const config = environment.config({
      HTTP_PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      UPSTREAM_PAYIN_URL: sandbox.payinUrl,
      UPSTREAM_API_KEY: 'bench-key',
      UPSTREAM_WEBHOOK_SECRET: secret,
      PAYIN_TTL_SECONDS: '3600',
      // The benches read and write as fast as they can: no request-rate limit in the way.
      REQUESTS_PER_CALLER_PER_MINUTE: '0',
      ...settings,
    });
    const platform = await runRoles(config, ['api', 'facade', 'worker'], createLogger(process.env.BENCH_LOG_LEVEL ?? 'silent'));
    stops.push(() => platform.stop());
    const deps = platform.deps!;
    const { credentials } = await createMerchant(deps, { name: merchantName, callback_url: receiver.url });
    receiver.configure({ hmac_secret: credentials.hmac_secret, signature_header: credentials.signature_header });
    const runId = randomBytes(3).toString('hex');
    const createPayins = async (count: number, concurrency: number, prefix: string) => {
      const created: Array<{ invoice: string; order: string }> = [];
      await measure(count, concurrency, async (index) => {
        const order = `${prefix}-${runId}-${index}`;
        const response = await request(`${platform.facadeUrl}/api/v1/payins`, {
          method: 'POST',
          body: `{"amount": 1.5, "out_trade_no": "${order}"}`,
          headers: { 'content-type': 'application/json', 'x-api-key': credentials.api_key },
        });
        const text = await response.body.text();
        if (response.statusCode !== 200) throw new Error(`create ${response.statusCode}: ${text}`);
        created.push({ invoice: JSON.parse(text).data.invoice_reference as string, order });
      });
      // Every PayinWorkflow started before any settlement is timed.
      while (Number((await deps.database('payin_workflow_outbox').count('* as count').first())?.count ?? 0) > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      return created;
    };
    const settle = async (invoice: string) => {
      const answer = await sandbox.pay(invoice, '1.5');
      if (answer.status !== 200) throw new Error(`notification ${answer.status}: ${answer.body}`);
    };
    return { facadeUrl: platform.facadeUrl!, deps, sandbox, receiver, merchantId: credentials.merchant_id, apiKey: credentials.api_key, createPayins, settle, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
