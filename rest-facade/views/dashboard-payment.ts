/**
 * The dashboard's payment page (`/dashboard/payments/<reference>`, docs/timeline.md, docs/dashboard.md): one payment's
 * postings and its whole timeline (requests, workflow history, provider messages, postings, events, webhook attempts)
 * as the TimelineService answers it for the session's merchant. Semantic HTML, no script: each entry's details sit
 * in a <details> element. Pure function, no I/O; escaping by ./html.ts.
 */
import type { GetPaymentTimelineResponse, TimelineEntry } from '../../src/gen/payments/timeline/v1/timeline_pb';
import { formatAmount, isCurrency } from '../../src/money';
import { html, type SafeHtml } from './html';

const SOURCE_TEXT: Record<string, string> = {
  request: 'Request',
  workflow: 'Workflow',
  provider: 'Provider',
  ledger: 'Ledger',
  event: 'Event',
  webhook: 'Webhook',
};

interface PostingLine {
  account: { owner_type: string; kind: string; id?: string };
  amount_units: string | null;
  currency: string;
  balance_after_units: string | null;
}

/** `2026-01-31 09:15:02.123 UTC` in a <time> element carrying the ISO 8601 instant. */
function time(iso: string): SafeHtml {
  return html`<time datetime="${iso}">${iso.slice(0, 23).replace('T', ' ')} UTC</time>`;
}

/** Minor units as the currency writes them (`12.50`), or as they are for an unknown currency. */
function amount(units: string | null, currency: string): string {
  if (units === null || !/^-?\d+$/.test(units)) return '—';
  return isCurrency(currency) ? formatAmount(BigInt(units), currency) : units;
}

function parsed(entry: TimelineEntry): Record<string, unknown> {
  try {
    const value = JSON.parse(entry.detailsJson) as unknown;
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Every posting of the payment's ledger transactions, with the balance each left on the merchant's own accounts. */
function postingsTable(entries: readonly TimelineEntry[]): SafeHtml {
  const rows = entries
    .filter((entry) => entry.kind === 'ledger.posted')
    .flatMap((entry) => {
      const details = parsed(entry);
      const lines = Array.isArray(details.postings) ? (details.postings as PostingLine[]) : [];
      return lines.map(
        (line) => html`<tr>
<td>${time(entry.at)}</td>
<td><code>${String(details.idempotency_key ?? '')}</code></td>
<td>${line.account.owner_type} ${line.account.kind}${line.account.id ? html` <span class="muted">(yours)</span>` : ''}</td>
<td class="amount">${amount(line.amount_units, line.currency)} ${line.currency}</td>
<td class="amount">${line.balance_after_units === null ? '—' : `${amount(line.balance_after_units, line.currency)} ${line.currency}`}</td>
</tr>`,
      );
    });
  if (rows.length === 0) return html`<p class="muted" id="no-postings">No money has moved for this payment.</p>`;
  return html`<table id="postings">
<caption>Postings</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Ledger key</th><th scope="col">Account</th><th scope="col">Amount</th><th scope="col">Balance after</th></tr></thead>
<tbody>${rows}</tbody>
</table>
<p class="muted">A negative amount leaves an account, a positive one enters it; the balance after is shown for your own
accounts only.</p>`;
}

function entryItem(entry: TimelineEntry): SafeHtml {
  return html`<li class="entry source-${entry.source}" data-source="${entry.source}" data-kind="${entry.kind}">
${time(entry.at)} <span class="source">${SOURCE_TEXT[entry.source] ?? entry.source}</span> <strong>${entry.kind}</strong>
<p>${entry.summary}</p>
<details><summary>Details</summary><pre><code>${JSON.stringify(parsed(entry), null, 2)}</code></pre></details>
${entry.link ? html`<p><a href="${entry.link}" rel="noopener noreferrer">Open in the Temporal Web UI</a></p>` : ''}
</li>`;
}

/** The payment page's content: what is missing, the postings, then the timeline in time order. */
export function paymentContent(timeline: GetPaymentTimelineResponse): SafeHtml {
  const missing = timeline.sources.map((status) => html`<li data-source="${status.source}" data-state="${status.state}">${SOURCE_TEXT[status.source] ?? status.source}: ${status.reason}</li>`);
  const cut = timeline.truncated.length
    ? html`<p class="muted" id="truncated">Only the first entries of ${timeline.truncated.map((source) => SOURCE_TEXT[source] ?? source).join(', ')} are shown.</p>`
    : '';
  return html`<p>Reference <code id="reference">${timeline.reference}</code> · ${timeline.entries.length} entries</p>
${missing.length ? html`<section aria-labelledby="missing-heading" id="missing"><h2 id="missing-heading">Not shown</h2><ul>${missing}</ul></section>` : ''}
<section aria-labelledby="postings-heading"><h2 id="postings-heading">Money</h2>
${postingsTable(timeline.entries)}
</section>
<section aria-labelledby="timeline-heading"><h2 id="timeline-heading">Timeline</h2>
${cut}
<ol id="timeline" class="timeline">${timeline.entries.map(entryItem)}</ol>
</section>`;
}
