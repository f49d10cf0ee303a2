/**
 * The platform's environment, typed and read once (platform decisions §1).
 *
 * Every variable is optional; defaults are in brackets in the README's configuration table. A bad value stops
 * start-up with one line naming the variable (`ConfigError`). The secret ones may be files (`<NAME>_FILE`,
 * SECRET_FILE_VARIABLES), and DATABASE_URL's password too (DATABASE_PASSWORD_FILE).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

const port = z.coerce.number().int().min(0).max(65535);
const seconds = z.coerce.number().int().min(1).max(31_536_000);
const url = z.string().url();
const prefix = z.string().regex(/^(\/[A-Za-z0-9._~-]+)*$/, 'must be empty or start with / and not end with /');
const file = z.string().min(1);
const flag = z.enum(['true', 'false']).transform((value) => value === 'true');

const schema = z.object({
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  TEMPORAL_ADDRESS: z.string().regex(/^[^\s:]+:\d+$/, 'must be host:port').optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('payments'),
  /**
   * The Temporal Web UI's base URL (`http://127.0.0.1:8233`): a payment's timeline links each workflow entry to its
   * run there. `npm start` sets its dev server's and `payments cluster up` its own UI's when unset; otherwise unset,
   * and the timeline carries no links.
   */
  TEMPORAL_UI_URL: url
    .refine((value) => /^https?:\/\//.test(value), 'must be an http(s) URL')
    .transform((value) => value.replace(/\/+$/, ''))
    .optional(),
  /**
   * The ports of the Temporal server the platform starts itself when TEMPORAL_ADDRESS is unset: the dev server of
   * `npm start` (its Web UI on TEMPORAL_UI_PORT; 0: no UI) and the server of `payments cluster up` (its frontend; the
   * server's other ports follow it, docs/operations.md "Cluster topology").
   */
  TEMPORAL_FRONTEND_PORT: z.coerce.number().int().min(1).max(65535).default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  /** The longest a payment's timeline waits for Temporal's workflow history (seconds); past it the source is `unavailable`. */
  TIMELINE_TEMPORAL_DEADLINE_SECONDS: z.coerce.number().positive().max(60).default(2),
  /**
   * The roles `payments serve` runs and `payments health` probes when neither is given --roles (one image runs any
   * role: a container sets it, and the image's HEALTHCHECK probes what it runs).
   */
  PAYMENTS_ROLES: z
    .string()
    .regex(/^\s*(api|facade|worker)\s*(,\s*(api|facade|worker)\s*)*$/, 'must be comma-separated roles: api, facade, worker')
    .default('api,facade,worker'),
  HTTP_PORT: port.default(3000),
  RPC_PORT: port.default(8080),
  SANDBOX_PORT: port.default(3100),
  HTTP_HOST: z.string().min(1).default('127.0.0.1'),
  /** Listen address of `payments sandbox-upstream` (test mode; 0.0.0.0 in its docker-compose container). */
  SANDBOX_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Reverse proxies in front of the façade (nginx, a load balancer) that append the address they received a request
   * from to X-Forwarded-For. With N, the client address is the N-th entry from the right end (the one the outermost
   * trusted proxy saw); whatever a client wrote further left is ignored. 0: the socket's peer, no header trusted.
   */
  FACADE_TRUSTED_PROXY_HOPS: z.coerce.number().int().min(0).max(10).default(0),
  /**
   * The internal Connect RPC listener's address. Binding anything but loopback needs a live service credential
   * (`payments credentials create`) or mTLS (RPC_TLS_CLIENT_CA); without either start-up stops.
   */
  RPC_HOST: z.string().min(1).default('127.0.0.1'),
  /** Largest RPC request message accepted, bytes (larger: ResourceExhausted). */
  RPC_READ_MAX_BYTES: z.coerce.number().int().min(65_536).max(67_108_864).default(4_194_304),
  /**
   * Admission control (docs/operations.md "Admission control"): requests the façade (and the RPC server) runs at
   * once, how many may wait for a slot, and how long, seconds. Past either bound a request is refused at once: 503
   * in the area's envelope with Retry-After, or RPC UNAVAILABLE. *_MAX_IN_FLIGHT=0 turns admission control off.
   */
  FACADE_MAX_IN_FLIGHT: z.coerce.number().int().min(0).max(100_000).default(256),
  FACADE_MAX_QUEUED: z.coerce.number().int().min(0).max(1_000_000).default(1024),
  FACADE_QUEUE_TIMEOUT_SECONDS: z.coerce.number().positive().max(300).default(5),
  /**
   * Requests of one client address (an IPv6 client: its AUTH_FAILURE_IPV6_PREFIX network) a façade process holds at
   * once, counted from their headers to their answer, body reading included: past it 503 in the area's envelope with
   * Retry-After, at once. Behind proxies it needs FACADE_TRUSTED_PROXY_HOPS, else every client shares the proxy's
   * address. 0 = no cap.
   */
  FACADE_MAX_IN_FLIGHT_PER_ADDRESS: z.coerce.number().int().min(0).max(100_000).default(64),
  /** Longest wait for a request's headers once its connection opened, seconds (Node's headersTimeout). */
  FACADE_HEADERS_TIMEOUT_SECONDS: z.coerce.number().positive().max(300).default(10),
  /**
   * Longest wait for a request's body after its headers, seconds: a body still arriving then is answered 408 and its
   * connection closed (Node's requestTimeout is this plus FACADE_HEADERS_TIMEOUT_SECONDS). Bodies are read before a
   * request takes an admission slot, so a slow body holds a socket and its address's share, never a slot.
   */
  FACADE_BODY_TIMEOUT_SECONDS: z.coerce.number().positive().max(300).default(10),
  RPC_MAX_IN_FLIGHT: z.coerce.number().int().min(0).max(100_000).default(512),
  RPC_MAX_QUEUED: z.coerce.number().int().min(0).max(1_000_000).default(2048),
  RPC_QUEUE_TIMEOUT_SECONDS: z.coerce.number().positive().max(300).default(5),
  /** PEM files of the RPC listener's TLS certificate and key; with RPC_TLS_CLIENT_CA, clients need a certificate. */
  RPC_TLS_CERT: file.optional(),
  RPC_TLS_KEY: file.optional(),
  RPC_TLS_CLIENT_CA: file.optional(),
  /**
   * Serve the RPC in plaintext on a non-loopback RPC_HOST (a network of the operator's own that encrypts): without it,
   * such an RPC_HOST needs mTLS (RPC_TLS_CLIENT_CA). A development choice: live mode refuses it.
   */
  RPC_ALLOW_PLAINTEXT: flag.default(false),
  /** The service credential (`pps_…`) a façade presents to the RPC server at RPC_URL. */
  RPC_TOKEN: z.string().min(1).optional(),
  /** A credentials file (`payments credentials create --file`) holding that token, when RPC_TOKEN is unset. */
  RPC_TOKEN_FILE: file.optional(),
  /** PEM files a façade presents to an mTLS RPC server at RPC_URL (https://), and the CA it verifies it with. */
  RPC_CLIENT_TLS_CERT: file.optional(),
  RPC_CLIENT_TLS_KEY: file.optional(),
  RPC_CLIENT_TLS_CA: file.optional(),
  /**
   * TLS on every Temporal connection (client and worker): on with TEMPORAL_TLS=true, any of the PEM files below, or
   * an API key. A non-loopback TEMPORAL_ADDRESS without TLS is refused unless TEMPORAL_ALLOW_INSECURE=true.
   */
  TEMPORAL_TLS: flag.default(false),
  TEMPORAL_TLS_CERT: file.optional(),
  TEMPORAL_TLS_KEY: file.optional(),
  TEMPORAL_TLS_CA: file.optional(),
  TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional(),
  TEMPORAL_API_KEY: z.string().min(1).optional(),
  TEMPORAL_ALLOW_INSECURE: flag.default(false),
  PUBLIC_BASE_URL: url.default('http://127.0.0.1:3000').transform((value) => value.replace(/\/+$/, '')),
  RPC_URL: url.optional(),
  PARTNER_PREFIX: prefix.default(''),
  PAYIN_PREFIX: prefix.default(''),
  MERCHANT_PREFIX: prefix.default(''),
  UPSTREAM_PAYIN_URL: url.optional(),
  /**
   * Where refunds of Area B payins are requested from the upstream provider (docs/refunds.md "Providers").
   * [`<UPSTREAM_PAYIN_URL>/refunds`: upstreamRefundUrl]
   */
  UPSTREAM_REFUND_URL: url.optional(),
  /**
   * Where payouts of merchants' wallets are requested from the upstream provider (docs/payouts.md "Providers").
   * [`<UPSTREAM_PAYIN_URL>/payouts`: upstreamPayoutUrl]
   */
  UPSTREAM_PAYOUT_URL: url.optional(),
  UPSTREAM_API_KEY: z.string().min(1).optional(),
  UPSTREAM_WEBHOOK_SECRET: z.string().min(1).optional(),
  PAYIN_TTL_SECONDS: seconds.default(300),
  /**
   * How long a refund the provider answered `pending` waits for its signed notification before the provider is asked
   * again (the wait doubling each time); past it, reconciliation reports the refund as undecided (docs/refunds.md).
   */
  REFUND_DECISION_TIMEOUT_SECONDS: z.coerce.number().positive().max(604_800).default(3600),
  /**
   * How long a payout the provider answered `pending` waits for its signed notification before the provider is asked
   * again (the wait doubling each time); past it, reconciliation reports the payout as undecided (docs/payouts.md).
   */
  PAYOUT_DECISION_TIMEOUT_SECONDS: z.coerce.number().positive().max(604_800).default(3600),
  /**
   * How long a payout above its merchant's approval threshold waits, held, for an operator's approval before it is
   * voided (`approval_timed_out`, docs/payouts.md "Approval").
   */
  PAYOUT_APPROVAL_TIMEOUT_SECONDS: z.coerce.number().positive().max(2_592_000).default(86_400),
  PRE_TRANSFER_TTL_SECONDS: seconds.default(600),
  ACCESS_TOKEN_TTL_SECONDS: seconds.default(7200),
  MERCHANT_SESSION_TTL_SECONDS: seconds.default(3600),
  /** How far a signed Area C login's `timestamp` may lie from the platform's clock (each signed login is accepted once). */
  MERCHANT_LOGIN_WINDOW_SECONDS: seconds.default(300),
  /** Lifetime of a merchant dashboard session from its sign-in (docs/dashboard.md); signing out ends it sooner. */
  DASHBOARD_SESSION_TTL_SECONDS: seconds.default(3600),
  /**
   * Whether the merchant dashboard's payment page links its technical entries to the Temporal Web UI
   * (TEMPORAL_UI_URL). The UI is an operator's tool: false (the default) unless the deployment opens it to the
   * dashboard's readers.
   */
  TEMPORAL_UI_PUBLIC: flag.default(false),
  DEPOSIT_TTL_SECONDS: seconds.default(900),
  DEPOSIT_MAX_OTP_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  /**
   * Seconds between a Visa/Master deposit's completion and its capture: a refund_deposit within them reverses the
   * authorization instead of refunding (docs/refunds.md "Area C"). 0: captured right after the completion.
   */
  DEPOSIT_CAPTURE_DELAY_SECONDS: z.coerce.number().int().min(0).max(604_800).default(0),
  WEBHOOK_RETRY_INITIAL_SECONDS: z.coerce.number().positive().max(86_400).default(5),
  WEBHOOK_RETRY_MAX_INTERVAL_SECONDS: z.coerce.number().positive().max(604_800).default(3600),
  WEBHOOK_RETRY_WINDOW_SECONDS: seconds.default(259_200),
  WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().positive().max(300).default(10),
  /**
   * An endpoint that failed every attempt for this many days (fractions allowed: tests use seconds' worth) is
   * disabled, with a dashboard notice and a `webhook_endpoint.disabled` event (docs/webhooks.md).
   */
  WEBHOOK_DISABLE_AFTER_DAYS: z.coerce.number().positive().max(365).default(5),
  /** How long a rotated-out signing secret keeps signing beside the new one (docs/webhooks.md "Rotating the secret"). */
  WEBHOOK_SECRET_OVERLAP_SECONDS: seconds.default(86_400),
  /** Jitter of the webhook retry delays: each wait is its backoff times a random factor in [1 − j/2, 1 + j/2]. */
  WEBHOOK_RETRY_JITTER: z.coerce.number().min(0).max(1).default(0.2),
  /**
   * Payin webhooks: make the first delivery attempt right after the settlement commits, in the payin's own
   * activity (at most WEBHOOK_INLINE_TIMEOUT_SECONDS), and start the WebhookDeliveryWorkflow only when it fails.
   * false: every event gets its workflow, which makes every attempt.
   */
  WEBHOOK_INLINE_FIRST_ATTEMPT: flag.default(true),
  /** Longest inline first attempt, seconds (kept well inside the 30 s local activity that makes it). */
  WEBHOOK_INLINE_TIMEOUT_SECONDS: z.coerce.number().positive().max(20).default(5),
  /**
   * How long an upstream notification waits for its PayinWorkflow to apply it (credit or close, first webhook attempt)
   * before it is queued in the workflow as a signal and answered as accepted, seconds (at most 4 are used, so that the
   * answer reaches the upstream within its 10 s; docs/payins.md). Only a worker that is down or far behind makes a
   * notification wait that long. 0: queue every notification at once (the answer then means "recorded", not "credited").
   */
  NOTIFICATION_APPLY_WAIT_SECONDS: z.coerce.number().min(0).max(60).default(4),
  UPSTREAM_TIMEOUT_SECONDS: z.coerce.number().positive().max(300).default(10),
  /**
   * How long a process reuses a successful credential lookup (Area B API key; Area C merchant headers and session):
   * a suspension, a new secret key or a removed session applies within this many seconds. 0 = look up every time.
   */
  AUTH_CACHE_SECONDS: z.coerce.number().int().min(0).max(300).default(5),
  /**
   * live (the default of the configuration, the Dockerfile and docker-compose): no sandbox anywhere, a card or bank
   * deposit without a configured acquirer is refused, and start-up refuses every test-mode setting (liveModeProblem).
   * test, an explicit choice (`npm start`, `payments cluster up --demo-data`, the compose profile `test-mode`): the
   * sandbox card acquirer (fixed OTP SANDBOX_OTP, test cards) and, under `npm start`, the sandbox upstream.
   */
  PAYMENTS_MODE: z.enum(['live', 'test']).default('live'),
  /** The sandbox acquirer's OTP, test mode only [DEFAULT_SANDBOX_OTP in test mode; refused in live mode]. */
  SANDBOX_OTP: z.string().regex(/^\d{4,8}$/, 'must be 4 to 8 digits').optional(),
  PLATFORM_KEY_DIR: z.string().min(1).default('.data/keys'),
  DATA_DIR: z.string().min(1).default('.data'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SHUTDOWN_GRACE_SECONDS: seconds.default(10),
  /**
   * Worker tuning (docs/operations.md "Worker tuning"); 0 = the Temporal SDK's default. Slots bound what one worker
   * process runs at once; pollers how many long polls it keeps open per task type; the sticky cache how many
   * workflow runs it keeps in memory (a cached run's next task needs no history replay).
   */
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: z.coerce.number().int().min(0).max(10_000).default(0),
  WORKER_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().min(0).max(10_000).default(0),
  WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: z.coerce.number().int().min(0).max(10_000).default(0),
  WORKER_WORKFLOW_TASK_POLLERS: z.coerce.number().int().min(0).max(1_000).default(0),
  WORKER_ACTIVITY_TASK_POLLERS: z.coerce.number().int().min(0).max(1_000).default(0),
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).max(1_000_000).default(0),
  /**
   * Eager workflow start when the api and worker roles share a process (`npm start`, `serve` with both): the start's
   * answer carries the first workflow task straight to the local worker. false: every start goes through the task queue.
   */
  TEMPORAL_EAGER_START: flag.default(true),
  /** Connections per database pool (each api or worker process has one). */
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(20),
  /** Server-side `statement_timeout` of every database connection; 0 = none. */
  DATABASE_STATEMENT_TIMEOUT_SECONDS: z.coerce.number().int().min(0).max(3600).default(30),
  /** Server-side `idle_in_transaction_session_timeout` of every database connection; 0 = none. */
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS: z.coerce.number().int().min(0).max(3600).default(60),
  /**
   * Deadline of one request through the platform: façade → RPC calls and Temporal Updates give up after it and answer
   * the area's system error, safe to retry.
   */
  REQUEST_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(30),
  /**
   * Outbound requests to merchants (webhooks, call-backs) may reach these `host:port` pairs although they are
   * private (comma-separated, e.g. a local test receiver; IPv6 as `[::1]:4000`), matched on the URL's host as
   * written. Cloud metadata addresses stay refused.
   */
  OUTBOUND_ALLOWED_HOSTS: z
    .string()
    .regex(/^\s*(([^\s,:[\]]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}\s*)(,\s*([^\s,:[\]]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}\s*)*$/, 'must be comma-separated host:port ([v6]:port)')
    .optional(),
  /** Outbound requests may reach every private address (development); metadata addresses stay refused. */
  OUTBOUND_ALLOW_PRIVATE_NETWORKS: flag.default(false),
  /**
   * Failed authentications of one credential (partner, merchant, API key, hosted page token) from one client address
   * per window before that credential is locked for that address (other addresses keep their own count).
   */
  AUTH_FAILURES_PER_CREDENTIAL: z.coerce.number().int().min(1).max(1_000_000).default(10),
  /** Failed authentications of one credential from every address together per window before it is locked everywhere. */
  AUTH_FAILURES_PER_CREDENTIAL_TOTAL: z.coerce.number().int().min(1).max(10_000_000).default(1000),
  /** Failed authentications from one client address per window, whatever the credentials. */
  AUTH_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1).max(1_000_000).default(50),
  /** The window of both failure counts, and how long a lockout lasts at most. */
  AUTH_FAILURE_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  /**
   * Refused privileged RPC calls (and refused calls of owner-bound credentials) of one credential that get an audit
   * row per AUDIT_REFUSAL_WINDOW_SECONDS, shared by every process; past it the call is still refused, its row is
   * dropped and counted (payments_audit_refusals_dropped_total).
   */
  AUDIT_REFUSALS_PER_CREDENTIAL: z.coerce.number().int().min(1).max(1_000_000).default(30),
  AUDIT_REFUSAL_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  /** Requests per minute of one verified partner or merchant, shared by every process; 0 = no limit. */
  REQUESTS_PER_CALLER_PER_MINUTE: z.coerce.number().int().min(0).max(10_000_000).default(6000),
  /**
   * Failures from IPv6 clients are counted per network of this prefix length (one client usually holds a whole
   * /64, so counting single addresses would not limit it); IPv4 addresses are counted one by one.
   */
  AUTH_FAILURE_IPV6_PREFIX: z.coerce.number().int().min(32).max(128).default(64),
  /** Password hashes and checks (scrypt) running at once per process; more wait their turn. */
  PASSWORD_HASHING_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /** Prometheus `/metrics` of this process on METRICS_HOST:METRICS_PORT; 0 = not served. */
  METRICS_PORT: port.default(0),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * Prometheus metrics of the Temporal SDK (worker task slots, poll and schedule-to-start latencies, requests to the
   * Temporal server) on TEMPORAL_METRICS_HOST:TEMPORAL_METRICS_PORT, served by the SDK's core, not by METRICS_PORT;
   * 0 = not served. Set once per process (the Temporal runtime is installed once).
   */
  TEMPORAL_METRICS_PORT: port.default(0),
  TEMPORAL_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * OpenTelemetry traces (docs/operations.md "Traces"): spans of the façade, RPC, Temporal client, workflow,
   * activity and ledger are sent by OTLP/HTTP (JSON) to this base URL (`/v1/traces` appended, as OTel specifies;
   * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as is). Unset: no tracing and no instrumentation at all.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: url.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url.optional(),
  /** OTLP over HTTP with protobuf or JSON bodies (gRPC is not supported) [http/protobuf, OTel's default]. */
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/protobuf', 'http/json']).default('http/protobuf'),
  /** The `service.name` of this process's spans [payments-<roles>, e.g. payments-api-worker]. */
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  /** Seconds between two scheduled reconciliations (the ReconciliationWorkflow); 0 = no schedule. */
  RECONCILE_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(86_400).default(300),
  /** Records younger than this are in flight, not inconsistent, for reconciliation. */
  RECONCILE_GRACE_SECONDS: z.coerce.number().int().min(0).max(86_400).default(120),
  /** How long a client's Idempotency-Key answers repeats with the first answer (at least a day in production). */
  IDEMPOTENCY_RETENTION_SECONDS: seconds.default(86_400),
  /**
   * Days an event is kept (docs/events.md "Retention"); older ones are purged by the reconciliation run in bounded
   * batches. The owners' sequences are never purged: `seq` keeps growing.
   */
  EVENTS_RETENTION_DAYS: z.coerce.number().positive().max(36_500).default(90),
  /**
   * How often (seconds, fractions allowed) the api role's event sequencer sweeps for committed events no writer
   * numbered (its process stopped between its commit and the numbering; docs/events.md "Sequence guarantees").
   */
  EVENTS_SEQUENCER_INTERVAL_SECONDS: z.coerce.number().positive().max(3600).default(1),
}).superRefine((config, context) => {
  const pairs: Array<[string, string | undefined, string, string | undefined]> = [
    ['RPC_TLS_CERT', config.RPC_TLS_CERT, 'RPC_TLS_KEY', config.RPC_TLS_KEY],
    ['RPC_CLIENT_TLS_CERT', config.RPC_CLIENT_TLS_CERT, 'RPC_CLIENT_TLS_KEY', config.RPC_CLIENT_TLS_KEY],
    ['TEMPORAL_TLS_CERT', config.TEMPORAL_TLS_CERT, 'TEMPORAL_TLS_KEY', config.TEMPORAL_TLS_KEY],
  ];
  for (const [certName, cert, keyName, key] of pairs) {
    if (Boolean(cert) !== Boolean(key)) {
      context.addIssue({ code: z.ZodIssueCode.custom, path: [cert ? keyName : certName], message: `is required with ${cert ? certName : keyName}` });
    }
  }
  if (config.RPC_TLS_CLIENT_CA && !config.RPC_TLS_CERT) {
    context.addIssue({ code: z.ZodIssueCode.custom, path: ['RPC_TLS_CERT'], message: 'is required with RPC_TLS_CLIENT_CA (mTLS needs the server certificate)' });
  }
  const address = config.TEMPORAL_ADDRESS;
  if (address && !isLoopbackHost(address.replace(/:\d+$/, '')) && !temporalUsesTls(config) && !config.TEMPORAL_ALLOW_INSECURE) {
    context.addIssue({
      code: z.ZodIssueCode.custom,
      path: ['TEMPORAL_ADDRESS'],
      message: 'is not loopback and TLS is off: set TEMPORAL_TLS=true (or TEMPORAL_TLS_* / TEMPORAL_API_KEY), or TEMPORAL_ALLOW_INSECURE=true',
    });
  }
});

