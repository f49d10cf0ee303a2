/**
 * Runs any mix of the platform's roles in one process (platform decisions §1): `api` (Connect RPC server),
 * `facade` (Koa REST façade) and `worker` (Temporal worker); the api role also runs the payin outbox dispatcher
 * (src/payins/outbox.ts). `stop()` drains in order: façade, RPC, outbox dispatcher, worker, then closes the
 * database pool and the Temporal connection.
 */
import { Client } from '@temporalio/client';
import type { WorkflowBundle } from '@temporalio/worker';
import { createAreaRouters } from '../rest-facade/areas';
import { createFacadeApp, startFacade } from '../rest-facade/app';
import { ConfigError, isLoopbackHost, readConfiguredFile, type Config } from './config';
import { DEMO_SETTING_KEY } from './onboarding/demo';
import { keysMayBeCreated, verifyDataKeys } from './admin/key-registry';
import { KeyFileError, loadPlatformKeys, missingKeyFiles } from './crypto/platform-keys';
import { createDatabase } from './db/knex';
import { checkDatabaseLogin } from './db/login';
import { startAuthChanges } from './auth-changes';
import { createAbuseLimits } from './abuse';
import { createIdempotencyStore } from './idempotency';
import { createMerchantAuth } from './merchant-auth';
import { createSandboxAcquirer } from './sandbox/acquirer';
import { createSandboxBankRails } from './sandbox/bank-rails';
import { createLedger } from './ledger/ledger';
import type { Logger } from './logger';
import { startPayinOutboxDispatcher } from './flows/payin/outbox';
import { startEventSequencer } from './events';
import { startReconciliationSchedule } from './flows/reconciliation/service';
import { createMetrics, startMetricsServer, type PlatformMetrics } from './metrics';
import { onEventCommitted, type EventType } from './events';
import { createServices } from './platform';
import type { PlatformDeps } from './platform-deps';
import { createPlatformClients, rpcClientCredentials } from './rpc/clients';
import { createAuditLog } from './rpc/audit';
import { createRoutes } from './rpc/routes';
import { createInProcessTransport, startRpcServer, type RpcTls } from './rpc/server';
import { createCredentialVerifier, hasLiveServiceCredential } from './service-credentials';
import { connectTemporal } from './temporal/client';
import { registerPaymentSearchAttributes } from './temporal/search-attributes';
import { checkAborted, unlessAborted } from './net';
import { createOutboundPolicy, outboundOptionsFromConfig } from './web/outbound';
import { temporalCliFlags, temporalConnectionOptions } from './temporal/connection-options';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTracing, type Tracing } from './tracing';
import { upstreamFromConfig } from './upstream/client';
import { startWorker } from './worker';
import type { Role } from './cli/roles';

export { parseRoles, ROLES, type Role } from './cli/roles';

const DATA_KEY_CHECK_RETRY_MILLISECONDS = 5000;

/**
 * Live mode refuses a database holding the demo data of `npm start` (platform_settings `demo_data`): a demo partner
 * with a float, a demo merchant, and their credentials in a file on disk.
 * @throws ConfigError PAYMENTS_MODE
 */
async function refuseDemoDataInLiveMode(database: ReturnType<typeof createDatabase>, config: Config): Promise<void> {
  if (config.PAYMENTS_MODE !== 'live') return;
  if (await database('platform_settings').where({ key: DEMO_SETTING_KEY }).first('key')) {
    throw new ConfigError('PAYMENTS_MODE', 'live mode refuses a database holding the demo data of npm start (demo partner, merchant and users, their credentials on disk): give live mode a database of its own');
  }
}

/**
 * Checks the data keys against the database before serving (a mismatch stops start-up), and that a live process is
 * not pointed at a demo database. While the database cannot be reached the roles start degraded, as without the
 * check, and the check runs as soon as it answers: nothing can be sealed meanwhile, since sealing writes to the
 * database. A mismatch found then stops the process.
 * @returns a stop step that cancels a pending retry
 */
async function checkDataKeys(database: ReturnType<typeof createDatabase>, keys: ReturnType<typeof loadPlatformKeys>, config: Config, logger: Logger): Promise<() => Promise<void>> {
  let timer: NodeJS.Timeout | undefined;
  const attempt = async (): Promise<void> => {
    try {
      await verifyDataKeys(database, keys.dataKeys);
      await refuseDemoDataInLiveMode(database, config);
    } catch (error) {
      if (error instanceof KeyFileError || error instanceof ConfigError) throw error;
      logger.warn({ err: (error as Error).message }, 'data keys not checked yet: the database cannot be reached; retrying');
      timer = setTimeout(() => {
        attempt().catch((fatal: unknown) => {
          logger.fatal({ err: (fatal as Error).message }, 'data key check failed: stopping');
          process.kill(process.pid, 'SIGTERM');
        });
      }, DATA_KEY_CHECK_RETRY_MILLISECONDS);
      timer.unref();
    }
  };
  await attempt();
  return async () => clearTimeout(timer);
}

