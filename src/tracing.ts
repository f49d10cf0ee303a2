/**
 * OpenTelemetry traces of one request through the platform (docs/operations.md "Traces"): the façade's HTTP server
 * span (HTTP auto-instrumentation, named after the Koa route pattern), the Connect RPC client and server spans
 * (interceptors below: the RPC hop is HTTP/2 or in process, which HTTP instrumentation does not see), the Temporal
 * client, workflow and activity spans (@temporalio/interceptors-opentelemetry-v2, the Temporal interceptors for the
 * OpenTelemetry 2.x SDK; the context travels in Temporal headers), the ledger operations the activities run, and
 * under them each SQL statement (@opentelemetry/instrumentation-pg: its text, never its parameters) and each outbound
 * HTTP call made with undici (@opentelemetry/instrumentation-undici: webhooks, the upstream provider), only within a
 * traced request or activity. Log lines carry the active `trace_id` (src/logger.ts).
 *
 * On only when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: otherwise `startTracing`
 * answers undefined without loading the SDK, and nothing is instrumented. Spans are batched (OTEL_BSP_* settings) and
 * sent by OTLP over HTTP (OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf or http/json; OTEL_EXPORTER_OTLP_HEADERS etc.
 * are read by the exporter). One provider per process, shared by every role and every `runRoles` of the process.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import type { Interceptor } from '@connectrpc/connect';
import type { ClientInterceptors } from '@temporalio/client';
import type { WorkerOptions } from '@temporalio/worker';
import { createRequire } from 'node:module';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Config } from './config';
import type { Ledger } from './ledger/types';

/** The OTel workflow interceptors, bundled into the workflow code when tracing is on (never imported by workflows/). */
export const WORKFLOW_INTERCEPTOR_MODULE = require.resolve('@temporalio/interceptors-opentelemetry-v2/lib/workflow-interceptors');

export interface Tracing {
  serviceName: string;
  /** Temporal client interceptors: a workflow start, signal or update carries the caller's trace context. */
  temporalClientInterceptors: ClientInterceptors;
  /** Worker options: activity interceptors and the sink that exports the workflow sandbox's spans. */
  workerOptions(): Pick<WorkerOptions, 'interceptors' | 'sinks'>;
  /** Connect interceptor of the caller (façade, CLI): a client span, its context sent as `traceparent`. */
  rpcClientInterceptor: Interceptor;
  /** Connect interceptor of the server: a server span, child of the caller's `traceparent` (or the active span). */
  rpcServerInterceptor: Interceptor;
  /** The ledger with a span around every operation. */
  traceLedger(ledger: Ledger): Ledger;
  /** Sends the spans ended so far. */
  flush(): Promise<void>;
  /** Releases this user of the provider; the last one flushes, shuts it down and removes the instrumentation. */
  shutdown(): Promise<void>;
}

/**
 * The active span's context as a W3C `traceparent`, to be kept with work another process (or a later moment) picks
 * up; undefined without tracing or outside any span. Reads only the API (nothing is loaded when tracing is off).
 */
export function activeTraceparent(): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** Runs `work` as a continuation of `traceparent`'s trace (as it is, without one). */
export function withTraceparent<T>(traceparent: string | null | undefined, work: () => T): T {
  if (!traceparent) return work();
  return context.with(propagation.extract(context.active(), { traceparent }), work);
}

