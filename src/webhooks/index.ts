/**
 * Outbound webhooks (platform decisions §5, docs/webhooks.md): one durable, recorded, signed sender for every event
 * the platform announces to a merchant. Every webhook is produced from its event: `recordWebhookEvent` writes the
 * event (src/events, the merchant's next `seq`) and the webhook that carries it, inside the transaction of the change
 * they announce. Its delivery starts after the commit (`startWebhookDeliveries`, or from a workflow's activity
 * `deliverWebhooks`, which makes the first attempt itself when the webhook's turn has come); the
 * WebhookDeliveryWorkflow (id = webhook id, the X-Webhook-Id) waits for its turn, retries with backoff and records
 * every attempt.
 *
 * Order: for one merchant and subject, webhook N+1 is not delivered before webhook N was delivered or given up
 * (its run waits for its turn); different subjects never wait on each other. Operators list and redeliver webhooks,
 * one or every one of a merchant after an event seq.
 *
 * The whole service side of a webhook in one module, beside its contract (contract.ts) and its workflow
 * (workflows/webhook-delivery.ts): recording and starting deliveries first, then one delivery attempt (the
 * WebhookDeliveryWorkflow's activities), then the SQL of `webhook_events` (one row per webhook sent to a merchant,
 * its signed body recorded once, migration 005; its event's seq: 032) and `webhook_delivery_attempts` (every POST,
 * with when the next is due). A webhook's subject is its `invoice_reference` column (the name stays for
 * compatibility: it holds any flow's reference, migration 017).
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, WorkflowNotFoundError } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { hmacSha256Hex, standardWebhookSignature } from '../crypto/hmac';
import type { Knex } from '../db/knex';
import { reasonError } from '../errors';
import { announceOnCommit, eventRowOf, eventWriteCtes, numberAfterCommit, numberOwnerEvents, recordEvent, type EventType, type NewEventRow } from '../events';
import { getMerchant, merchantSigningSecrets, recordEndpointOutcome, webhookEndpointState, type SigningSecrets } from '../onboarding/merchants';
import type { WebhookAttemptOutcome } from '../metrics';
import type { PlatformDeps } from '../platform-deps';
import { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery';
import { startWorkflow } from '../temporal/client';
import { withRequestDeadline } from '../temporal/deadline';
import { paymentSearchAttributes, type PaymentStartOptions } from '../temporal/search-attributes';
import { OutboundRefusedError } from '../web/outbound';
import {
  predecessorSettledSignal,
  retryDelaySeconds,
  WEBHOOK_REASONS,
  type WebhookAttemptResult,
  type WebhookDeliveryActivities,
  type WebhookRetrySettings,
} from './contract';

/** The default signature header of a merchant that configured none (payment-services-interface.md "Area B"). */
export const DEFAULT_SIGNATURE_HEADER = 'X-Signature';
const MAX_LISTED_EVENTS = 500;
/** Most webhooks one `redeliverAfter` call sends again. */
export const REDELIVER_MAX = 500;

/** PlatformDeps.benchFloor: set by bench/events.ts only. */
type BenchFloor = PlatformDeps['benchFloor'];

export interface OutboundWebhook {
  /** Stable id: X-Webhook-Id, and the id of its delivery workflow. */
  id: string;
  merchant_id: string;
  /** The payment (or record) the event is about: its public reference (≤ 128), the event's subject. */
  subject_reference: string;
  /** The event's type, also X-Webhook-Event. */
  event: EventType;
  /** The JSON body, exactly as it will be signed and sent. */
  body: string;
  /** Where to POST it: the record's own call-back URL; absent = the merchant's callback_url; null = nowhere (the event only). */
  url?: string | null;
  /** The event's data (docs/events.md); absent: the body's JSON object. */
  data?: Record<string, unknown>;
  /** The ledger transaction the change wrote, when money moved. */
  ledger_transaction_id?: string | null;
}

/**
 * Records `webhook`'s event (owner: the merchant; numbered after the commit) and the webhook produced from it, for delivery
 * to its own URL, else the merchant's callback URL, signed under the merchant's HMAC secret with its signature
 * header, inside the caller's transaction: both exist if and only if the change they announce committed. A webhook
 * id recorded before writes nothing (a replayed change announces nothing twice). The webhook takes its event's `seq`
 * when the event is numbered (after the commit; a delivery numbers it first if it is not yet). Start its delivery after the commit with
 * `startWebhookDeliveries`. With `url: null` (a record without a call-back URL) only the event is written.
 * @returns the webhook id (null with `url: null`)
 * @throws Error when the merchant does not exist (a programming error).
 */
