/**
 * The Temporal worker: registers the workflow bundle (`workflows/`) and every capability's activities on
 * `TEMPORAL_TASK_QUEUE` (platform decisions §1).
 */
import { bundleWorkflowCode, NativeConnection, Runtime, Worker, type WorkerOptions, type WorkflowBundle, type WorkflowBundlePath } from '@temporalio/worker';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createActivities, type Activities } from './activities';
import type { PlatformDeps } from './platform-deps';
import { reachTemporal } from './temporal/client';
import { temporalConnectionOptions } from './temporal/connection-options';
import { assertPaymentSearchAttributes } from './temporal/search-attributes';
import { WORKFLOW_INTERCEPTOR_MODULE, type Tracing } from './tracing';

export const WORKFLOWS_PATH = require.resolve('../workflows');

/** The workflow bundle `npm run build` writes next to the compiled code (dist/workflow-bundle.js). */
export const PREBUILT_BUNDLE_FILE = 'workflow-bundle.js';

/** The same with the OpenTelemetry workflow interceptors (dist/workflow-bundle-traced.js), used when tracing is on. */
export const PREBUILT_TRACED_BUNDLE_FILE = 'workflow-bundle-traced.js';

/**
 * The prebuilt bundle when this is compiled code that has one (`npm run build`), else undefined: the worker then
 * bundles `workflows/` at start (the sources under tsx, `npm start` and tests).
 */
export function prebuiltBundle(traced = false): WorkflowBundlePath | undefined {
  if (!__filename.endsWith('.js')) return undefined;
  const file = path.join(__dirname, '..', traced ? PREBUILT_TRACED_BUNDLE_FILE : PREBUILT_BUNDLE_FILE);
  return existsSync(file) ? { codePath: file } : undefined;
}

/**
 * Bundles `workflows/` once (webpack, seconds); pass the result to several workers to skip re-bundling. `traced`
 * adds the OpenTelemetry workflow interceptors (src/tracing.ts) through the bundle's interceptor modules: the
 * workflows themselves never import them.
 */
export async function bundleWorkflows(options: { traced?: boolean } = {}): Promise<WorkflowBundle> {
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    logger: quietBundlerLogger,
    workflowInterceptorModules: options.traced ? [WORKFLOW_INTERCEPTOR_MODULE] : [],
  });
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (message: string) => process.stderr.write(`${message}\n`),
};

/**
 * Where the worker's workflow code comes from: the given bundle (with the interceptors when traced, see
 * `bundleWorkflows`), the prebuilt one, or `workflows/` bundled now.
 */
function workflowSource(bundle: WorkflowBundle | undefined, traced: boolean) {
  const prebuilt = bundle ? undefined : prebuiltBundle(traced);
  if (bundle) return { workflowBundle: bundle };
  return prebuilt ? { workflowBundle: prebuilt } : { workflowsPath: WORKFLOWS_PATH };
}

/**
 * The Temporal SDK's Prometheus exporter address (TEMPORAL_METRICS_HOST:TEMPORAL_METRICS_PORT), or undefined when
 * TEMPORAL_METRICS_PORT is 0.
 */
export function temporalMetricsAddress(config: Pick<PlatformDeps['config'], 'TEMPORAL_METRICS_HOST' | 'TEMPORAL_METRICS_PORT'>): string | undefined {
  if (config.TEMPORAL_METRICS_PORT === 0) return undefined;
  const host = config.TEMPORAL_METRICS_HOST.includes(':') && !config.TEMPORAL_METRICS_HOST.startsWith('[') ? `[${config.TEMPORAL_METRICS_HOST}]` : config.TEMPORAL_METRICS_HOST;
  return `${host}:${config.TEMPORAL_METRICS_PORT}`;
}

