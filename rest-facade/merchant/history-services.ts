/**
 * The read-only history services of Area C (docs/area-c.md "Events and timeline"): the merchant's own event stream
 * (`list_events`, one EventsService.ListEvents call) and one payment's timeline (`list_timeline`, one
 * TimelineService.GetPaymentTimeline call). Each reads its fields, sends the call's ActionAuth as the owner's proof
 * (payments.events.v1.OwnerProof `area_c`) and shapes `data`; the api verifies the proof, binds the typed request to
 * the signed body (src/merchant-auth SIGNED_BODY_BINDINGS) and answers the merchant the proof names, never a field.
 * Read-only: nothing moves, so no idempotency.
 */
import { integer, present, refuse, type FieldRule } from '../../src/field-rules';
import { isLosslessNumber, parseJsonLossless } from '../../src/money';
import { timelineJson } from '../timeline-json';
import { readAreaC, string, type MerchantServiceTable } from './contract';

/** Events per page: at most, and when `limit` is absent (docs/events.md, as Area B's GET /api/v1/events). */
export const LIST_EVENTS_LIMITS = { max: 500, default: 100, typeMaxLength: 64, subjectMaxLength: 128 } as const;
/** Longest timeline reference (TimelineService) and most entries per source a merchant may ask. */
export const LIST_TIMELINE_LIMITS = { referenceMaxLength: 128, maxPerSource: 1000 } as const;

/** The largest `seq` (PostgreSQL bigint). */
const MAX_SEQ = 9_223_372_036_854_775_807n;

/** `after`: the seq of the last event seen, a whole number from 0 as a JSON integer or digit string (absent: 0). */
const after: FieldRule<bigint> = (value) => {
  if (!present(value)) return 0n;
  const digits = isLosslessNumber(value) ? value.toString() : typeof value === 'string' ? value : '';
  if (!/^-?\d{1,19}$/.test(digits)) return refuse('integer');
  const seq = BigInt(digits);
  if (seq < 0n) return refuse('min', 0);
  return seq > MAX_SEQ ? refuse('max', MAX_SEQ) : seq;
};

const LIST_EVENTS = {
  after,
  limit: integer({ min: 1, max: LIST_EVENTS_LIMITS.max, digits: 6 }),
  type: string({ max: LIST_EVENTS_LIMITS.typeMaxLength }),
  subject: string({ max: LIST_EVENTS_LIMITS.subjectMaxLength }),
};

/**
 * list_events' query, as the EventsService takes it (the defaults the signed-body binding assumes: after 0, limit 100).
 * @throws DomainError VALIDATION_FAILED listing every failing field in Area C's words
 */
export function readListEvents(body: Record<string, unknown>) {
  const read = readAreaC(LIST_EVENTS, body);
  return { after: read.after, limit: read.limit ?? LIST_EVENTS_LIMITS.default, type: read.type ?? '', subject: read.subject ?? '' };
}

const LIST_TIMELINE = {
  reference: string({ required: true, max: LIST_TIMELINE_LIMITS.referenceMaxLength }),
  max_per_source: integer({ min: 1, max: LIST_TIMELINE_LIMITS.maxPerSource }),
};

/**
 * list_timeline's request fields (`max_per_source` absent: 0, the service's default of 200).
 * @throws DomainError VALIDATION_FAILED listing every failing field in Area C's words
 */
export function readListTimeline(body: Record<string, unknown>) {
  const read = readAreaC(LIST_TIMELINE, body);
  return { reference: read.reference, maxPerSource: read.max_per_source ?? 0 };
}

export const historyMerchantServices: MerchantServiceTable = {
  /** data `{events: [{seq, type, subject, created_at, ledger_transaction_id, data}], has_more, next_after}` */
  async list_events({ body, caller, clients, callOptions }) {
    const query = readListEvents(body);
    const { page } = await clients.events.listEvents({ proof: { proof: { case: 'areaC', value: caller.auth } }, query }, callOptions);
    return {
      events: (page?.events ?? []).map((event) => ({
        seq: event.seq,
        type: event.type,
        subject: event.subject,
        created_at: event.createdAt,
        ledger_transaction_id: event.ledgerTransactionId || null,
        data: parseJsonLossless(event.dataJson),
      })),
      has_more: page?.hasMore ?? false,
      next_after: page?.nextAfter ?? query.after,
    };
  },

  /** data `{reference, entries: [{at, source, kind, summary, details, link}], sources, truncated}` */
  async list_timeline({ body, caller, clients, callOptions }) {
    const fields = readListTimeline(body);
    const answer = await clients.timeline.getPaymentTimeline({ ...fields, proof: { proof: { case: 'areaC', value: caller.auth } } }, callOptions);
    return timelineJson(answer);
  },
};
