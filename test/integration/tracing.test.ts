/**
 * OpenTelemetry traces (docs/operations.md "Traces"): with OTEL_EXPORTER_OTLP_ENDPOINT set, one Area A confirm
 * (A2 confirm.fundTransfer) is one trace: the façade's HTTP span, the Connect RPC client and server spans, the
 * Temporal update, the workflow's update handler, the activity and the ledger posting, all under one traceId and
 * sent by OTLP/HTTP (JSON here) to a receiver run by the test. Paths in span attributes are route patterns.
 *
 * The production topology: the façade is a `payments serve --roles facade` process (HTTP instrumentation needs
 * Node's own module loader, which jest replaces) calling the api and worker roles of this process over the network.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { listenOn } from '../../src/net';
import { createPartner, createUser } from '../../src/onboarding';
import { createServiceCredential } from '../../src/service-credentials';
import { bundleWorkflows } from '../../src/worker';
import { generatePartnerKeys, PartnerClient } from '../support/partner-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  service: string;
  attributes: Record<string, unknown>;
}

/** OTLP JSON (ExportTraceServiceRequest) to flat spans. */
function spansOf(body: {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: { stringValue?: string } }> };
    scopeSpans?: Array<{ spans?: Array<Omit<ReceivedSpan, 'service' | 'attributes'> & { attributes?: Array<{ key: string; value: Record<string, unknown> }> }> }>;
  }>;
}): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resource of body.resourceSpans ?? []) {
    const service = resource.resource?.attributes?.find((attribute) => attribute.key === 'service.name')?.value.stringValue ?? '';
    for (const scope of resource.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        const attributes = Object.fromEntries((span.attributes ?? []).map(({ key, value }) => [key, Object.values(value)[0]]));
        spans.push({ traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId, name: span.name, kind: span.kind, service, attributes });
      }
    }
  }
  return spans;
}

const BIN = path.join(__dirname, '..', '..', 'bin', 'payments');

/** Starts `payments serve --roles facade` against `rpcUrl`; resolves with its URL once it listens. */
async function startFacadeProcess(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--roles', 'facade'], {
    env: { ...process.env, HTTP_PORT: '0', LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`the façade did not start within 60 s:\n${seen}`)), 60_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /façade (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`the façade exited (${code}):\n${seen}`)));
  });
  return { child, url };
}

const SPAN_KIND_SERVER = 2;
const SPAN_KIND_CLIENT = 3;