export async function recordWebhookEvent(trx: Knex.Transaction, webhook: OutboundWebhook & { url: null }): Promise<null>;
export async function recordWebhookEvent(trx: Knex.Transaction, webhook: OutboundWebhook & { url?: string }, floor?: BenchFloor): Promise<string>;
export async function recordWebhookEvent(trx: Knex.Transaction, webhook: OutboundWebhook, floor?: BenchFloor): Promise<string | null>;
export async function recordWebhookEvent(trx: Knex.Transaction, webhook: OutboundWebhook, floor?: BenchFloor): Promise<string | null> {
  const event = {
    owner: { type: 'merchant' as const, id: webhook.merchant_id },
    subject: webhook.subject_reference,
    type: webhook.event,
    data: webhook.data ?? (JSON.parse(webhook.body) as Record<string, unknown>),
    ledger_transaction_id: webhook.ledger_transaction_id ?? null,
  };
  if (webhook.url === null) {
    await recordEvent(trx, event);
    return null;
  }
  if (floor?.eventsOff) return recordWithoutEvent(trx, webhook);
  const written = await insertWebhookWithEvent(trx, eventRowOf(event), {
    id: webhook.id,
    merchant_id: webhook.merchant_id,
    invoice_reference: webhook.subject_reference,
    event: webhook.event,
    body: webhook.body,
    url: webhook.url ?? null,
    default_header: DEFAULT_SIGNATURE_HEADER,
  });
  if (!written.merchant_found) throw new Error(`merchant ${webhook.merchant_id} of webhook ${webhook.id} not found`);
  if (written.written) {
    numberAfterCommit(trx, event.owner);
    announceOnCommit(trx, webhook.event);
  }
  return webhook.id;
}

/** The bench's floor only (PlatformDeps.benchFloor): the webhook recorded as it was before events, without one. */
async function recordWithoutEvent(trx: Knex.Transaction, webhook: OutboundWebhook): Promise<string> {
  const merchant = await getMerchant(trx, webhook.merchant_id);
  if (!merchant) throw new Error(`merchant ${webhook.merchant_id} of webhook ${webhook.id} not found`);
  await insertWebhookEvent(trx, {
    id: webhook.id,
    merchant_id: webhook.merchant_id,
    invoice_reference: webhook.subject_reference,
    event: webhook.event,
    body: webhook.body,
    callback_url: webhook.url ?? merchant.callback_url,
    signature_header: merchant.signature_header || DEFAULT_SIGNATURE_HEADER,
    event_seq: null,
    event_id: null,
  });
  return webhook.id;
}

/**
 * Starts the deliveries of events recorded by a transaction that has committed; a failure to reach Temporal is
 * logged, not thrown (the change itself stands, and the pending event is delivered by a later redelivery or by
 * reconciliation's `webhook_stalled` repair).
 */
export async function startWebhookDeliveriesAfterCommit(deps: PlatformDeps, webhook_ids: string[]): Promise<void> {
  if (webhook_ids.length === 0) return;
  try {
    await startWebhookDeliveries(deps, webhook_ids);
  } catch (error) {
    deps.logger.warn({ webhook_ids, err: (error as Error).message }, 'webhook delivery not started; left pending');
  }
}

const MINOR_UNITS = /^(0|[1-9][0-9]{0,30})$/;
const CURRENCY = /^[A-Z]{3,5}$/;

/**
 * The search attributes a delivery run starts with (docs/operations.md "Search attributes"), by webhook id:
 * PaymentOwnerId (its merchant), PaymentKind `webhook`, and PaymentAmountUnits and PaymentCurrency when its event's
 * data has them (`amount_units` in minor units and `currency`, docs/events.md: payins, deposits, refunds, transfers).
 * PaymentStatus is the workflow's, at its end. One query for all `webhook_ids`; a webhook without an event (purged,
 * or recorded before events) gets its owner and kind only.
 */
async function deliverySearchAttributes(database: Knex, webhook_ids: string[]): Promise<Map<string, PaymentStartOptions>> {
  const rows = (await database('webhook_events as w')
    .leftJoin('events as e', (join) => {
      join.on('e.id', '=', 'w.event_id');
    })
    .whereIn('w.id', webhook_ids)
    .select('w.id', 'w.merchant_id', database.raw("e.data->>'amount_units' AS amount_units"), database.raw("e.data->>'currency' AS currency"))) as Array<{
    id: string;
    merchant_id: string;
    amount_units: string | null;
    currency: string | null;
  }>;
  return new Map(
    rows.map((row) => {
      const owner = { merchant_id: row.merchant_id };
      const attributes =
        row.amount_units !== null && MINOR_UNITS.test(row.amount_units) && row.currency !== null && CURRENCY.test(row.currency)
          ? paymentSearchAttributes({ owner, kind: 'webhook', amount_units: row.amount_units, currency: row.currency })
          : paymentSearchAttributes({ owner, kind: 'webhook' });
      return [row.id, attributes];
    }),
  );
}

/**
 * Starts the delivery workflow of each recorded event, unless one was ever started for it (`REJECT_DUPLICATE`: a
 * retried call never delivers twice; redelivery is an explicit operator action). Each run waits for its turn, and
 * starts with its payment's search attributes (`deliverySearchAttributes`).
 */
