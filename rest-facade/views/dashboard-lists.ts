/**
 * The dashboard's lists (docs/dashboard.md "Payments" and "Events"): a filter form each (GET: it changes nothing, so
 * it carries no CSRF token, which would otherwise end up in URLs, history and logs), a table, and paging links that
 * keep the filters. Pure functions, no I/O; escaping by ./html.ts; no script and no inline style.
 */
import type { DashboardEvent, PaymentSummary } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import { amount, DASHBOARD_BASE, time } from './dashboard';
import { html, type SafeHtml } from './html';

/** A list's query (filters and cursor): the page's own link with `changes` applied (empty values dropped). */
export function listHref(path: string, query: Record<string, string>, changes: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...query, ...changes })) if (value !== '') params.set(name, value);
  const text = params.toString();
  return `${DASHBOARD_BASE}${path}${text ? `?${text}` : ''}`;
}

/** `payin` → `Payin`, `wallet_transfer` → `Wallet transfer`. */
export function wordsOf(code: string): string {
  const words = code.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function option(value: string, label: string, selected: string): SafeHtml {
  return html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`;
}

/** The payments page: filters kind, status, reference, creation days; one row per payment; newer/older links. */
export function paymentsContent(view: {
  payments: readonly PaymentSummary[];
  kinds: readonly string[];
  statuses: readonly string[];
  /** The filters as asked (kind, status, reference, created_from, created_to, page_size). */
  filters: Record<string, string>;
  nextBefore: bigint;
  newerAfter: bigint;
}): SafeHtml {
  const filters = view.filters;
  const rows = view.payments.map(
    (payment) => html`<tr data-reference="${payment.reference}">
<th scope="row"><a href="${DASHBOARD_BASE}/payments/${encodeURIComponent(payment.reference)}">${payment.reference}</a></th>
<td>${wordsOf(payment.kind)}</td>
<td class="status-${payment.status}">${wordsOf(payment.status)}</td>
<td class="amount">${payment.currency ? amount(payment.amountUnits, payment.currency) : ''}</td>
<td>${payment.currency}</td>
<td>${time(payment.createdAt)}</td>
<td>${time(payment.updatedAt)}</td>
</tr>`,
  );
  const filtered = ['kind', 'status', 'reference', 'created_from', 'created_to'].some((name) => filters[name]);
  const table = view.payments.length
    ? html`<table id="payments">
<caption>Payments, latest activity first</caption>
<thead><tr><th scope="col">Reference</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Amount</th><th scope="col">Currency</th><th scope="col">Created</th><th scope="col">Updated</th></tr></thead>
<tbody>${rows}</tbody>
</table>`
    : html`<p id="empty">${filtered ? 'No payment matches these filters.' : 'No payment yet.'}</p>`;
  const links = [
    view.newerAfter ? html`<a href="${listHref('/payments', filters, { after: String(view.newerAfter) })}" rel="prev" id="newer">Newer payments</a>` : '',
    view.nextBefore ? html`<a href="${listHref('/payments', filters, { before: String(view.nextBefore) })}" rel="next" id="older">Older payments</a>` : '',
  ];
  return html`<form class="filters" method="get" action="${DASHBOARD_BASE}/payments" role="search" aria-label="Filter payments">
<div><label for="kind">Kind</label><select id="kind" name="kind">${option('', 'Any kind', filters.kind ?? '')}${view.kinds.map((kind) => option(kind, wordsOf(kind), filters.kind ?? ''))}</select></div>
<div><label for="status">Status</label><select id="status" name="status">${option('', 'Any status', filters.status ?? '')}${view.statuses.map((status) => option(status, wordsOf(status), filters.status ?? ''))}</select></div>
<div><label for="reference">Reference</label><input type="text" id="reference" name="reference" maxlength="128" value="${filters.reference ?? ''}"></div>
<div><label for="created_from">Created from</label><input type="date" id="created_from" name="created_from" value="${filters.created_from ?? ''}"></div>
<div><label for="created_to">Created to</label><input type="date" id="created_to" name="created_to" value="${filters.created_to ?? ''}"></div>
${filters.page_size ? html`<input type="hidden" name="page_size" value="${filters.page_size}">` : ''}
<div class="filter-actions"><button type="submit" id="apply">Apply filters</button> <a href="${DASHBOARD_BASE}/payments">Clear</a></div>
</form>
<p class="muted">One row per payment (its business reference): its kind, the status of its latest event, the amount
that event names, when it was created and last changed. Days are UTC; both ends are included.</p>
${table}
${view.newerAfter || view.nextBefore ? html`<nav aria-label="Pages of payments" class="pages">${links}</nav>` : ''}`;
}

/** The events page: filters type and subject; the events after a seq in order; a link to the next ones. */
export function eventsContent(view: {
  events: readonly DashboardEvent[];
  types: readonly string[];
  /** The filters as asked (type, subject, after, page_size). */
  filters: Record<string, string>;
  hasMore: boolean;
  nextAfter: bigint;
}): SafeHtml {
  const filters = view.filters;
  const rows = view.events.map(
    (event) => html`<tr>
<th scope="row">${event.seq.toString()}</th>
<td><code>${event.type}</code></td>
<td><a href="${DASHBOARD_BASE}/payments/${encodeURIComponent(event.subject)}">${event.subject}</a></td>
<td>${time(event.createdAt)}</td>
<td><code class="data">${event.dataJson}</code></td>
</tr>`,
  );
  const paged = (filters.after ?? '') !== '' && filters.after !== '0';
  const table = view.events.length
    ? html`<table id="events">
<caption>Events in the order they happened</caption>
<thead><tr><th scope="col">Seq</th><th scope="col">Type</th><th scope="col">Subject</th><th scope="col">Time</th><th scope="col">Data</th></tr></thead>
<tbody>${rows}</tbody>
</table>`
    : html`<p id="empty">No event${paged ? ' after these' : ''}${filters.type || filters.subject ? ' matches these filters' : ' yet'}.</p>`;
  const links = [
    paged ? html`<a href="${listHref('/events', filters, { after: '' })}" id="first">First events</a>` : '',
    view.hasMore ? html`<a href="${listHref('/events', filters, { after: String(view.nextAfter) })}" rel="next" id="later">Later events</a>` : '',
  ];
  return html`<form class="filters" method="get" action="${DASHBOARD_BASE}/events" role="search" aria-label="Filter events">
<div><label for="type">Type</label><select id="type" name="type">${option('', 'Any type', filters.type ?? '')}${view.types.map((type) => option(type, type, filters.type ?? ''))}</select></div>
<div><label for="subject">Subject (payment reference)</label><input type="text" id="subject" name="subject" maxlength="128" value="${filters.subject ?? ''}"></div>
${filters.page_size ? html`<input type="hidden" name="page_size" value="${filters.page_size}">` : ''}
<div class="filter-actions"><button type="submit" id="apply">Apply filters</button> <a href="${DASHBOARD_BASE}/events">Clear</a></div>
</form>
<p class="muted">Your event stream, as <code>GET /api/v1/events</code> answers it: every change of your payments, in
the order it happened (<em>seq</em> 1, 2, 3 … with no gaps). Amounts in the data are minor units.</p>
${table}
${paged || view.hasMore ? html`<nav aria-label="Pages of events" class="pages">${links}</nav>` : ''}`;
}