/** A PEM file's text. @throws ConfigError naming `variable` when it cannot be read. */
const readPem = (variable: string, file: string): string => readConfiguredFile(variable, file).toString('utf8');

/** The RPC listener's TLS material, when RPC_TLS_CERT and RPC_TLS_KEY are set. */
function rpcTls(config: Config): RpcTls | undefined {
  if (!config.RPC_TLS_CERT || !config.RPC_TLS_KEY) return undefined;
  return {
    cert: readPem('RPC_TLS_CERT', config.RPC_TLS_CERT),
    key: readPem('RPC_TLS_KEY', config.RPC_TLS_KEY),
    clientCa: config.RPC_TLS_CLIENT_CA && readPem('RPC_TLS_CLIENT_CA', config.RPC_TLS_CLIENT_CA),
  };
}

export interface RunningPlatform {
  deps?: PlatformDeps;
  rpcUrl?: string;
  facadeUrl?: string;
  /** `http://host:port/metrics` when metrics are served. */
  metricsUrl?: string;
  stop(): Promise<void>;
}

/** Outbound requests may not reach a port this process listens on (known only once bound when configured as 0). */
function protectPort(deps: PlatformDeps | undefined, listening: string): void {
  const url = new URL(listening);
  deps?.outbound.protectPort(Number(url.port || (url.protocol === 'https:' ? 443 : 80)));
}

/**
 * The dependencies the api and worker roles are built from (database pool, Temporal client, keys, ledger, …),
 * without starting any role; each resource's stop step is pushed onto `stops` (run in reverse).
 * Also used by the tests that drive a running cluster (test/support/platform.ts).
 */
export async function createPlatformDeps(config: Config, logger: Logger, stops: Array<() => Promise<void>>, tracing?: Tracing): Promise<PlatformDeps> {
  if (!config.DATABASE_URL) throw new Error('DATABASE_URL is required for the api and worker roles');
  // A refused user, password or database stops start-up at once; an unreachable server is waited for (degraded).
  await checkDatabaseLogin(config.DATABASE_URL);
  const database = createDatabase(config.DATABASE_URL, config.DATABASE_POOL_MAX, {
    statement_timeout_seconds: config.DATABASE_STATEMENT_TIMEOUT_SECONDS,
    idle_in_transaction_timeout_seconds: config.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS,
  });
  stops.push(() => database.destroy());
  const authChanges = await startAuthChanges(config.DATABASE_URL, logger);
  stops.push(() => authChanges.close());
  const temporalAddress = config.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const temporal = await connectTemporal(
    temporalAddress,
    config.TEMPORAL_NAMESPACE,
    config.TEMPORAL_TASK_QUEUE,
    temporalConnectionOptions(config),
    tracing?.temporalClientInterceptors,
  );
  stops.push(() => temporal.close());
  // Keys are created on a first start only: a deployment that has keys refuses a directory lacking one.
  const create = missingKeyFiles(config.PLATFORM_KEY_DIR).length > 0 && (await keysMayBeCreated(database));
  const keys = loadPlatformKeys(config.PLATFORM_KEY_DIR, { create });
  // Refuses a key directory that lacks (or differs from) a data key the database's secrets are sealed under.
  stops.push(await checkDataKeys(database, keys, config, logger));
  if (keys.fieldEncryptionShared) {
    logger.warn('field encryption shares the signing key pair (a key directory from before they were separate): see docs/operations.md "Keys"');
  }
  const outbound = createOutboundPolicy(outboundOptionsFromConfig(config));
  const abuse = createAbuseLimits(database, config);
  stops.push(() => outbound.close());
  return {
    config,
    database,
    temporal,
    logger,
    ledger: tracing ? tracing.traceLedger(createLedger(database)) : createLedger(database),
    keys,
    authChanges,
    merchantAuth: createMerchantAuth({ database, config, authChanges, abuse }),
    // The sandbox exists only in test mode (PAYMENTS_MODE); live mode has no acquirer until one is configured.
    acquirer: config.PAYMENTS_MODE === 'test' ? createSandboxAcquirer(config) : undefined,
    upstream: upstreamFromConfig(config),
    bankRails: config.PAYMENTS_MODE === 'test' ? createSandboxBankRails() : undefined,
    idempotency: createIdempotencyStore(database, {
      retention_seconds: config.IDEMPOTENCY_RETENTION_SECONDS,
      // A claim outlives the request's deadline, so only a crashed request's key is ever taken over.
      lock_seconds: config.REQUEST_TIMEOUT_SECONDS + 30,
    }),
    outbound,
    abuse,
  };
}