export async function startWebhookDeliveries(deps: PlatformDeps, webhook_ids: string[], options: { first_attempt_failed?: boolean } = {}): Promise<void> {
  const attributes = webhook_ids.length > 0 ? await deliverySearchAttributes(deps.database, webhook_ids) : new Map();
  for (const webhook_id of webhook_ids) {
    try {
      await withRequestDeadline(deps, () =>
        startWorkflow(deps.temporal, webhookDeliveryWorkflow, {
          taskQueue: deps.temporal.taskQueue,
          workflowId: webhook_id,
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          ...attributes.get(webhook_id),
          args: [{ webhook_id, retry: webhookRetrySettings(deps), ...(options.first_attempt_failed ? { first_attempt_failed: true } : {}) }],
        }),
      );
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }
}

/**
 * Delivers recorded events from a workflow's activity, in the order given (their subject's order): an event whose
 * turn has come (no earlier webhook of its subject pending) gets its first attempt right here (bounded by
 * WEBHOOK_INLINE_TIMEOUT_SECONDS), so an event the merchant accepts at once costs no workflow; any other event, and
 * one whose first attempt fails, gets its WebhookDeliveryWorkflow, which waits for its turn, backs off and retries
 * (durable, visible in the Temporal UI). A retried call skips delivered and failed events and hands an event already
 * attempted to its workflow, so an event is attempted inline at most once (delivery stays at least once, as every
 * webhook's: merchants dedupe on webhook-id). WEBHOOK_INLINE_FIRST_ATTEMPT=false starts every workflow instead.
 */
export async function deliverWebhooks(deps: PlatformDeps, webhook_ids: string[]): Promise<void> {
  if (!deps.config.WEBHOOK_INLINE_FIRST_ATTEMPT) return startWebhookDeliveries(deps, webhook_ids);
  const timeout_seconds = Math.min(deps.config.WEBHOOK_INLINE_TIMEOUT_SECONDS, deps.config.WEBHOOK_TIMEOUT_SECONDS);
  // One after the other: an event's turn depends on the one before it.
  for (const webhook_id of webhook_ids) {
    const event = await findEventForAttempt(deps.database, webhook_id);
    if (!event) throw new Error(`webhook ${webhook_id} not found`);
    if (event.status !== 'pending') continue;
    if (event.last_attempt > 0) {
      await startWebhookDeliveries(deps, [webhook_id], { first_attempt_failed: true });
      continue;
    }
    if (event.pending_predecessor) {
      await startWebhookDeliveries(deps, [webhook_id]);
      continue;
    }
    const next_retry_seconds = retryDelaySeconds(webhookRetrySettings(deps), undefined, 0);
    const first = await attemptDelivery(deps, webhook_id, { timeout_seconds, next_retry_seconds, read: event });
    if (!first.delivered) await startWebhookDeliveries(deps, [webhook_id], { first_attempt_failed: true });
  }
}

async function deliveryRecords(deps: PlatformDeps, events: WebhookEventRow[]) {
  const attempts = await attemptsOf(
    deps.database,
    events.map((event) => event.id),
  );
  return events.map((event) => ({
    webhookId: event.id,
    merchantId: event.merchant_id,
    invoiceReference: event.invoice_reference,
    event: event.event,
    status: event.status,
    callbackUrl: event.callback_url,
    createdAt: event.created_at.toISOString(),
    deliveredAt: event.delivered_at ? event.delivered_at.toISOString() : '',
    eventSeq: event.event_seq ?? 0n,
    attempts: attempts
      .filter((attempt) => attempt.webhook_id === event.id)
      .map((attempt) => ({
        attempt: attempt.attempt,
        attemptedAt: attempt.attempted_at.toISOString(),
        statusCode: attempt.status_code ?? 0,
        latencyMs: attempt.latency_ms,
        error: attempt.error ?? '',
        nextRetryAt: attempt.next_retry_at ? attempt.next_retry_at.toISOString() : '',
      })),
  }));
}

/** The merchant's webhook events, newest first (at most 500), each with every delivery attempt. */
export async function listWebhookDeliveries(deps: PlatformDeps, merchant_id: string) {
  return deliveryRecords(deps, await listMerchantEvents(deps.database, merchant_id, MAX_LISTED_EVENTS));
}

/**
 * Starts a new delivery run of a recorded event (same webhook id, attempt numbers continue): marked pending first,
 * then its run started, which waits for its turn. A run still retrying is left alone; one whose event already ended
 * is only finishing: waited for, then the new run starts.
 */
async function startNewRun(deps: PlatformDeps, event: WebhookEventRow): Promise<void> {
  const wasPending = event.status === 'pending';
  if (!wasPending) await markEventPending(deps.database, event.id);
  const attributes = (await deliverySearchAttributes(deps.database, [event.id])).get(event.id);
  const start = () =>
    deps.temporal.client.workflow.start(webhookDeliveryWorkflow, {
      taskQueue: deps.temporal.taskQueue,
      workflowId: event.id,
      ...attributes,
      args: [{ webhook_id: event.id, retry: webhookRetrySettings(deps) }],
    });
  try {
    await start();
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    if (wasPending) return;
    await withRequestDeadline(deps, () => deps.temporal.client.workflow.getHandle(event.id).result());
    await start();
  }
}

/**
 * Starts a new delivery run for an event (same webhook id, attempt numbers continue; it waits for its turn). A run
 * still retrying is left alone. @throws DomainError WEBHOOK_NOT_FOUND
 */
export async function redeliverWebhook(deps: PlatformDeps, webhook_id: string) {
  const event = await findWebhookEvent(deps.database, webhook_id);
  if (!event) throw reasonError(WEBHOOK_REASONS, 'WEBHOOK_NOT_FOUND');
  await startNewRun(deps, event);
  const [delivery] = await deliveryRecords(deps, [(await findWebhookEvent(deps.database, event.id))!]);
  return delivery!;
}

/**
 * Sends again every webhook produced from the merchant's events after `after_seq` (at most REDELIVER_MAX, in seq
 * order): each gets a new run (see redeliverWebhook), which waits for its turn, so each subject's webhooks go out in
 * order. @returns the webhook ids sent again, and the last event seq among them (0 when none)
 */
export async function redeliverAfter(deps: PlatformDeps, merchant_id: string, after_seq: bigint): Promise<{ webhook_ids: string[]; last_seq: bigint; has_more: boolean }> {
  const rows = await merchantWebhooksAfter(deps.database, merchant_id, after_seq, REDELIVER_MAX + 1);
  const chosen = rows.slice(0, REDELIVER_MAX);
  // Every one is pending before any run starts: a later webhook's run then finds its earlier ones pending and waits.
  for (const row of chosen) if (row.status !== 'pending') await markEventPending(deps.database, row.id);
  for (const row of chosen) await startNewRun(deps, { ...row, status: row.status === 'pending' ? 'pending' : 'delivered' });
  return { webhook_ids: chosen.map((row) => row.id), last_seq: chosen.at(-1)?.event_seq ?? 0n, has_more: rows.length > chosen.length };
}

// One delivery attempt: the WebhookDeliveryWorkflow's activities.

const MAX_ERROR_LENGTH = 500;

/** The header carrying the `seq` of the event a webhook was produced from (docs/webhooks.md). */
export const EVENT_SEQ_HEADER = 'webhook-event-seq';

/** How an operator reads a failed attempt of each kind of event in the log. */
function describe(event: string): string {
  if (event === 'bank_account.activated') return 'bank account activation call_back';
  if (event.startsWith('preorder.')) return 'preorder call_back';
  return 'webhook';
}

/** The retry settings of every WebhookDeliveryWorkflow, seconds. */
export function webhookRetrySettings(deps: Pick<PlatformDeps, 'config'>): WebhookRetrySettings {
  return {
    initial_seconds: deps.config.WEBHOOK_RETRY_INITIAL_SECONDS,
    max_interval_seconds: deps.config.WEBHOOK_RETRY_MAX_INTERVAL_SECONDS,
    window_seconds: deps.config.WEBHOOK_RETRY_WINDOW_SECONDS,
    jitter: deps.config.WEBHOOK_RETRY_JITTER,
  };
}

/**
 * Tells the next pending webhook of `event`'s subject (or `successor`, when the caller found it) that its turn may
 * have come (its run waits for this signal, and rechecks on a timer without it). A run not started yet checks when
 * it starts; a failed signal is logged only.
 */
export async function nudgeSuccessor(
  deps: PlatformDeps,
  event: Pick<WebhookEventRow, 'merchant_id' | 'invoice_reference' | 'event_seq'>,
  found?: string | null,
): Promise<void> {
  const successor = found === undefined ? await findPendingSuccessor(deps.database, event) : found;
  if (!successor) return;
  try {
    await deps.temporal.client.workflow.getHandle(successor).signal(predecessorSettledSignal);
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) deps.logger.warn({ webhook_id: successor, err: (error as Error).message }, 'webhook turn not signalled; its run rechecks');
  }
}

