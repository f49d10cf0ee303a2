/**
 * TimelineService (proto/payments/timeline/v1, docs/timeline.md): one payment's timeline, for whom may see it. The
 * viewer is decided here, in this order: the owner's own proof (`proof`: Area B's API key, checked by the verifier
 * the composition root hands in, the PayinService's; Area C's signed /do-action `list_timeline`, checked as every
 * Area C action; or a live merchant dashboard session); else a merchant or partner named with a credential bound to it
 * (`mayActFor`); else an operator (the `admin` scope: any payment, failure messages included). Anyone else is refused
 * PERMISSION_DENIED. A reference unknown or not the viewer's answers PAYMENT_NOT_FOUND, one answer for both.
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { findDashboardSession } from '../dashboard/sessions';
import { COMMON_REASONS, invalidFields, reasonError } from '../errors';
import type { EventOwner } from '../events';
import type { OwnerProofs } from '../events/service';
import { problem } from '../field-problems';
import type { GetPaymentTimelineRequest, TimelineService } from '../gen/payments/timeline/v1/timeline_pb';
import type { PlatformDeps } from '../platform-deps';
import { callerOf, mayActFor } from '../rpc/caller';
import { paymentTimeline, TIMELINE_REFERENCE_MAX_LENGTH, type PaymentTimeline, type TimelineViewer } from './payment-timeline';
import { TIMELINE_REASONS } from './reasons';

/** The owner proofs the TimelineService checks (the EventsService's, from the composition root). */
export type TimelineProofs = OwnerProofs;

/**
 * Who is asking, from the request's proof or the caller's credential.
 * @throws DomainError the proof's refusals; PERMISSION_DENIED
 */
export async function viewerOf(
  deps: Pick<PlatformDeps, 'database' | 'abuse'>,
  proofs: TimelineProofs,
  request: GetPaymentTimelineRequest,
  context: HandlerContext,
): Promise<TimelineViewer> {
  if (request.proof?.proof.case === 'apiKey') return { kind: 'owner', owner: await proofs.apiKey(request.proof.proof.value, context) };
  // Area C's signed list_timeline: the merchant it proves, its signed body bound to this request (reference).
  if (request.proof?.proof.case === 'areaC') return { kind: 'owner', owner: await proofs.areaC(request.proof.proof.value, request, context) };
  if (request.dashboardSession) {
    const session = await findDashboardSession(deps.database, request.dashboardSession);
    if (!session) throw reasonError(COMMON_REASONS, 'UNAUTHENTICATED', 'no live dashboard session');
    await deps.abuse.consumeRequest(`merchant:${session.merchant_id}`);
    return { kind: 'owner', owner: { type: 'merchant', id: session.merchant_id } };
  }
  const caller = callerOf(context);
  const named: EventOwner | undefined = request.merchantId ? { type: 'merchant', id: request.merchantId } : request.partnerId ? { type: 'partner', id: request.partnerId } : undefined;
  if (named) {
    if (!mayActFor(caller, { kind: named.type, id: named.id })) throw reasonError(COMMON_REASONS, 'PERMISSION_DENIED', 'the credential is not bound to this owner');
    return { kind: 'owner', owner: named };
  }
  if (caller && (caller.scopes as readonly string[]).includes('admin')) return { kind: 'operator' };
  throw reasonError(COMMON_REASONS, 'PERMISSION_DENIED', 'no owner proof and no operator credential');
}

/** A timeline as the RPC answers it (details as JSON text). */
export function timelineMessage(timeline: PaymentTimeline) {
  return {
    reference: timeline.reference,
    refundReference: timeline.refund_reference ?? '',
    entries: timeline.entries.map((entry) => ({
      at: entry.at,
      source: entry.source,
      kind: entry.kind,
      summary: entry.summary,
      detailsJson: JSON.stringify(entry.details),
      link: entry.link ?? '',
    })),
    sources: timeline.sources.map((status) => ({ source: status.source, state: status.state, reason: status.reason })),
    truncated: timeline.truncated,
  };
}

/**
 * The timeline of `reference` for `viewer`.
 * @throws DomainError VALIDATION_FAILED (reference), PAYMENT_NOT_FOUND
 */
export async function timelineFor(deps: Pick<PlatformDeps, 'database' | 'ledger' | 'temporal' | 'config'>, reference: string, viewer: TimelineViewer, maxPerSource?: number): Promise<PaymentTimeline> {
  if (!reference) throw invalidFields({ reference: [problem('required')] });
  if ([...reference].length > TIMELINE_REFERENCE_MAX_LENGTH) throw invalidFields({ reference: [problem('max_length', TIMELINE_REFERENCE_MAX_LENGTH)] });
  const timeline = await paymentTimeline(deps, reference, viewer, { maxPerSource: maxPerSource || undefined });
  if (!timeline) throw reasonError(TIMELINE_REASONS, 'PAYMENT_NOT_FOUND');
  return timeline;
}

export function createTimelineService(deps: PlatformDeps, proofs: TimelineProofs): ServiceImpl<typeof TimelineService> {
  return {
    async getPaymentTimeline(request, context) {
      const viewer = await viewerOf(deps, proofs, request, context);
      if (request.maxPerSource < 0 || request.maxPerSource > 1000) throw invalidFields({ max_per_source: [problem('max', 1000)] });
      return timelineMessage(await timelineFor(deps, request.reference, viewer, request.maxPerSource));
    },
  };
}