/**
 * Starts `roles` in this process; resolves once each serves. `options.abort` (a signal during start-up) stops it at
 * its next step: what started is stopped, then StartupAborted is thrown.
 * @throws ConfigError naming a refused setting (DATABASE_URL's login, RPC_HOST, a key file, …);
 *   TemporalUnreachableError; SearchAttributesMissingError with the command registering them
 */
export async function runRoles(
  config: Config,
  roles: Role[],
  logger: Logger,
  options: {
    bundle?: WorkflowBundle;
    /** Serve /metrics on this port (0: any free one) whatever METRICS_PORT says. */
    metricsPort?: number;
    /** Trace into this exporter (each span as it ends), whatever OTEL_EXPORTER_OTLP_ENDPOINT says: the tests'. */
    spanExporter?: SpanExporter;
    abort?: AbortSignal;
  } = {},
): Promise<RunningPlatform> {
  const abort = options.abort;
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const step of stops.reverse()) {
      try {
        await step();
      } catch (error) {
        logger.error({ err: error }, 'error while stopping');
      }
    }
  };
  try {
    // Traces (src/tracing.ts) when an OTLP endpoint is configured: started first, stopped last (flushes the spans).
    const tracing: Tracing | undefined = await startTracing(config, roles, options.spanExporter);
    if (tracing) stops.push(() => tracing.shutdown());
    let deps: PlatformDeps | undefined;
    checkAborted(abort);
    if (roles.includes('api') || roles.includes('worker')) {
      logger.info({ roles }, 'connecting to PostgreSQL and Temporal');
      deps = await unlessAborted(createPlatformDeps(config, logger, stops, tracing), abort);
      // The api starts workflows with them and the workers upsert them: registered here when the frontend allows it.
      await unlessAborted(
        registerPaymentSearchAttributes(deps.temporal.connection, config.TEMPORAL_NAMESPACE, (line) => logger.info(line), temporalCliFlags(config)),
        abort,
      );
    }
    checkAborted(abort);
    // One registry per process: every role here reports into it (METRICS_PORT serves it).
    const serveMetrics = config.METRICS_PORT > 0 || options.metricsPort !== undefined;
    const metrics = createMetrics(roles.join(','), deps?.database, serveMetrics);
    if (deps) {
      deps.metrics = metrics;
      deps.abuse.onRefused = (door, limit) => metrics.lockouts.inc({ door, limit });
      const stopCounting = onEventCommitted((type) => countPayment(metrics, type));
      stops.push(async () => stopCounting());
    }
    let workerAddress: string | undefined;
    if (roles.includes('worker') && deps) {
      workerAddress = config.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
      logger.info({ task_queue: config.TEMPORAL_TASK_QUEUE }, 'starting the Temporal worker');
      // Bundling the workflows takes seconds: a signal meanwhile does not wait for it (a worker not created by then
      // goes with the process).
      let created: Awaited<ReturnType<typeof startWorker>> | undefined;
      stops.push(async () => created?.shutdown());
      const worker = (created = await unlessAborted(startWorker(deps, { address: workerAddress, bundle: options.bundle, tracing }), abort));
      checkAborted(abort);
      // With the api role in this process too, its workflow starts go through the worker's connection and are
      // started eagerly on it (src/temporal/client.ts startWorkflow). Stopped before the worker: the api stops first.
      if (roles.includes('api') && config.TEMPORAL_EAGER_START) {
        deps.temporal.colocated = {
          client: new Client({ connection: worker.connection, namespace: config.TEMPORAL_NAMESPACE, interceptors: tracing?.temporalClientInterceptors }),
          connection: worker.connection,
        };
      }
    }
    let rpcUrl: string | undefined;
    let routes: ReturnType<typeof createRoutes> | undefined;
    const audit =
      deps &&
      createAuditLog(deps.database, { admitRefusal: (credentialId) => deps.abuse.admitRefusalRecord(credentialId), dropped: metrics.auditRefusalsDropped });
    if (roles.includes('api') && deps) {
      // Starts the PayinWorkflows of committed payins (transactional outbox); stopped after the RPC server drained.
      const outbox = startPayinOutboxDispatcher(deps);
      deps.payinOutbox = outbox;
      stops.push(() => outbox.stop());
      // Numbers the committed events no writer numbered (it stopped between its commit and the numbering).
      const sequencer = startEventSequencer(deps.database, {
        interval_ms: config.EVENTS_SEQUENCER_INTERVAL_SECONDS * 1000,
        onError: (error) => logger.warn({ err: (error as Error).message }, 'event sequencer sweep failed'),
      });
      stops.push(() => sequencer.stop());
      const tls = rpcTls(config);
      // Plaintext only on loopback (`npm start`): beyond it a bearer token would cross the network in clear.
      if (!isLoopbackHost(config.RPC_HOST) && !tls?.clientCa && !config.RPC_ALLOW_PLAINTEXT) {
        throw new ConfigError(
          'RPC_HOST',
          `${config.RPC_HOST} is not loopback and the RPC would run without mTLS: set RPC_TLS_CERT, RPC_TLS_KEY and RPC_TLS_CLIENT_CA (payments cluster certificates makes them), or RPC_ALLOW_PLAINTEXT=true on a network that encrypts`,
        );
      }
      if (!isLoopbackHost(config.RPC_HOST) && !tls?.clientCa && !(await hasLiveServiceCredential(deps.database))) {
        throw new ConfigError(
          'RPC_HOST',
          `${config.RPC_HOST} is not loopback and no caller could authenticate: create a service credential (payments credentials create --scope …) or set RPC_TLS_CLIENT_CA`,
        );
      }
      const rpc = await startRpcServer({
        routes: (routes = createRoutes(createServices(deps))),
        metrics,
        host: config.RPC_HOST,
        port: config.RPC_PORT,
        logger,
        verifier: createCredentialVerifier(deps.database, deps.authChanges, config.AUTH_CACHE_SECONDS),
        readMaxBytes: config.RPC_READ_MAX_BYTES,
        tls,
        tracing,
        audit,
        admission: {
          max_in_flight: config.RPC_MAX_IN_FLIGHT,
          max_queued: config.RPC_MAX_QUEUED,
          queue_timeout_ms: config.RPC_QUEUE_TIMEOUT_SECONDS * 1000,
        },
      });
      stops.push(() => rpc.close(config.SHUTDOWN_GRACE_SECONDS));
      rpcUrl = rpc.url;
      protectPort(deps, rpcUrl);
      await startReconciliationSchedule(deps);
      checkAborted(abort);
    }
    let facadeUrl: string | undefined;
    if (roles.includes('facade')) {
      // RPC_URL: the api role elsewhere, over the network. Else the api role of this process, in process (same
      // Connect protocol and interceptors, no loopback HTTP/2 hop), else the local RPC port.
      const clients = createPlatformClients(
        config.RPC_URL ?? (routes ? createInProcessTransport(routes, logger, metrics, tracing, audit) : `http://127.0.0.1:${config.RPC_PORT}`),
        {
          timeoutMs: config.REQUEST_TIMEOUT_SECONDS * 1000,
          interceptors: tracing ? [tracing.rpcClientInterceptor] : [],
          credentials: rpcClientCredentials(config),
        },
      );
      const app = createFacadeApp({ clients, config, logger, areas: createAreaRouters(config), metrics });
      const facade = await startFacade(app, config.HTTP_HOST, config.HTTP_PORT, {
        headersSeconds: config.FACADE_HEADERS_TIMEOUT_SECONDS,
        bodySeconds: config.FACADE_BODY_TIMEOUT_SECONDS,
      });
      stops.push(() => facade.close(config.SHUTDOWN_GRACE_SECONDS));
      facadeUrl = facade.url;
      protectPort(deps, facadeUrl);
    }
    let metricsUrl: string | undefined;
    if (serveMetrics) {
      const served = await startMetricsServer(metrics, config.METRICS_HOST, options.metricsPort ?? config.METRICS_PORT);
      stops.push(() => served.close());
      metricsUrl = served.url;
      protectPort(deps, metricsUrl);
    }
    return { deps, rpcUrl, facadeUrl, metricsUrl, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The payment kinds payments_payments_total counts: the event catalog's types of these, but a policy's decision. */
const PAYMENT_EVENT_KINDS = new Set(['payin', 'refund', 'pre_transfer', 'deposit']);

/** Counts a committed event announcing a payment's state (`payin.success` → kind payin, status success). */
function countPayment(metrics: PlatformMetrics, type: EventType): void {
  const [kind, status] = type.split('.') as [string, string];
  if (PAYMENT_EVENT_KINDS.has(kind) && type !== 'payin.resolution') metrics.payments.inc({ kind, status });
}