/** Longest part of an answer's body recorded with its attempt, bytes (docs/webhooks.md "Attempts"). */
export const RESPONSE_BODY_BYTES = 2048;

/** The first RESPONSE_BODY_BYTES of a body as text (whole characters, no NUL), the rest read and dropped. */
async function bodyStart(body: AsyncIterable<Buffer> & { dump(): Promise<void> }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= RESPONSE_BODY_BYTES) break;
  }
  await body.dump().catch(() => undefined);
  let text = new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks).subarray(0, RESPONSE_BODY_BYTES)).replaceAll(String.fromCharCode(0), '');
  while (Buffer.byteLength(text, 'utf8') > RESPONSE_BODY_BYTES) text = text.slice(0, -1);
  return text;
}

/**
 * The signing headers of one attempt: `signature_header` (hex HMAC-SHA256 of the body under the current secret) and
 * Standard Webhooks' `webhook-signature`, one `v1,<base64>` per secret, space-separated: the current secret's, then,
 * during a rotation's overlap, the replaced one's (a receiver holding either verifies).
 */
export function signatureHeaders(secrets: { current: string; previous?: string }, event: { id: string; body: string; signature_header: string }, timestamp_seconds: number) {
  const signatures = [secrets.current, ...(secrets.previous ? [secrets.previous] : [])].map((secret) => standardWebhookSignature(secret, event.id, timestamp_seconds, event.body));
  return {
    [event.signature_header]: hmacSha256Hex(secrets.current, event.body),
    'webhook-signature': signatures.join(' '),
  };
}

/** What one POST answered: its status code, the start of its body, and its error (null: a 2xx within the timeout). */
interface PostOutcome {
  status_code: number | null;
  response_body: string | null;
  error: string | null;
  /** How it ended, for payments_webhook_attempts_total. */
  outcome: WebhookAttemptOutcome;
}

/**
 * One signed POST of `body` to `url` (the SSRF rules of deps.outbound), under the merchant's secrets.
 */
