/**
 * EventsService (docs/events.md): an owner's event stream, one page per call, in `seq` order with `has_more` and
 * `next_after`. The owner of ListEvents is the one its proof names, never a field: the proofs are checked by the
 * verifiers the composition root hands in (`OwnerProofs`: Area B's API key, checked as the PayinService checks it;
 * Area C's signed /do-action `list_events`, checked as every Area C action, its signed body bound to the query).
 * Operators name the owner (ListOwnerEvents) and send a merchant's webhooks again (RedeliverEvents, audited).
 *
 * Errors: the proof's refusals (UNAUTHENTICATED, MERCHANT_SUSPENDED, RATE_LIMITED; Area C's MERCHANT_UNAUTHENTICATED,
 * SESSION_*, INVALID_SIGNATURE), VALIDATION_FAILED with field
 * problems (`type`: invalid, an unknown event type; `subject`: max_length:128; `owner` / `merchant_id`: required).
 */
import { create } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { COMMON_REASONS, invalidFields, reasonError } from '../errors';
import { problem } from '../field-problems';
import { EventsQuerySchema, type EventsQuery, type EventsService, type OwnerProof } from '../gen/payments/events/v1/events_pb';
import type { ActionAuth } from '../gen/payments/wallet/v1/wallet_pb';
import type { PlatformDeps } from '../platform-deps';
import { redeliverAfter } from '../webhooks';
import { EVENT_SUBJECT_MAX_LENGTH, EVENTS_PAGE_MAX, isEventType, listEvents, type EventOwner, type PlatformEvent } from './index';

/** The owner proofs the EventsService checks, each by its area's own rules. */
export interface OwnerProofs {
  /**
   * Area B: the merchant whose API key this is.
   * @throws DomainError UNAUTHENTICATED, MERCHANT_SUSPENDED, RATE_LIMITED
   */
  apiKey(api_key: string, context: HandlerContext): Promise<EventOwner>;
  /**
   * Area C: the merchant whose signed /do-action this is, once `request` (its `$typeName` names the binding of
   * src/merchant-auth's SIGNED_BODY_BINDINGS) is found equal to what the signed body says.
   * @throws DomainError MERCHANT_UNAUTHENTICATED, SESSION_MISSING | SESSION_INVALID | SESSION_EXPIRED,
   *   INVALID_SIGNATURE, VALIDATION_FAILED (an ambiguous parameter), RATE_LIMITED
   */
  areaC(auth: ActionAuth, request: { $typeName: string }, context: HandlerContext): Promise<EventOwner>;
}

/** The owner a proof names. @throws the proof's refusals; UNAUTHENTICATED when no proof was sent */
function ownerOfProof(proofs: OwnerProofs, proof: OwnerProof | undefined, query: EventsQuery | undefined, context: HandlerContext): Promise<EventOwner> {
  switch (proof?.proof.case) {
    case 'apiKey':
      return proofs.apiKey(proof.proof.value, context);
    case 'areaC':
      // The signed body must say this query; an absent one binds as the empty query (limit 0), which no signed body
      // says: refused as a bad signature.
      return proofs.areaC(proof.proof.value, query ?? create(EventsQuerySchema), context);
    default:
      throw reasonError(COMMON_REASONS, 'UNAUTHENTICATED', 'no owner proof');
  }
}

/**
 * A page query checked: limit 1..500, a type of the catalog, a subject of at most 128 characters.
 * @throws DomainError VALIDATION_FAILED naming each failing field
 */
function checkedQuery(query: EventsQuery | undefined): { after: bigint; limit: number; type?: string; subject?: string } {
  const problems: Record<string, string[]> = {};
  const limit = query?.limit ?? 0;
  if (!Number.isInteger(limit) || limit < 1) problems.limit = [problem('min', 1)];
  else if (limit > EVENTS_PAGE_MAX) problems.limit = [problem('max', EVENTS_PAGE_MAX)];
  if (query?.type && !isEventType(query.type)) problems.type = [problem('invalid')];
  if (query?.subject && [...query.subject].length > EVENT_SUBJECT_MAX_LENGTH) problems.subject = [problem('max_length', EVENT_SUBJECT_MAX_LENGTH)];
  if (Object.keys(problems).length > 0) throw invalidFields(problems);
  return { after: query?.after ?? 0n, limit, type: query?.type || undefined, subject: query?.subject || undefined };
}

function eventMessage(event: PlatformEvent) {
  return {
    seq: event.seq,
    subject: event.subject,
    type: event.type,
    dataJson: JSON.stringify(event.data),
    ledgerTransactionId: event.ledger_transaction_id ?? '',
    createdAt: event.created_at.toISOString(),
  };
}

async function page(deps: Pick<PlatformDeps, 'database'>, owner: EventOwner, query: EventsQuery | undefined) {
  const found = await listEvents(deps.database, { owner, ...checkedQuery(query) });
  return { events: found.events.map(eventMessage), hasMore: found.has_more, nextAfter: found.next_after };
}

export function createEventsService(deps: PlatformDeps, proofs: OwnerProofs): ServiceImpl<typeof EventsService> {
  return {
    async listEvents(request, context) {
      const owner = await ownerOfProof(proofs, request.proof, request.query, context);
      return { page: await page(deps, owner, request.query) };
    },

    async listOwnerEvents(request) {
      const named = request.owner?.owner;
      if (!named?.case || !named.value) throw invalidFields({ owner: [problem('required')] });
      const owner: EventOwner = { type: named.case === 'merchantId' ? 'merchant' : 'partner', id: named.value };
      return { page: await page(deps, owner, request.query) };
    },

    async redeliverEvents(request) {
      if (!request.merchantId) throw invalidFields({ merchant_id: [problem('required')] });
      const sent = await redeliverAfter(deps, request.merchantId, request.after);
      deps.logger.info({ merchant_id: request.merchantId, after: request.after.toString(), sent: sent.webhook_ids.length }, 'webhooks redelivered after an event seq');
      return { webhookIds: sent.webhook_ids, hasMore: sent.has_more, nextAfter: sent.webhook_ids.length ? sent.last_seq : request.after };
    },
  };
}