/** The worker options of `tracing`; `bundlesNow`: the worker bundles `workflows/` itself, with the interceptors. */
function tracingOptions(tracing: Tracing | undefined, bundlesNow: boolean) {
  if (!tracing) return {};
  const { interceptors, sinks } = tracing.workerOptions();
  return { sinks, interceptors: bundlesNow ? { ...interceptors, workflowModules: [WORKFLOW_INTERCEPTOR_MODULE] } : interceptors };
}

let runtimeInstalled = false;

export interface RunningWorker {
  /** The worker's own connection: a client on it may start workflows eagerly on this worker (src/temporal/client.ts). */
  connection: NativeConnection;
  /** Stops polling, lets running activities finish, then closes the connection. */
  shutdown(): Promise<void>;
}

/** The worker options the WORKER_* settings set (each 0 = the SDK's default, left out). */
export function workerTuning(config: PlatformDeps['config']): Partial<WorkerOptions> {
  const set = <K extends keyof WorkerOptions>(key: K, value: number): Partial<WorkerOptions> => (value > 0 ? ({ [key]: value } as Partial<WorkerOptions>) : {});
  return {
    ...set('maxConcurrentWorkflowTaskExecutions', config.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS),
    ...set('maxConcurrentActivityTaskExecutions', config.WORKER_MAX_CONCURRENT_ACTIVITIES),
    ...set('maxConcurrentLocalActivityExecutions', config.WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES),
    ...set('maxConcurrentWorkflowTaskPolls', config.WORKER_WORKFLOW_TASK_POLLERS),
    ...set('maxConcurrentActivityTaskPolls', config.WORKER_ACTIVITY_TASK_POLLERS),
    ...set('maxCachedWorkflows', config.WORKER_MAX_CACHED_WORKFLOWS),
  };
}

export async function startWorker(
  deps: PlatformDeps,
  options: {
    address: string;
    bundle?: WorkflowBundle;
    /** Wraps the activities before they are registered (fault-injection tests slow one step down). */
    wrapActivities?: (activities: Activities) => Activities;
    /** Traces workflows and activities (a given `bundle` must then be built with `bundleWorkflows({ traced: true })`). */
    tracing?: Tracing;
  },
): Promise<RunningWorker> {
  // The workflows upsert the payment search attributes: without them every such workflow task would fail until
  // they are registered, so a worker refuses to start instead.
  await assertPaymentSearchAttributes(deps.temporal.connection, deps.config.TEMPORAL_NAMESPACE);
  if (!runtimeInstalled) {
    // Once per process: the first worker's settings hold for every later one.
    const metricsAddress = temporalMetricsAddress(deps.config);
    Runtime.install({
      // The process's own handlers (src/cli/signals.ts) stop the worker in order: the SDK's would stop it alone on
      // SIGINT/SIGTERM and keep the process alive.
      shutdownSignals: [],
      ...(metricsAddress
        ? { telemetryOptions: { metrics: { prometheus: { bindAddress: metricsAddress, useSecondsForDurations: true } } } }
        : {}),
      logger: {
        log: () => undefined,
        trace: () => undefined,
        debug: () => undefined,
        info: () => undefined,
        warn: (message, meta) => deps.logger.warn({ temporal: meta }, message),
        error: (message, meta) => deps.logger.error({ temporal: meta }, message),
      },
    });
    runtimeInstalled = true;
  }
  const connection = await reachTemporal(options.address, () => NativeConnection.connect({ address: options.address, ...temporalConnectionOptions(deps.config) }));
  const worker = await Worker.create({
    connection,
    namespace: deps.config.TEMPORAL_NAMESPACE,
    taskQueue: deps.temporal.taskQueue,
    ...workflowSource(options.bundle, Boolean(options.tracing)),
    activities: (options.wrapActivities ?? ((activities: Activities) => activities))(createActivities(deps)),
    ...tracingOptions(options.tracing, !options.bundle && !prebuiltBundle(true)),
    shutdownGraceTime: `${deps.config.SHUTDOWN_GRACE_SECONDS}s`,
    ...workerTuning(deps.config),
  });
  const running = worker.run();
  return {
    connection,
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