export async function signedPost(
  deps: PlatformDeps,
  target: { id: string; merchant_id: string; event: string; body: string; callback_url: string; signature_header: string; event_seq: bigint | null },
  attempt: number,
  timeout_seconds: number,
  /** The merchant's secrets when the caller read them already. */
  read?: SigningSecrets,
): Promise<PostOutcome> {
  const secrets = read ?? (await merchantSigningSecrets(deps, target.merchant_id));
  const timeoutMs = Math.round(timeout_seconds * 1000);
  const timestamp_seconds = Math.floor(Date.now() / 1000);
  let status_code: number | null = null;
  let response_body: string | null = null;
  let error: string | null = null;
  let outcome: WebhookAttemptOutcome | undefined;
  const refusal = deps.outbound.checkUrl(target.callback_url);
  try {
    if (refusal) throw new OutboundRefusedError(refusal);
    const response = await request(target.callback_url, {
      dispatcher: deps.outbound.dispatcher,
      method: 'POST',
      body: target.body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        'content-type': 'application/json',
        'x-webhook-id': target.id,
        'x-webhook-event': target.event,
        'x-webhook-attempt': String(attempt),
        // Standard Webhooks: over id, timestamp and body, so replays and altered ids fail.
        'webhook-id': target.id,
        'webhook-timestamp': String(timestamp_seconds),
        ...signatureHeaders(secrets, target, timestamp_seconds),
        // The event's place in its owner's stream (GET /api/v1/events), when the webhook was produced from one.
        ...(target.event_seq === null ? {} : { [EVENT_SEQ_HEADER]: String(target.event_seq) }),
      },
    });
    status_code = response.statusCode;
    response_body = await bodyStart(response.body);
    if (status_code < 200 || status_code > 299) error = `HTTP ${status_code}`;
  } catch (failure) {
    error = ((failure as Error).message || String(failure)).slice(0, MAX_ERROR_LENGTH);
    outcome = failureOutcome(failure, status_code);
  }
  return { status_code, response_body, error, outcome: error === null ? 'delivered' : (outcome ?? 'http_error') };
}