/** The sandbox acquirer's OTP in test mode when SANDBOX_OTP is unset (platform decisions §7). */
export const DEFAULT_SANDBOX_OTP = '123456';

/** Shortest UPSTREAM_API_KEY and UPSTREAM_WEBHOOK_SECRET live mode accepts. */
export const LIVE_SECRET_MIN_LENGTH = 16;

/**
 * Values published as defaults or examples (the sandbox upstream's former built-in secrets): whoever read the source
 * knows them, so live mode refuses them whatever their length.
 */
const PUBLISHED_SECRETS = new Set(['sandbox-upstream-key', 'sandbox-upstream-webhook-secret']);

/**
 * The first setting live mode refuses, or undefined: every sandbox component and default secret is a test-mode
 * choice, and a live process started with one would take test cards, a known OTP or a guessable secret for real.
 *
 *   SANDBOX_OTP                   the sandbox acquirer's OTP: live mode has no sandbox
 *   UPSTREAM_PAYIN_URL            http (the sandbox upstream is http on loopback; a real provider is reached over TLS)
 *   UPSTREAM_REFUND_URL           http, likewise (the API key travels with every refund request)
 *   UPSTREAM_PAYOUT_URL           http, likewise
 *   UPSTREAM_API_KEY / _SECRET    a published default, or shorter than LIVE_SECRET_MIN_LENGTH
 *   RPC_ALLOW_PLAINTEXT           a plaintext internal RPC over a network: a development choice
 *   TEMPORAL_ALLOW_INSECURE       plaintext Temporal over a network: a development choice
 */
