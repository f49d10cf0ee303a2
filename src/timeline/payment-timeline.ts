/**
 * A payment's timeline (docs/timeline.md): for one public reference, one list in time order joining every source
 * that saw the payment —
 *
 *   request   the requests received about it (the request journal, src/events/requests.ts): `request.<action>`
 *   workflow  its workflow's history, every run (Temporal, under TIMELINE_TEMPORAL_DEADLINE_SECONDS; `gone` past the
 *             namespace's retention, `unavailable` when Temporal does not answer: the rest is still shown)
 *   provider  what the provider or acquirer said: the upstream's payin notifications (`provider.notification`), a
 *             deposit's confirmations and the acquirer's decisions (`provider.confirmation`, `provider.decision`)
 *   ledger    its ledger transactions (`ledger.posted`: every posting with its account and the balance it left) and
 *             holds (`ledger.held`, `ledger.hold_posted`, `ledger.hold_voided`), found by the `<reference>:<step>` keys
 *   event     its events (the event's type as kind)
 *   webhook   every delivery attempt of its webhooks (`webhook.delivered`, `webhook.failed`: status code, latency, when
 *             the next attempt is due)
 *
 * Owner-scoped: a payment's owners are its flow row's owner (payin and deposit: the merchant; pre-transfer: the
 * partner) and the owners of its events (a pre-transfer's receiving merchant), never whoever sent a request naming
 * it. An owner sees only its own requests,
 * events and webhooks, and the balance after a posting only on its own accounts; a reference that is unknown or
 * another owner's answers undefined either way, so the caller cannot tell them apart. Operators see everything,
 * failure messages included.
 *
 * Bounded: at most `maxPerSource` entries per source (default 200; a source cut short is listed in `truncated`).
 */
import type { Knex } from 'knex';
import { requestsOf, eventsOfSubject, type EventOwner, type PaymentRequest, type PlatformEvent } from '../events';
import type { LedgerKeyReads, OwnedPosting } from '../ledger/types';
import type { PlatformDeps } from '../platform-deps';
import { redact } from './redact';
import type { TimelineEntry, TimelineSource, TimelineSourceStatus } from './types';
import { workflowHistoryEntries } from './workflow-history';

/** Who reads a timeline: a payment's owner (its own payments only), or an operator (any, with failure messages). */
export type TimelineViewer = { kind: 'owner'; owner: EventOwner } | { kind: 'operator' };

export interface PaymentTimeline {
  /** The payment's reference (the one refunded when asked by a refund's reference). */
  reference: string;
  /** Asked by a refund's reference (`DRF…`, `RFD-…`): that refund; the timeline is its payment's. */
  refund_reference?: string;
  /** In time order; entries of one instant in source order (request, workflow, provider, ledger, event, webhook). */
  entries: TimelineEntry[];
  /** The sources that have no entries to give, and why (`gone`, `unavailable`). */
  sources: TimelineSourceStatus[];
  /** The sources cut at `maxPerSource` (their later entries are left out). */
  truncated: TimelineSource[];
}

export interface TimelineOptions {
  /** Entries per source at most (1..1000, default 200). */
  maxPerSource?: number;
}

export const TIMELINE_MAX_PER_SOURCE_DEFAULT = 200;
export const TIMELINE_MAX_PER_SOURCE = 1000;
export const TIMELINE_REFERENCE_MAX_LENGTH = 128;

type Deps = Pick<PlatformDeps, 'database' | 'ledger' | 'temporal' | 'config'>;
type Database = Knex | Knex.Transaction;

const SOURCE_ORDER: Record<TimelineSource, number> = { request: 0, workflow: 1, provider: 2, ledger: 3, event: 4, webhook: 5 };

function iso(value: Date | string | null | undefined): string {
  return new Date(value ?? 0).toISOString();
}