/** How an attempt that threw ended: the outbound policy refused the URL, it ran out of time, or the network failed. */
function failureOutcome(failure: unknown, status_code: number | null): WebhookAttemptOutcome {
  // The policy refuses a URL before the request, or an address as the dispatcher connects (the request's cause).
  if (failure instanceof OutboundRefusedError || (failure as { cause?: unknown }).cause instanceof OutboundRefusedError) return 'refused';
  const code = (failure as { code?: unknown }).code;
  const name = (failure as { name?: unknown }).name;
  if (name === 'TimeoutError' || name === 'AbortError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
  return status_code === null ? 'network' : 'http_error';
}

/**
 * Sends one signed `webhook.test` event to `url` under the merchant's secrets and signature header (the dashboard's
 * test delivery: before a URL change is saved, and on demand). Recorded nowhere but the log.
 * @returns what it answered (error null: a 2xx within WEBHOOK_TIMEOUT_SECONDS)
 */
export async function sendTestWebhook(deps: PlatformDeps, merchant_id: string, url: string): Promise<PostOutcome & { webhook_id: string }> {
  const merchant = await getMerchant(deps.database, merchant_id);
  if (!merchant) throw new Error(`merchant ${merchant_id} not found`);
  const id = `whtest_${randomUUID()}`;
  const body = JSON.stringify({ event: 'webhook.test', webhook_id: id, merchant_id, created_at: new Date().toISOString() });
  const target = { id, merchant_id, event: 'webhook.test', body, callback_url: url, signature_header: merchant.signature_header || DEFAULT_SIGNATURE_HEADER, event_seq: null };
  const outcome = await signedPost(deps, target, 1, deps.config.WEBHOOK_TIMEOUT_SECONDS);
  deps.logger.info({ merchant_id, webhook_id: id, status_code: outcome.status_code, error: outcome.error }, 'test webhook sent');
  return { ...outcome, webhook_id: id };
}

/** The error an attempt records when the merchant's endpoint is disabled (nothing is sent). */
export const ENDPOINT_DISABLED_ERROR = 'endpoint disabled: enable it on the dashboard';

/**
 * One signed delivery attempt of a recorded event, recorded (time, status code, latency, error, and when the next
 * is due: `next_retry_seconds` after it, unless null); any 2xx within `timeout_seconds` (default
 * WEBHOOK_TIMEOUT_SECONDS) is delivered, and then the next pending webhook of its subject is told.
 * `read`: the row as just read, when the caller has it.
 * @throws Error when the event does not exist (a programming error)
 */
export async function attemptDelivery(
  deps: PlatformDeps,
  webhook_id: string,
  options: { timeout_seconds?: number; next_retry_seconds: number | null; read?: EventForAttempt },
): Promise<WebhookAttemptResult> {
  const event = options.read ?? (await findEventForAttempt(deps.database, webhook_id));
  if (!event) throw new Error(`webhook ${webhook_id} not found`);
  const attempt = event.last_attempt + 1;
  const attempted_at = new Date();
  const started = performance.now();
  // One read: the secrets and the endpoint's state. A disabled endpoint gets nothing until the merchant enables it;
  // the attempt is recorded as refused here.
  const secrets = await merchantSigningSecrets(deps, event.merchant_id);
  const { status_code, response_body, error, outcome } = secrets.disabled_at
    ? { status_code: null, response_body: null, error: ENDPOINT_DISABLED_ERROR, outcome: 'disabled' as const }
    : await signedPost(deps, event, attempt, options.timeout_seconds ?? deps.config.WEBHOOK_TIMEOUT_SECONDS, secrets);
  const latency_ms = Math.round(performance.now() - started);
  const delivered = error === null;
  // A delivered attempt to an endpoint that was not failing changes nothing: no write.
  if (!secrets.disabled_at && !(delivered && secrets.failing_since === null)) await trackEndpoint(deps, event, delivered);
  deps.metrics?.webhookAttempts.observe({ event: event.event, outcome: delivered ? 'delivered' : 'failed' }, latency_ms / 1000);
  deps.metrics?.webhookAttemptOutcomes.inc({ outcome });
  if (!delivered) {
    deps.logger.warn({ webhook_id: event.id, event: event.event, merchant_id: event.merchant_id, attempt, status_code, error }, `${describe(event.event)} failed`);
  }
  const next_retry_at =
    delivered || options.next_retry_seconds === null ? null : new Date(attempted_at.getTime() + latency_ms + Math.round(options.next_retry_seconds * 1000));
  const successor = await recordAttempt(deps.database, { webhook_id: event.id, attempt, attempted_at, status_code, latency_ms, error, next_retry_at, response_body }, delivered);
  if (delivered) await nudgeSuccessor(deps, event, successor);
  return { delivered, attempt };
}

/**
 * Keeps the merchant's endpoint's failing time (src/onboarding `recordEndpointOutcome`) and, when this failed attempt
 * ends WEBHOOK_DISABLE_AFTER_DAYS of nothing but failures, records `webhook_endpoint.disabled` (no webhook: the
 * endpoint is failing; the dashboard shows a notice).
 */
async function trackEndpoint(deps: PlatformDeps, event: Pick<WebhookEventRow, 'id' | 'merchant_id' | 'callback_url'>, delivered: boolean): Promise<void> {
  const disabled = await recordEndpointOutcome(deps.database, event.merchant_id, delivered, deps.config.WEBHOOK_DISABLE_AFTER_DAYS * 86_400);
  if (!disabled) return;
  const state = await webhookEndpointState(deps.database, event.merchant_id);
  await deps.database.transaction((trx) =>
    recordEvent(trx, {
      owner: { type: 'merchant', id: event.merchant_id },
      subject: event.merchant_id,
      type: 'webhook_endpoint.disabled',
      data: { callback_url: event.callback_url, failing_since: state?.failing_since?.toISOString() ?? null, webhook_id: event.id },
    }),
  );
  deps.logger.warn({ merchant_id: event.merchant_id, webhook_id: event.id }, 'webhook endpoint disabled: every attempt failed for WEBHOOK_DISABLE_AFTER_DAYS');
}

/**
 * Gives a pending event up: marked failed with its `webhook.failed` event (owner: the merchant; subject: the
 * webhook's), in one transaction; then the next pending webhook of its subject is told. A repeat changes nothing.
 */
export async function giveUp(deps: PlatformDeps, webhook_id: string): Promise<void> {
  const failed = await deps.database.transaction(async (trx) => {
    const row = await markEventFailed(trx, webhook_id);
    if (!row) return undefined;
    await recordEvent(trx, {
      owner: { type: 'merchant', id: row.merchant_id },
      subject: row.invoice_reference,
      type: 'webhook.failed',
      data: { webhook_id: row.id, event: row.event, event_seq: row.event_seq === null ? null : row.event_seq.toString(), attempts: row.attempt_count },
    });
    return row;
  });
  if (failed) await nudgeSuccessor(deps, failed);
}

export function createWebhookActivities(deps: PlatformDeps): WebhookDeliveryActivities {
  return {
    pendingPredecessor: async (input) => ({ webhook_id: await findPendingPredecessor(deps.database, input.webhook_id) }),
    attemptWebhookDelivery: (input) => attemptDelivery(deps, input.webhook_id, { next_retry_seconds: input.next_retry_seconds }),
    markWebhookFailed: (input) => giveUp(deps, input.webhook_id),
  };
}

// The SQL: one copy of each query.

type Conn = Knex | Knex.Transaction;

/** A row of `webhook_events`; `status` is pending, delivered or failed. */
export interface WebhookEventRow {
  id: string;
  merchant_id: string;
  /** The subject: the reference of the payment (or record) the webhook is about. */
  invoice_reference: string;
  event: string;
  body: string;
  callback_url: string;
  signature_header: string;
  status: 'pending' | 'delivered' | 'failed';
  attempt_count: number;
  /**
   * The `seq` of the event the webhook was produced from: null on rows written before events, and until the event is
   * numbered (after its transaction committed; `numberedWebhook` numbers it).
   */
  event_seq: bigint | null;
  /** The id of the event the webhook was produced from (null on rows written before events, and the bench's floor). */
  event_id: bigint | null;
  created_at: Date;
  delivered_at: Date | null;
}

export interface WebhookAttemptRow {
  webhook_id: string;
  attempt: number;
  attempted_at: Date;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  /** When the next attempt is due after this failed one; null when delivered or none follows. */
  next_retry_at?: Date | null;
  /** The first 2 KiB of the answer's body (null when no answer came, or recorded before migration 053). */
  response_body?: string | null;
}

export type NewWebhookEvent = Pick<
  WebhookEventRow,
  'id' | 'merchant_id' | 'invoice_reference' | 'event' | 'body' | 'callback_url' | 'signature_header'
> & { event_seq: bigint | null; event_id: bigint | null };

/** Records a webhook without an event (a repeat with the same id is ignored): the bench's floor only. */
export async function insertWebhookEvent(trx: Conn, event: NewWebhookEvent): Promise<void> {
  await trx('webhook_events')
    .insert({ ...event, event_seq: event.event_seq === null ? null : event.event_seq.toString(), event_id: event.event_id === null ? null : event.event_id.toString() })
    .onConflict('id')
    .ignore();
}

/**
 * Writes an event and the webhook produced from it, in one statement: unless a webhook with this id was recorded
 * before (then neither), the event (unnumbered) and the webhook carrying its id, to `url` (null: the merchant's
 * callback_url) signed under the merchant's signature header (`default_header` when it has none). The sequencer
 * gives both the event's `seq` after the commit.
 * @returns whether the merchant exists, and whether the two were written now
 */
export async function insertWebhookWithEvent(
  trx: Knex.Transaction,
  event: NewEventRow,
  webhook: Pick<WebhookEventRow, 'id' | 'merchant_id' | 'invoice_reference' | 'event' | 'body'> & { url: string | null; default_header: string },
): Promise<{ merchant_found: boolean; written: boolean }> {
  const write = eventWriteCtes(event, { sql: 'EXISTS (SELECT 1 FROM fresh)', bindings: [] });
  const result = await trx.raw(
    `WITH merchant AS (SELECT callback_url, signature_header FROM merchants WHERE id = ?),
     fresh AS (SELECT 1 FROM merchant WHERE NOT EXISTS (SELECT 1 FROM webhook_events WHERE id = ?)),
     ${write.sql},
     webhook AS (
       INSERT INTO webhook_events (id, merchant_id, invoice_reference, event, body, callback_url, signature_header, event_id)
       SELECT ?, ?, ?, ?, ?, coalesce(?, merchant.callback_url), coalesce(nullif(merchant.signature_header, ''), ?), written_event.id
         FROM written_event, merchant
       RETURNING event_id
     )
     SELECT EXISTS (SELECT 1 FROM merchant) AS merchant_found, EXISTS (SELECT 1 FROM webhook) AS written`,
    [
      webhook.merchant_id,
      webhook.id,
      ...write.bindings,
      webhook.id,
      webhook.merchant_id,
      webhook.invoice_reference,
      webhook.event,
      webhook.body,
      webhook.url,
      webhook.default_header,
    ],
  );
  return result.rows[0] as { merchant_found: boolean; written: boolean };
}

/**
 * Numbers the merchant's pending events (with their webhooks) when `row`'s event is not numbered yet: its place in
 * its subject's order, and the `seq` it carries, are known only then. @returns whether it numbered
 */
async function numberedWebhook(database: Knex, row: Pick<WebhookEventRow, 'merchant_id' | 'event_seq' | 'event_id'>): Promise<boolean> {
  if (row.event_seq !== null || row.event_id === null) return false;
  await numberOwnerEvents(database, { type: 'merchant', id: row.merchant_id });
  return true;
}

export function findWebhookEvent(database: Conn, id: string): Promise<WebhookEventRow | undefined> {
  return database<WebhookEventRow>('webhook_events').where({ id }).first();
}

/**
 * A pending webhook of the same merchant and subject with a lower event seq than the one named by `alias` (the
 * greatest such: the one just before it), as a subquery.
 */
function pendingPredecessorOf(database: Conn, alias: string): Knex.QueryBuilder {
  return database('webhook_events as p')
    .select('p.id')
    .where('p.status', 'pending')
    .whereRaw(`p.merchant_id = ${alias}.merchant_id AND p.invoice_reference = ${alias}.invoice_reference AND p.event_seq < ${alias}.event_seq`)
    .orderBy('p.event_seq', 'desc')
    .limit(1);
}

/**
 * An event with the number of its last recorded attempt (0 before the first) and the webhook before it still
 * pending, if any (its turn has not come while one is).
 */
export type EventForAttempt = WebhookEventRow & { last_attempt: number; pending_predecessor: string | null };

/**
 * The event, its last attempt's number and its pending predecessor, in one query (two more when its event was not
 * numbered yet: the numbering, and the query again).
 */
export async function findEventForAttempt(database: Knex, id: string): Promise<EventForAttempt | undefined> {
  const found = await readEventForAttempt(database, id);
  if (found && (await numberedWebhook(database, found))) return readEventForAttempt(database, id);
  return found;
}

async function readEventForAttempt(database: Knex, id: string): Promise<EventForAttempt | undefined> {
  const row = await database('webhook_events as e')
    .where('e.id', id)
    .first(
      'e.*',
      database('webhook_delivery_attempts').where('webhook_id', id).max('attempt').as('last_attempt'),
      pendingPredecessorOf(database, 'e').as('pending_predecessor'),
    );
  return row ? { ...(row as WebhookEventRow), last_attempt: Number(row.last_attempt ?? 0), pending_predecessor: row.pending_predecessor ?? null } : undefined;
}

/** The pending webhook just before `id` in its subject's order, or null (also for an unknown id). */
export async function findPendingPredecessor(database: Knex, id: string): Promise<string | null> {
  const read = () =>
    database('webhook_events as e')
      .where('e.id', id)
      .first('e.merchant_id', 'e.event_seq', 'e.event_id', pendingPredecessorOf(database, 'e').as('pending_predecessor'));
  let row = await read();
  if (row && (await numberedWebhook(database, row as WebhookEventRow))) row = await read();
  return row?.pending_predecessor ?? null;
}

/** The pending webhook just after `event` in its subject's order (the lowest greater event seq), or null. */
export async function findPendingSuccessor(database: Knex, event: Pick<WebhookEventRow, 'merchant_id' | 'invoice_reference' | 'event_seq'>): Promise<string | null> {
  if (event.event_seq === null) return null;
  const row = await database('webhook_events')
    .where({ merchant_id: event.merchant_id, invoice_reference: event.invoice_reference, status: 'pending' })
    .where('event_seq', '>', event.event_seq.toString())
    .orderBy('event_seq')
    .first('id');
  return row?.id ?? null;
}

/**
 * Records one attempt and the event's counters in one statement (atomic on its own); a delivered one also answers
 * the pending webhook just after it in its subject's order (`findPendingSuccessor`), whose turn may have come.
 * @returns that successor's id, or null
 */
export async function recordAttempt(database: Knex, attempt: WebhookAttemptRow, delivered: boolean): Promise<string | null> {
  const record = database('webhook_delivery_attempts').insert(attempt).onConflict(['webhook_id', 'attempt']).ignore();
  const update = database('webhook_events')
    .where({ id: attempt.webhook_id })
    .update({
      attempt_count: database.raw('greatest(attempt_count, ?)', [attempt.attempt]),
      ...(delivered ? { status: 'delivered', delivered_at: database.fn.now() } : {}),
    })
    .returning(['merchant_id', 'invoice_reference', 'event_seq']);
  if (!delivered) {
    await database.raw('WITH recorded AS (?) ?', [record, update]);
    return null;
  }
  const result = await database.raw(
    `WITH recorded AS (?), updated AS (?)
     SELECT (SELECT p.id FROM webhook_events p, updated u
              WHERE p.merchant_id = u.merchant_id AND p.invoice_reference = u.invoice_reference AND p.status = 'pending'
                AND p.event_seq > u.event_seq
              ORDER BY p.event_seq LIMIT 1) AS successor`,
    [record, update],
  );
  return (result.rows[0] as { successor: string | null } | undefined)?.successor ?? null;
}

/** Marks a pending event failed (given up). @returns the row when this call changed it, else undefined. */
export async function markEventFailed(trx: Conn, id: string): Promise<WebhookEventRow | undefined> {
  const [row] = (await trx('webhook_events').where({ id, status: 'pending' }).update({ status: 'failed' }).returning('*')) as WebhookEventRow[];
  return row;
}

export async function markEventPending(database: Knex, id: string): Promise<void> {
  await database('webhook_events').where({ id }).update({ status: 'pending' });
}

/** The merchant's newest events, at most `limit`. */
export function listMerchantEvents(database: Knex, merchant_id: string, limit: number): Promise<WebhookEventRow[]> {
  return database<WebhookEventRow>('webhook_events').where({ merchant_id }).orderBy('created_at', 'desc').limit(limit);
}

/** The longest cursor id looked up. */
const MAX_WEBHOOK_ID_LENGTH = 256;

/**
 * One page of `merchantId`'s webhooks, newest first (created_at, then id, both descending), of at most `limit` rows,
 * after the webhook `afterId` when given (the merchant dashboard's deliveries, through the index of migration 030),
 * of one `status` when given.
 * An `afterId` that is not one of this merchant's webhooks yields an empty page, never another merchant's rows.
 * `more` says whether a further page exists.
 */
export async function merchantWebhooksPage(
  database: Knex,
  merchantId: string,
  limit: number,
  afterId?: string,
  status?: WebhookEventRow['status'] | string,
): Promise<{ rows: WebhookEventRow[]; more: boolean }> {
  const query = database<WebhookEventRow>('webhook_events')
    .where({ merchant_id: merchantId, ...(status ? { status: status as WebhookEventRow['status'] } : {}) })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit + 1);
  if (afterId) {
    if (afterId.length > MAX_WEBHOOK_ID_LENGTH) return { rows: [], more: false };
    query.whereRaw('(created_at, id) < (SELECT created_at, id FROM webhook_events WHERE id = ? AND merchant_id = ?)', [afterId, merchantId]);
  }
  const rows = await query;
  return { rows: rows.slice(0, limit), more: rows.length > limit };
}

/** The merchant's webhooks produced from its events after `after_seq`, in seq order, at most `limit` (numbered first). */
export async function merchantWebhooksAfter(database: Knex, merchant_id: string, after_seq: bigint, limit: number): Promise<WebhookEventRow[]> {
  await numberOwnerEvents(database, { type: 'merchant', id: merchant_id });
  return database<WebhookEventRow>('webhook_events')
    .where({ merchant_id })
    .where('event_seq', '>', after_seq.toString())
    .orderBy('event_seq')
    .limit(limit);
}

export async function attemptsOf(database: Knex, webhook_ids: string[]): Promise<WebhookAttemptRow[]> {
  if (webhook_ids.length === 0) return [];
  return database<WebhookAttemptRow>('webhook_delivery_attempts').whereIn('webhook_id', webhook_ids).orderBy(['webhook_id', 'attempt']);
}