export function liveModeProblem(config: Config): { variable: string; detail: string } | undefined {
  if (config.PAYMENTS_MODE !== 'live') return undefined;
  if (config.SANDBOX_OTP !== undefined) {
    return { variable: 'SANDBOX_OTP', detail: 'is a test-mode setting (the sandbox acquirer): live mode has no sandbox; unset it, or set PAYMENTS_MODE=test' };
  }
  if (config.UPSTREAM_PAYIN_URL && !config.UPSTREAM_PAYIN_URL.startsWith('https://')) {
    return { variable: 'UPSTREAM_PAYIN_URL', detail: 'must be https in live mode (http is the sandbox upstream or a provider reached without TLS)' };
  }
  if (config.UPSTREAM_PAYOUT_URL && !config.UPSTREAM_PAYOUT_URL.startsWith('https://')) {
    return { variable: 'UPSTREAM_PAYOUT_URL', detail: 'must be https in live mode (http is the sandbox upstream or a provider reached without TLS)' };
  }
  if (config.UPSTREAM_REFUND_URL && !config.UPSTREAM_REFUND_URL.startsWith('https://')) {
    return { variable: 'UPSTREAM_REFUND_URL', detail: 'must be https in live mode (http is the sandbox upstream or a provider reached without TLS)' };
  }
  for (const variable of ['UPSTREAM_API_KEY', 'UPSTREAM_WEBHOOK_SECRET'] as const) {
    const value = config[variable];
    if (value === undefined) continue;
    if (PUBLISHED_SECRETS.has(value)) return { variable, detail: 'is a published sandbox default: live mode needs a secret of its own' };
    if (value.length < LIVE_SECRET_MIN_LENGTH) return { variable, detail: `is shorter than ${LIVE_SECRET_MIN_LENGTH} characters: live mode needs a secret of its own` };
  }
  if (config.RPC_ALLOW_PLAINTEXT) {
    return { variable: 'RPC_ALLOW_PLAINTEXT', detail: 'a plaintext internal RPC over a network is a development choice: live mode needs mTLS (RPC_TLS_CERT, RPC_TLS_KEY, RPC_TLS_CLIENT_CA)' };
  }
  if (config.TEMPORAL_ALLOW_INSECURE) {
    return { variable: 'TEMPORAL_ALLOW_INSECURE', detail: 'plaintext Temporal over a network is a development choice: live mode needs TLS (TEMPORAL_TLS_CA, TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY)' };
  }
  return undefined;
}