function units(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

function sameOwner(a: EventOwner, b: EventOwner): boolean {
  return a.type === b.type && a.id === b.id;
}

/**
 * The owners of a payment, from the payment's own records only: its flow row's owner and the owners of the events
 * the platform wrote about it (a pre-transfer's receiving merchant, a wallet movement's merchant). Never the request
 * journal: anyone can send a request naming any reference. Empty for a reference nothing knows.
 */
export async function ownersOf(conn: Database, reference: string): Promise<EventOwner[]> {
  const result = await conn.raw(
    `SELECT 'merchant' AS type, merchant_id AS id FROM payins WHERE invoice_reference = :reference
     UNION SELECT 'partner', partner_id FROM pre_transfers WHERE id = :reference
     UNION SELECT 'merchant', merchant_id FROM deposits WHERE reference = :reference
     UNION SELECT DISTINCT owner_type, owner_id FROM events WHERE subject = :reference`,
    { reference },
  );
  return (result.rows as Array<{ type: 'merchant' | 'partner'; id: string }>).map((row) => ({ type: row.type, id: row.id }));
}

function requestEntry(request: PaymentRequest): TimelineEntry {
  const who = request.owner_kind === 'upstream' ? 'upstream' : `${request.owner_kind} ${request.owner_id ?? ''}`.trim();
  return {
    at: iso(request.received_at),
    source: 'request',
    kind: `request.${request.action}`,
    summary: `${request.action} from ${who}: ${request.outcome}${request.duration_ms === null ? '' : ` in ${request.duration_ms} ms`}${request.reference === null ? ' (named this payment, not its owner)' : ''}`,
    details: {
      action: request.action,
      ...(request.reference === null ? { named_only: true } : {}),
      owner_kind: request.owner_kind,
      owner_id: request.owner_id,
      idempotency_key: request.idempotency_key,
      client_address: request.client_address,
      outcome: request.outcome,
      duration_ms: request.duration_ms,
    },
  };
}

function eventEntry(event: PlatformEvent): TimelineEntry {
  return {
    at: iso(event.created_at),
    source: 'event',
    kind: event.type,
    summary: `event ${event.type} (${event.owner.type} seq ${event.seq})`,
    details: {
      owner_type: event.owner.type,
      owner_id: event.owner.id,
      seq: event.seq.toString(),
      data: redact(event.data),
      ledger_transaction_id: event.ledger_transaction_id,
    },
  };
}

/** The upstream's notifications about a payin, as received (never the raw body). */
async function notificationEntries(conn: Database, reference: string, limit: number): Promise<TimelineEntry[]> {
  const rows = await conn('upstream_notifications')
    .select('status', 'amount_units', 'trx_ref', 'outcome', 'received_at', 'handed_at')
    .where({ invoice_reference: reference })
    .orderBy([{ column: 'received_at' }, { column: 'id' }])
    .limit(limit);
  return rows.map((row) => ({
    at: iso(row.received_at),
    source: 'provider' as const,
    kind: 'provider.notification',
    summary: `upstream notification: ${row.status}${row.amount_units === null ? '' : ` ${row.amount_units} units`}${row.trx_ref ? ` (${row.trx_ref})` : ''}, ${row.outcome}`,
    details: {
      status: row.status,
      amount_units: units(row.amount_units),
      trx_ref: row.trx_ref,
      outcome: row.outcome,
      handed_to_workflow_at: row.handed_at ? iso(row.handed_at) : null,
    },
  }));
}

/** A deposit's confirmations and the acquirer's decision on each. */
async function confirmationEntries(conn: Database, reference: string, limit: number): Promise<TimelineEntry[]> {
  const rows = await conn('deposit_confirmations')
    .select('id', 'method', 'actor', 'recorded_at', 'outcome', 'authorization_id', 'decided_at')
    .where({ deposit_reference: reference })
    .orderBy('recorded_at')
    .limit(limit);
  return rows.flatMap((row) => {
    const received: TimelineEntry = {
      at: iso(row.recorded_at),
      source: 'provider',
      kind: 'provider.confirmation',
      summary: `confirmation by ${row.actor} (${row.method}) recorded`,
      details: { confirmation_id: row.id, method: row.method, actor: row.actor },
    };
    if (!row.decided_at) return [received];
    const decided: TimelineEntry = {
      at: iso(row.decided_at),
      source: 'provider',
      kind: 'provider.decision',
      summary: `acquirer decision: ${row.outcome ?? 'unknown'}`,
      details: { confirmation_id: row.id, outcome: row.outcome, authorization_id: row.authorization_id },
    };
    return [received, decided];
  });
}

/**
 * The payment's ledger transactions with every posting, and its holds, read through the ledger (found by the
 * `<reference>:<step>` keys, or the bare reference). An owner sees each posting's account by its owner type and kind,
 * and the balance after it only on its own accounts.
 */
async function ledgerEntries(ledger: LedgerKeyReads, reference: string, viewer: TimelineViewer, limit: number): Promise<TimelineEntry[]> {
  const match = { keys: [reference], prefixes: [`${reference}:`] };
  const transactions = await ledger.transactionsByKey(match, { limit });
  const postings = await ledger.postingsOf(transactions.map((transaction) => transaction.transaction_id));
  const mine = (row: OwnedPosting) => viewer.kind === 'operator' || (row.owner_type === viewer.owner.type && row.owner_id === viewer.owner.id);
  const entries: TimelineEntry[] = transactions.map((transaction) => {
    const lines = postings
      .filter((row) => row.transaction_id === transaction.transaction_id)
      .map((row) => ({
        account: mine(row) ? { id: row.account_id, owner_type: row.owner_type, owner_id: row.owner_id, kind: row.kind } : { owner_type: row.owner_type, kind: row.kind },
        amount_units: units(row.amount_units),
        currency: row.currency,
        balance_after_units: mine(row) ? units(row.balance_after_units) : null,
      }));
    const credited = lines.filter((line) => !String(line.amount_units).startsWith('-'));
    return {
      at: iso(transaction.created_at),
      source: 'ledger',
      kind: 'ledger.posted',
      summary: `ledger ${transaction.idempotency_key}: ${transaction.description} (${lines.length} postings, ${credited.map((line) => `${line.amount_units} ${line.currency} to ${line.account.owner_type} ${line.account.kind}`).join(', ')})`,
      details: { transaction_id: transaction.transaction_id, idempotency_key: transaction.idempotency_key, description: transaction.description, postings: lines },
    };
  });
  const holds = await ledger.holdsByKey({ prefixes: [`${reference}:`] }, { limit });
  for (const hold of holds) {
    const details = { pending_transfer_id: hold.pending_transfer_id, idempotency_key: hold.idempotency_key, amount_units: units(hold.amount_units), currency: hold.currency, state: hold.state };
    entries.push({ at: iso(hold.created_at), source: 'ledger', kind: 'ledger.held', summary: `ledger hold ${hold.idempotency_key}: ${hold.amount_units} ${hold.currency}`, details });
    if (hold.resolved_at && hold.state !== 'pending') {
      const kind = hold.state === 'posted' ? 'ledger.hold_posted' : 'ledger.hold_voided';
      entries.push({ at: iso(hold.resolved_at), source: 'ledger', kind, summary: `ledger hold ${hold.idempotency_key} ${hold.state}`, details });
    }
  }
  return entries;
}

/** Every delivery attempt of the payment's webhooks (an owner: its own webhooks only). */
async function webhookEntries(conn: Database, reference: string, viewer: TimelineViewer, limit: number): Promise<TimelineEntry[]> {
  if (viewer.kind === 'owner' && viewer.owner.type !== 'merchant') return [];
  const query = conn('webhook_delivery_attempts as a')
    .join('webhook_events as w', 'w.id', 'a.webhook_id')
    .select('a.webhook_id', 'w.event', 'w.event_seq', 'a.attempt', 'a.attempted_at', 'a.status_code', 'a.latency_ms', 'a.error', 'a.next_retry_at')
    .where('w.invoice_reference', reference)
    .orderBy([{ column: 'a.attempted_at' }, { column: 'a.id' }])
    .limit(limit);
  if (viewer.kind === 'owner') query.andWhere('w.merchant_id', viewer.owner.id);
  const rows = await query;
  return rows.map((row) => {
    const delivered = row.status_code !== null && row.status_code >= 200 && row.status_code < 300;
    const answer = row.status_code === null ? 'no answer' : `HTTP ${row.status_code}`;
    const next = row.next_retry_at ? `, next attempt at ${iso(row.next_retry_at)}` : '';
    return {
      at: iso(row.attempted_at),
      source: 'webhook' as const,
      kind: delivered ? 'webhook.delivered' : 'webhook.failed',
      summary: `webhook ${row.event} attempt ${row.attempt}: ${answer} in ${row.latency_ms} ms${delivered ? '' : next}`,
      details: {
        webhook_id: row.webhook_id,
        event: row.event,
        event_seq: row.event_seq === null ? null : String(row.event_seq),
        attempt: row.attempt,
        status_code: row.status_code,
        latency_ms: row.latency_ms,
        error: row.error ? String(redact(String(row.error).slice(0, 300))) : null,
        next_retry_at: row.next_retry_at ? iso(row.next_retry_at) : null,
      },
    };
  });
}

/** `entries` cut at `limit`, noting the source when cut. */
function capped(source: TimelineSource, entries: TimelineEntry[], limit: number, truncated: TimelineSource[]): TimelineEntry[] {
  if (entries.length <= limit) return entries;
  truncated.push(source);
  return entries.slice(0, limit);
}

/** A refund's reference: Area C's `DRF…` (deposit_refunds) or Area B's `RFD-…` (refunds). */
const REFUND_REFERENCE = /^(DRF[A-Z0-9]{18}|RFD-[A-Z0-9]{20})$/;

/** Most refunds of one payment a timeline reads (each adds a workflow history read). */
export const TIMELINE_REFUNDS_MAX = 20;

/**
 * The payment a refund reference refunds: a deposit refund's deposit (`DEP…`), an Area B refund's payin (its
 * invoice reference). undefined for any other reference or an unknown refund.
 */
export async function refundedPayment(conn: Database, reference: string): Promise<string | undefined> {
  if (!REFUND_REFERENCE.test(reference)) return undefined;
  const row = reference.startsWith('DRF')
    ? ((await conn('deposit_refunds').where({ refund_reference: reference }).first('deposit_reference as payment')) as { payment: string } | undefined)
    : ((await conn('refunds').where({ refund_reference: reference }).first('invoice_reference as payment')) as { payment: string } | undefined);
  return row?.payment;
}

/** The references of a payment's refunds (Area B's of a payin, Area C's of a deposit), oldest first, at most `limit`. */
export async function refundsOfPayment(conn: Database, payment: string, limit = TIMELINE_REFUNDS_MAX): Promise<string[]> {
  const result = await conn.raw(
    `(SELECT refund_reference, created_at FROM refunds WHERE invoice_reference = :payment
      UNION ALL SELECT refund_reference, created_at FROM deposit_refunds WHERE deposit_reference = :payment)
     ORDER BY created_at, refund_reference LIMIT :limit`,
    { payment, limit },
  );
  return (result.rows as Array<{ refund_reference: string }>).map((row) => row.refund_reference);
}

/**
 * The timeline of the payment `reference` as `viewer` may see it, with every refund of the payment merged in (at most
 * TIMELINE_REFUNDS_MAX): each refund's workflow history, requests and ledger steps (its holds, and their post or void),
 * so the payment's story includes the money going back. A refund's reference (`DRF…`, `RFD-…`) answers the same
 * timeline of the payment it refunds (`reference` is then that payment's, `refund_reference` the one asked); the
 * owner check is always the payment's.
 * @returns undefined when the reference is unknown, out of shape, or not the viewer's (one answer for all three)
 * @throws the database's errors; never Temporal's (the workflow source answers a status instead)
 */
export async function paymentTimeline(deps: Deps, asked: string, viewer: TimelineViewer, options: TimelineOptions = {}): Promise<PaymentTimeline | undefined> {
  if (!asked || asked.length > TIMELINE_REFERENCE_MAX_LENGTH) return undefined;
  const limit = Math.min(Math.max(1, Math.floor(options.maxPerSource ?? TIMELINE_MAX_PER_SOURCE_DEFAULT)), TIMELINE_MAX_PER_SOURCE);
  const { database } = deps;
  const refunded = await refundedPayment(database, asked);
  const reference = refunded ?? asked;
  const owners = await ownersOf(database, reference);
  if (owners.length === 0) return undefined;
  if (viewer.kind === 'owner' && !owners.some((owner) => sameOwner(owner, viewer.owner))) return undefined;

  const mine = (owner: EventOwner) => viewer.kind === 'operator' || sameOwner(owner, viewer.owner);
  // Temporal is read alongside the database: the slower of the two sets the timeline's latency.
  const historyOf = (workflowId: string) => {
    const read = workflowHistoryEntries(deps.temporal.client, workflowId, {
      deadlineSeconds: deps.config.TIMELINE_TEMPORAL_DEADLINE_SECONDS,
      uiUrl: deps.config.TEMPORAL_UI_URL,
      maxEventsPerRun: limit,
      failureMessages: viewer.kind === 'operator',
    });
    read.catch(() => undefined);
    return read;
  };
  // Each refund's workflow (id = the refund reference) beside the payment's.
  const refunds = await refundsOfPayment(database, reference);
  const histories = [historyOf(reference), ...refunds.map(historyOf)];
  const [requests, notifications, confirmations, ledger, events, webhooks, refundRequests, refundLedger] = await Promise.all([
    requestsOf(database, reference, Math.min(limit + 1, 200), viewer.kind === 'operator'),
    notificationEntries(database, reference, limit + 1),
    confirmationEntries(database, reference, limit + 1),
    ledgerEntries(deps.ledger, reference, viewer, limit + 1),
    eventsOfSubject(database, reference),
    webhookEntries(database, reference, viewer, limit + 1),
    Promise.all(refunds.map((refund) => requestsOf(database, refund, Math.min(limit + 1, 200), viewer.kind === 'operator'))).then((lists) => lists.flat()),
    // Area B's refund steps are keyed `RFD-…:<step>`; Area C's (`DEP…:refund:DRF…:<step>`) are already the deposit's.
    Promise.all(refunds.filter((refund) => refund.startsWith('RFD-')).map((refund) => ledgerEntries(deps.ledger, refund, viewer, limit + 1))).then((lists) => lists.flat()),
  ]);
  const truncated: TimelineSource[] = [];
  const sources: TimelineSourceStatus[] = [];
  const workflowEntries: TimelineEntry[] = [];
  for (const workflow of await Promise.all(histories)) {
    if (workflow.state !== 'ok') sources.push(workflow);
    else {
      workflowEntries.push(...workflow.entries);
      if (workflow.runs.some((run) => run.truncated) || workflow.runs_left_out > 0) truncated.push('workflow');
    }
  }

  const visibleRequests = [...requests, ...refundRequests].filter(
    (request) => viewer.kind === 'operator' || request.owner_kind === 'upstream' || (request.owner_kind === viewer.owner.type && request.owner_id === viewer.owner.id),
  );
  const entries = [
    ...capped('request', visibleRequests.map(requestEntry), limit, truncated),
    ...capped('workflow', workflowEntries, limit, truncated),
    ...capped('provider', [...notifications, ...confirmations], limit, truncated),
    ...capped('ledger', [...ledger, ...refundLedger], limit, truncated),
    ...capped('event', events.filter((event) => mine(event.owner)).map(eventEntry), limit, truncated),
    ...capped('webhook', webhooks, limit, truncated),
  ];
  entries.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : SOURCE_ORDER[a.source] - SOURCE_ORDER[b.source]));
  return { reference, ...(refunded ? { refund_reference: asked } : {}), entries, sources, truncated: [...new Set(truncated)] };
}