/** The OTLP traces URL the configuration names, or undefined when tracing is off. */
export function tracesUrl(config: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'>): string | undefined {
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (config.OTEL_EXPORTER_OTLP_ENDPOINT) return `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
  return undefined;
}

/** `payments-<roles>` unless OTEL_SERVICE_NAME names the service. */
export function serviceName(config: Pick<Config, 'OTEL_SERVICE_NAME'>, roles: readonly string[]): string {
  return config.OTEL_SERVICE_NAME ?? `payments-${roles.join('-')}`;
}

const TRACER_NAME = 'payments-platform';

/** The ledger operations that get a span (the reads of a request are its RPC span's time). */
const LEDGER_OPERATIONS = ['openAccount', 'transfer', 'createPendingTransfer', 'postPendingTransfer', 'voidPendingTransfer'] as const;

interface Provider {
  users: number;
  tracing: Omit<Tracing, 'shutdown'>;
  close(): Promise<void>;
}

let provider: Provider | undefined;

/**
 * Starts tracing for this process when the configuration names an OTLP endpoint, or `exporter` is given (each span
 * handed to it as it ends: the tests' in-memory exporter); undefined (and nothing loaded) otherwise. A second call
 * while tracing runs shares the first provider (its service name and exporter).
 */
export async function startTracing(config: Config, roles: readonly string[], exporter?: SpanExporter): Promise<Tracing | undefined> {
  const url = tracesUrl(config);
  if (!url && !exporter) return undefined;
  provider ??= await createProvider(exporter ?? url!, config, serviceName(config, roles));
  provider.users += 1;
  let released = false;
  const shared = provider;
  return {
    ...shared.tracing,
    async shutdown() {
      if (released) return;
      released = true;
      shared.users -= 1;
      if (shared.users > 0) return;
      if (provider === shared) provider = undefined;
      await shared.close();
    },
  };
}

async function createProvider(target: string | SpanExporter, config: Config, name: string): Promise<Provider> {
  const [{ NodeTracerProvider, BatchSpanProcessor, SimpleSpanProcessor }, { defaultResource, resourceFromAttributes }, { registerInstrumentations }, { HttpInstrumentation }, { PgInstrumentation }, { UndiciInstrumentation }, otel] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/instrumentation'),
      import('@opentelemetry/instrumentation-http'),
      import('@opentelemetry/instrumentation-pg'),
      import('@opentelemetry/instrumentation-undici'),
      import('@temporalio/interceptors-opentelemetry-v2'),
    ]);
  let processor;
  if (typeof target === 'string') {
    const { OTLPTraceExporter } =
      config.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json'
        ? await import('@opentelemetry/exporter-trace-otlp-http')
        : await import('@opentelemetry/exporter-trace-otlp-proto');
    processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: target }));
  } else {
    processor = new SimpleSpanProcessor(target);
  }
  // The SDK's default resource (telemetry.sdk.*) with our service name, for the provider's spans and the workflow
  // sandbox's alike (SDK 2.x no longer merges the default into a given resource).
  const resource = defaultResource().merge(resourceFromAttributes({ 'service.name': name }));
  const tracerProvider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  // The AsyncLocalStorage context manager and the W3C trace context propagator, process-wide.
  tracerProvider.register();
  // SQL and undici calls only under a span of the platform's (a request, a workflow task's activity): the outbox's
  // and the schedules' polling alone would otherwise be a trace each. Statements are recorded without their values.
  const pg = new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false });
  const undici = new UndiciInstrumentation({ requireParentforSpans: true });
  const http = new HttpInstrumentation({
    // Scrapes are not requests of the platform.
    ignoreIncomingRequestHook: (request) => request.url === '/metrics',
    // Outbound calls (OTLP export aside, which is never traced) only within a traced request.
    requireParentforOutgoingSpans: true,
  });
  const uninstrument = registerInstrumentations({
    tracerProvider,
    instrumentations: [http, pg, undici],
  });
  // The hook patches `http` when it is next required: the modules loaded it before tracing started, so require it
  // once more through Node's loader (the same module object, patched in place).
  const nodeRequire = createRequire(__filename);
  nodeRequire('http');
  nodeRequire('https');
  // And the modules as this file's loader sees them: the same objects under Node (patched once), jest's own else.
  const unpatch = [patchLoaded(http, { http: require('node:http'), https: require('node:https') }), patchLoaded(pg, { pg: require('pg') })];
  const tracer = trace.getTracer(TRACER_NAME);
  return {
    users: 0,
    tracing: {
      serviceName: name,
      temporalClientInterceptors: { workflow: [new otel.OpenTelemetryWorkflowClientInterceptor()] },
      workerOptions: () => ({
        interceptors: {
          activity: [
            (ctx) => ({
              inbound: new otel.OpenTelemetryActivityInboundInterceptor(ctx),
              outbound: new otel.OpenTelemetryActivityOutboundInterceptor(ctx),
            }),
          ],
        },
        sinks: { exporter: otel.makeWorkflowExporter(processor, resource) },
      }),
      rpcClientInterceptor: rpcClientInterceptor(tracer),
      rpcServerInterceptor: rpcServerInterceptor(tracer),
      traceLedger: (ledger) => traceLedger(ledger, tracer),
      flush: () => tracerProvider.forceFlush(),
    },
    async close() {
      uninstrument();
      for (const undo of unpatch) undo();
      try {
        await tracerProvider.shutdown();
      } finally {
        trace.disable();
        context.disable();
        propagation.disable();
      }
    },
  };
}

/** What patchLoaded needs of an instrumentation: its module definitions, each with its patch and unpatch. */
interface PatchableInstrumentation {
  getModuleDefinitions(): Array<{ name: string; patch?: (exports: unknown, version?: string) => unknown; unpatch?: (exports: unknown, version?: string) => unknown }>;
}

/**
 * Applies an instrumentation's patches to modules as this process's code loaded them (`modules`: name → exports).
 * The loader hook patches a module only when it is required after tracing started, through Node's own loader: one
 * loaded before, or through another loader (jest's), would stay untraced. Patching a module twice is harmless (the
 * pg instrumentation unwraps before it wraps; the http one skips a module it patched).
 * @returns the function that removes the patches applied here
 */
function patchLoaded(instrumentation: PatchableInstrumentation, modules: Record<string, unknown>): () => void {
  const applied: Array<() => void> = [];
  for (const definition of instrumentation.getModuleDefinitions()) {
    const exports = modules[definition.name];
    if (exports === undefined) continue;
    definition.patch?.(exports);
    applied.push(() => void definition.unpatch?.(exports));
  }
  return () => applied.forEach((unpatch) => unpatch());
}

/** Runs `work` in a new active span that ends with it (an error status when it throws). */
async function inSpan<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}

function rpcAttributes(request: { service: { typeName: string }; method: { name: string } }) {
  return { 'rpc.system': 'connect_rpc', 'rpc.service': request.service.typeName, 'rpc.method': request.method.name };
}

function rpcClientInterceptor(tracer: Tracer): Interceptor {
  return (next) => (request) => {
    const span = tracer.startSpan(`${request.service.typeName}/${request.method.name}`, { kind: SpanKind.CLIENT, attributes: rpcAttributes(request) });
    const active = trace.setSpan(context.active(), span);
    propagation.inject(active, request.header, { set: (headers, key, value) => headers.set(key, value) });
    return context.with(active, () => inSpan(span, () => next(request)));
  };
}

function rpcServerInterceptor(tracer: Tracer): Interceptor {
  return (next) => (request) => {
    // A network call carries its caller's context as `traceparent`; an in-process call has it active already.
    const parent = propagation.extract(context.active(), request.header, {
      get: (headers, key) => headers.get(key) ?? undefined,
      keys: (headers) => [...headers.keys()],
    });
    const span = tracer.startSpan(`${request.service.typeName}/${request.method.name}`, { kind: SpanKind.SERVER, attributes: rpcAttributes(request) }, parent);
    return context.with(trace.setSpan(parent, span), () => inSpan(span, () => next(request)));
  };
}

function traceLedger(ledger: Ledger, tracer: Tracer): Ledger {
  const traced: Ledger = { ...ledger };
  for (const operation of LEDGER_OPERATIONS) {
    const original = ledger[operation] as (...args: unknown[]) => Promise<unknown>;
    (traced as unknown as Record<string, unknown>)[operation] = (...args: unknown[]) =>
      tracer.startActiveSpan(`ledger.${operation}`, { kind: SpanKind.INTERNAL }, (span) => inSpan(span, () => original.apply(ledger, args)));
  }
  return traced;
}
