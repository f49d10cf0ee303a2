/**
 * A payment's timeline as Areas B and C answer it in their `data` (docs/timeline.md): `{reference, entries: [{at,
 * source, kind, summary, details, link}], sources: [{source, state, reason}], truncated}`, `details` the entry's JSON
 * facts parsed losslessly (amounts stay exact), `link` the Temporal Web UI page or null.
 */
import type { GetPaymentTimelineResponse } from '../src/gen/payments/timeline/v1/timeline_pb';
import { parseJsonLossless } from '../src/money';

export function timelineJson(answer: GetPaymentTimelineResponse) {
  return {
    reference: answer.reference,
    entries: answer.entries.map((entry) => ({
      at: entry.at,
      source: entry.source,
      kind: entry.kind,
      summary: entry.summary,
      details: parseJsonLossless(entry.detailsJson),
      link: entry.link || null,
    })),
    sources: answer.sources.map((status) => ({ source: status.source, state: status.state, reason: status.reason })),
    truncated: answer.truncated,
  };
}