/**
 * The upstream provider's refund URL: UPSTREAM_REFUND_URL, else `/refunds` appended to the path of
 * UPSTREAM_PAYIN_URL (its query kept: `https://p.example/v1/payins?x=1` → `https://p.example/v1/payins/refunds?x=1`),
 * else undefined (no upstream configured: Area B refunds cannot be requested).
 */
export function upstreamRefundUrl(config: Pick<Config, 'UPSTREAM_PAYIN_URL' | 'UPSTREAM_REFUND_URL'>): string | undefined {
  if (config.UPSTREAM_REFUND_URL) return config.UPSTREAM_REFUND_URL;
  if (!config.UPSTREAM_PAYIN_URL) return undefined;
  const derived = new URL(config.UPSTREAM_PAYIN_URL);
  derived.pathname = `${derived.pathname.replace(/\/+$/, '')}/refunds`;
  return derived.toString();
}

/**
 * The upstream provider's payout URL: UPSTREAM_PAYOUT_URL, else `/payouts` appended to the path of
 * UPSTREAM_PAYIN_URL (its query kept), else undefined (no upstream configured: payouts cannot be requested).
 */
export function upstreamPayoutUrl(config: Pick<Config, 'UPSTREAM_PAYIN_URL' | 'UPSTREAM_PAYOUT_URL'>): string | undefined {
  if (config.UPSTREAM_PAYOUT_URL) return config.UPSTREAM_PAYOUT_URL;
  if (!config.UPSTREAM_PAYIN_URL) return undefined;
  const derived = new URL(config.UPSTREAM_PAYIN_URL);
  derived.pathname = `${derived.pathname.replace(/\/+$/, '')}/payouts`;
  return derived.toString();
}

