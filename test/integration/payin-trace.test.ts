/**
 * One payin's traces (docs/operations.md "Traces"), collected in memory (the SDK's InMemorySpanExporter handed to the
 * platform, every role in this process with the traced workflow bundle): its creation is one trace from the façade's
 * HTTP span through the Connect RPC to its SQL statements and the upstream provider's HTTP call (undici), and, as
 * its workflow's start continues it from the outbox, the workflow, the local activity that settles the payment with
 * its SQL, and the webhook's delivery with its HTTP POSTs to the merchant. The payment's notification is a trace from
 * the façade through the RPC and the Temporal update to the run's handler. Log lines inside a trace carry its
 * `trace_id`.
 */
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { bundleWorkflows } from '../../src/worker';
import { createTestMerchant, eventually, settledPayin, startPayinHarness, type PayinHarness } from '../support/payin-setup';

const exporter = new InMemorySpanExporter();
const lines: Array<Record<string, unknown>> = [];

describe('a payin’s traces', () => {
  let harness: PayinHarness;
  beforeAll(async () => {
    harness = await startPayinHarness({
      env: { LOG_LEVEL: 'info' },
      platform: {
        spanExporter: exporter,
        bundleCode: (await bundleWorkflows({ traced: true })).code,
        logDestination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
      },
    });
  }, 120_000);
  afterAll(() => harness?.stop());

  it('show the façade, RPC, workflow, activity, SQL and HTTP spans, and the logs carry trace_id', async () => {
    const merchant = await createTestMerchant(harness);
    // The first delivery fails, so the delivery's activity logs a line inside the trace.
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, fail_first: 1 });
    const order = `ORDER-TRACE-${Date.now()}`;
    const invoice_reference = await settledPayin(harness, merchant, '10', order);
    await harness.receiver.waitFor((received) => received.some((item) => item.status === 200));
    const webhookUrl = new URL(harness.receiver.url);
    const upstreamUrl = new URL(harness.sandbox.payinUrl);
    const httpTo = (url: URL) => (span: ReadableSpan) =>
      span.kind === SpanKind.CLIENT && span.instrumentationScope.name.includes('undici') && String(span.attributes['url.full'] ?? '').startsWith(url.origin);
    // The workflow sandbox's spans reach the exporter through the worker's sink, after the run's task: wait for the
    // settlement's activity and both delivery attempts.
    await eventually(async () => {
      const names = exporter.getFinishedSpans().map((span) => span.name);
      return names.includes('RunActivity:settlePayin') && exporter.getFinishedSpans().filter(httpTo(webhookUrl)).length >= 2;
    }, 20_000);
    const all = exporter.getFinishedSpans();
    const byId = new Map(all.map((span) => [span.spanContext().spanId, span]));
    const parentOf = (span: ReadableSpan) => byId.get(span.parentSpanContext?.spanId ?? '');
    /** True when `ancestor` is above `span` in its trace. */
    const under = (span: ReadableSpan, ancestor: ReadableSpan) => {
      for (let at = parentOf(span); at; at = parentOf(at)) if (at === ancestor) return true;
      return false;
    };
    const names = (trace: ReadableSpan[]) => JSON.stringify(trace.map((span) => `${SpanKind[span.kind]} ${span.name}`));
    const one = (trace: ReadableSpan[], what: string, predicate: (span: ReadableSpan) => boolean) => {
      const found = trace.find(predicate);
      if (!found) throw new Error(`no ${what} span in ${names(trace)}`);
      return found;
    };
    const traceOf = (root: ReadableSpan) => all.filter((span) => span.spanContext().traceId === root.spanContext().traceId);
    const sql = (span: ReadableSpan) => span.kind === SpanKind.CLIENT && span.name.startsWith('pg.query:');

    // The creation: façade → RPC client → RPC server → its SQL and the upstream's HTTP call.
    const create = one(all, 'façade (create)', (span) => span.kind === SpanKind.SERVER && span.name === 'POST /api/v1/payins');
    const created = traceOf(create);
    const createClient = one(created, 'RPC client', (span) => span.kind === SpanKind.CLIENT && span.name === 'payments.payin.v1.PayinService/CreatePayin');
    const createServer = one(created, 'RPC server', (span) => span.kind === SpanKind.SERVER && span.name === 'payments.payin.v1.PayinService/CreatePayin');
    expect(parentOf(createClient)).toBe(create);
    expect(parentOf(createServer)).toBe(createClient);
    const statement = (span: ReadableSpan) => String(span.attributes['db.statement'] ?? span.attributes['db.query.text'] ?? '');
    const insert = one(created, 'SQL insert of the payin', (span) => sql(span) && /insert into "payins"/i.test(statement(span)));
    expect(under(insert, createServer)).toBe(true);
    // The statement's text only: its values (the merchant's order id here) never reach a span.
    expect(statement(insert)).toMatch(/\$1|\?/);
    expect(JSON.stringify(created.filter(sql).map((span) => span.attributes))).not.toContain(order);
    const upstream = one(created, 'upstream HTTP', httpTo(upstreamUrl));
    expect(under(upstream, createServer)).toBe(true);

    // The run continues the creating request's trace (its start waited in the outbox with the traceparent): the
    // workflow, the local activity that settles the payment with its SQL and ledger posting, and the webhook's
    // delivery with its HTTP POSTs to the merchant (the failed first attempt and the delivered one).
    const start = one(created, 'workflow start', (span) => span.name === 'StartWorkflow:payinWorkflow');
    const run = one(created, 'workflow', (span) => span.name === 'RunWorkflow:payinWorkflow');
    expect(under(run, start)).toBe(true);
    const settle = one(created, 'settling activity', (span) => span.name === 'RunActivity:settlePayin');
    expect(under(settle, run)).toBe(true);
    expect(under(one(created, 'ledger posting', (span) => span.name === 'ledger.transfer'), settle)).toBe(true);
    expect(created.some((span) => sql(span) && under(span, settle) && /^pg\.query:COMMIT/.test(span.name))).toBe(true);
    const delivery = created.filter(httpTo(webhookUrl));
    expect(delivery.map((span) => span.attributes['http.response.status_code']).sort()).toEqual([200, 500]);
    // The delivery's own workflow was started by the run (its start in the same trace).
    expect(under(one(created, 'delivery start', (span) => span.name === 'StartWorkflow:webhookDeliveryWorkflow'), run)).toBe(true);

    // The payment's notification is a trace of its own: façade → RPC → the Temporal update → the run's handler.
    const notify = one(all, 'façade (notification)', (span) => span.kind === SpanKind.SERVER && span.name === 'POST /api/v1/upstream/notifications');
    const paid = traceOf(notify);
    const notifyServer = one(paid, 'RPC server', (span) => span.kind === SpanKind.SERVER && span.name === 'payments.payin.v1.PayinService/ApplyUpstreamNotification');
    expect(under(notifyServer, notify)).toBe(true);
    const update = one(paid, 'Temporal update', (span) => span.name === 'UpdateWithStartWorkflow:notify');
    expect(under(update, notifyServer)).toBe(true);
    expect(under(one(paid, 'workflow update handler', (span) => span.name === 'HandleUpdate:notify'), update)).toBe(true);
    expect(paid.some((span) => sql(span) && under(span, notifyServer))).toBe(true);

    // Each log line written inside a trace names it: the delivery's failed attempt, in the payment's trace.
    const warned = lines.find((line) => line.msg === 'webhook failed');
    expect(invoice_reference).toBeDefined();
    expect(warned).toMatchObject({ trace_id: create.spanContext().traceId, span_id: expect.stringMatching(/^[0-9a-f]{16}$/) });
    for (const line of lines.filter((candidate) => candidate.trace_id !== undefined)) expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/);
  }, 120_000);
});