describe('traces', () => {
  const received: ReceivedSpan[] = [];
  const receiver = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces' && request.headers['content-type']?.startsWith('application/json')) {
        received.push(...spansOf(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        response.writeHead(404).end();
      }
    });
  });
  let platform: TestPlatform;
  let facade: { child: ChildProcess; url: string } | undefined;
  const savedDelay = process.env.OTEL_BSP_SCHEDULE_DELAY;

  beforeAll(async () => {
    const { port } = await listenOn(receiver, 0, '127.0.0.1');
    // Export batches every 100 ms instead of 5 s (the façade process inherits it).
    process.env.OTEL_BSP_SCHEDULE_DELAY = '100';
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
    platform = await startTestPlatform({ env: otel, roles: ['api', 'worker'], bundleCode: (await bundleWorkflows({ traced: true })).code });
    const facadeToken = (await createServiceCredential(platform.deps.database, { name: 'traced facade', scopes: ['facade'] })).token;
    facade = await startFacadeProcess({ ...otel, RPC_URL: platform.rpcUrl, RPC_TOKEN: facadeToken, OTEL_SERVICE_NAME: 'payments-edge' });
  }, 90_000);

  afterAll(async () => {
    if (facade && facade.child.exitCode === null) {
      const exited = new Promise((resolve) => facade!.child.once('exit', resolve));
      facade.child.kill('SIGTERM');
      await exited;
    }
    await platform?.stop();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
    if (savedDelay === undefined) delete process.env.OTEL_BSP_SCHEDULE_DELAY;
    else process.env.OTEL_BSP_SCHEDULE_DELAY = savedDelay;
  });

  it('follow an Area A confirm from the façade through RPC, workflow and activity to the ledger under one traceId', async () => {
    const keys = generatePartnerKeys();
    const { credentials } = await createPartner(platform.deps, { name: 'Traced partner', public_key_pem: keys.publicKeyPem, float_units: 100_000n });
    const partner = new PartnerClient(facade!.url, credentials, keys, platform.deps.keys.publicKeyPem);
    expect((await partner.token()).status).toBe(200);
    const receiver = await createUser(platform.deps, { phone_number: '012345699', first_name: 'Dara', last_name: 'Sok', currency: 'USD' });
    const created = await partner.gateway({
      service: 'create.unified.fundTransfer',
      out_trade_no: `ORD${Date.now()}`,
      receiver_id: receiver.id,
      sender_name: 'Chan Vanna',
      amount: 12.5,
      currency: 'USD',
    });
    expect(created.status).toBe(200);
    const pre_transfer_id = String((created.body.data as { pre_transfer_id: unknown }).pre_transfer_id);
    const confirmed = await partner.gateway({ service: 'confirm.fundTransfer', pre_transfer_id, partner_transaction_id: `TX${Date.now()}` });
    expect(confirmed.status).toBe(200);

    // The façade span of the confirm names the gateway route; its trace (one Gateway RPC) must reach the ledger posting.
    const isConfirmRpc = (span: ReceivedSpan) =>
      span.kind === SPAN_KIND_SERVER && span.name.endsWith('/Gateway') && received.some((other) => other.traceId === span.traceId && other.name === 'ledger.postPendingTransfer');
    const deadline = Date.now() + 10_000;
    let trace: ReceivedSpan[] = [];
    while (Date.now() < deadline) {
      const rpc = received.find(isConfirmRpc);
      trace = rpc ? received.filter((span) => span.traceId === rpc.traceId) : [];
      if (trace.some((span) => span.name === 'ledger.postPendingTransfer') && trace.some((span) => span.name.startsWith('POST '))) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const names = trace.map((span) => span.name);
    const one = (predicate: (span: ReceivedSpan) => boolean, what: string): ReceivedSpan => {
      const span = trace.find(predicate);
      if (!span) throw new Error(`no ${what} span in the confirm's trace: ${JSON.stringify(names)} (all received: ${JSON.stringify(received.map((s) => s.name))})`);
      return span;
    };
    const edge = one((span) => span.kind === SPAN_KIND_SERVER && span.name === 'POST /partnerapi/v1/gateway', 'façade');
    const rpcClient = one((span) => span.kind === SPAN_KIND_CLIENT && span.name.endsWith('/Gateway'), 'RPC client');
    const rpcServer = one(isConfirmRpc, 'RPC server');
    const update = one((span) => span.name.startsWith('StartWorkflowUpdate:'), 'Temporal client update');
    const handler = one((span) => span.name.startsWith('HandleUpdate:'), 'workflow update handler');
    const activity = one((span) => span.name === 'RunActivity:postPreTransfer', 'activity');
    const ledger = one((span) => span.name === 'ledger.postPendingTransfer', 'ledger');

    // Parent links: façade → RPC client → RPC server → … → activity → ledger.
    expect(edge.parentSpanId ?? '').toBe('');
    expect(rpcClient.parentSpanId).toBe(edge.spanId);
    expect(rpcServer.parentSpanId).toBe(rpcClient.spanId);
    expect(ledger.parentSpanId).toBe(activity.spanId);
    // OTEL_SERVICE_NAME names the façade process; the api and worker roles default to payments-<roles>.
    for (const span of [edge, rpcClient]) expect(span.service).toBe('payments-edge');
    for (const span of [rpcServer, update, handler, activity, ledger]) expect(span.service).toBe('payments-api-worker');
    expect(edge.attributes['http.route']).toBe('/partnerapi/v1/gateway');
    expect(edge.attributes['http.target']).toBe('/partnerapi/v1/gateway');
  }, 30_000);
});