/** True for a loopback host name or address (localhost, 127.0.0.0/8, ::1). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127(\.\d{1,3}){3}$/.test(bare) || bare === '::ffff:127.0.0.1';
}

/** True when Temporal connections use TLS (explicitly, by a PEM file, or by an API key, which needs TLS). */
export function temporalUsesTls(config: {
  TEMPORAL_TLS: boolean;
  TEMPORAL_TLS_CERT?: string;
  TEMPORAL_TLS_CA?: string;
  TEMPORAL_API_KEY?: string;
}): boolean {
  return config.TEMPORAL_TLS || Boolean(config.TEMPORAL_TLS_CERT || config.TEMPORAL_TLS_CA || config.TEMPORAL_API_KEY);
}

/** The typed configuration. Durations are in seconds, ports are numbers. */
export type Config = z.infer<typeof schema>;

/** Thrown when a variable has a bad value; `message` is one line naming the variable. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`invalid configuration: ${variable}: ${detail}`);
    this.name = 'ConfigError';
  }
}

/**
 * The secret variables a deployment may give as files instead (Docker secrets, Kubernetes secret volumes): `<NAME>_FILE`
 * names a file whose content (one trailing newline dropped) is the value; an empty file is unset. (RPC_TOKEN has its
 * own file form already, RPC_TOKEN_FILE: a credentials file of `payments credentials create --file`.)
 */
export const SECRET_FILE_VARIABLES = ['DATABASE_URL', 'TEMPORAL_API_KEY', 'UPSTREAM_API_KEY', 'UPSTREAM_WEBHOOK_SECRET'] as const;

/** A secret file's value: its content without the trailing newline an editor or `echo` adds. */
function readSecretFile(variable: string, file: string): string {
  return readConfiguredFile(variable, file).toString('utf8').replace(/\r?\n$/, '');
}

/**
 * The values of SECRET_FILE_VARIABLES given as `<NAME>_FILE`, and DATABASE_URL with the password of
 * DATABASE_PASSWORD_FILE (a URL without password in the environment, the password in a secret file).
 * @throws ConfigError naming the `_FILE` variable: unreadable file, both forms set, or a password for a URL that
 *   has one or for no URL
 */
function secretsFromFiles(environment: NodeJS.ProcessEnv): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of SECRET_FILE_VARIABLES) {
    const file = environment[`${name}_FILE`];
    if (!file) continue;
    if (environment[name]) throw new ConfigError(`${name}_FILE`, `set ${name} or ${name}_FILE, not both`);
    values[name] = readSecretFile(`${name}_FILE`, file);
  }
  const passwordFile = environment.DATABASE_PASSWORD_FILE;
  if (passwordFile) {
    const url = values.DATABASE_URL ?? environment.DATABASE_URL;
    if (!url) throw new ConfigError('DATABASE_PASSWORD_FILE', 'needs DATABASE_URL (a postgres:// URL without a password)');
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError('DATABASE_URL', 'must be a postgres:// URL');
    }
    if (parsed.password) throw new ConfigError('DATABASE_PASSWORD_FILE', 'DATABASE_URL holds a password already: give it in one place');
    const password = readSecretFile('DATABASE_PASSWORD_FILE', passwordFile);
    if (!password) throw new ConfigError('DATABASE_PASSWORD_FILE', `${passwordFile} is empty`);
    parsed.password = encodeURIComponent(password);
    values.DATABASE_URL = parsed.toString();
  }
  return values;
}

/**
 * Reads the configuration from an environment (default `process.env`). Empty strings count as unset. `defaults`
 * stand in for variables the environment leaves unset (`npm start` chooses test mode this way).
 * @throws ConfigError naming the first bad variable, or the first setting live mode refuses (liveModeProblem).
 */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env, defaults: Record<string, string> = {}): Config {
  const input: Record<string, string> = {};
  const secrets = secretsFromFiles(environment);
  for (const key of Object.keys(schema.shape)) {
    const value = secrets[key] ?? environment[key];
    if (value !== undefined && value !== '') input[key] = value;
    else if (defaults[key] !== undefined) input[key] = defaults[key];
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(String(issue.path[0] ?? 'environment'), issue.message);
  }
  const config = parsed.data;
  const problem = liveModeProblem(config);
  if (problem) throw new ConfigError(problem.variable, problem.detail);
  if (config.PAYMENTS_MODE === 'test') config.SANDBOX_OTP ??= DEFAULT_SANDBOX_OTP;
  return config;
}

/**
 * The bytes of the file a variable names (a PEM certificate or key).
 * @throws ConfigError naming `variable` when the file cannot be read
 */
export function readConfiguredFile(variable: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new ConfigError(variable, `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}
