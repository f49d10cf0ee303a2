/**
 * The dashboard's lists (docs/dashboard.md "Payments" and "Events"): a filter form each (GET: it changes nothing, so
 * it carries no CSRF token, which would otherwise end up in URLs, history and logs), a table, and paging links that
 * keep the filters. Pure functions, no I/O; escaping by ./html.ts; no script and no inline style.
 */
import type { DashboardEvent, PaymentSummary } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import { amount, DASHBOARD_BASE, time } from './dashboard';
import { statusBadge } from './dashboard-payment';

/** The payments list's filters, in the form's order. */
export const PAYMENT_FILTER_NAMES = ['kind', 'status', 'out_trade_no', 'reference', 'amount_from', 'amount_to', 'created_from', 'created_to'] as const;

/** The filters an export takes (no cursor, no page size). */
function exportFilters(filters: Record<string, string>): Record<string, string> {
  return Object.fromEntries(PAYMENT_FILTER_NAMES.map((name) => [name, filters[name] ?? '']));
}
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
<th scope="row"><a href="${DASHBOARD_BASE}/payments/${encodeURIComponent(payment.reference)}">${payment.outTradeNo || payment.reference}</a>${payment.outTradeNo ? html`<br><span class="muted ref">${payment.reference}</span>` : ''}</th>
<td>${wordsOf(payment.kind)}</td>
<td>${statusBadge(payment.status)}</td>
<td class="amount">${payment.currency ? `${amount(payment.amountUnits, payment.currency)} ${payment.currency}` : ''}</td>
<td class="amount">${payment.currency && payment.feeUnits ? amount(payment.feeUnits, payment.currency) : html`<span class="muted">—</span>`}</td>
<td class="amount">${payment.currency && payment.hasNet ? amount(payment.netUnits, payment.currency) : html`<span class="muted">—</span>`}</td>
<td>${time(payment.createdAt)}</td>
<td>${time(payment.updatedAt)}</td>
</tr>`,
  );
  const filtered = PAYMENT_FILTER_NAMES.some((name) => filters[name]);
  const table = view.payments.length
    ? html`<div class="scroll"><table id="payments" class="list">
<caption>Payments, latest activity first</caption>
<thead><tr><th scope="col">Order id / reference</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Amount</th><th scope="col">Fee</th><th scope="col">Net</th><th scope="col">Created</th><th scope="col">Updated</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`
    : html`<p id="empty">${filtered ? 'No payment matches these filters.' : 'No payment yet.'}</p>`;
  const links = [
    view.newerAfter ? html`<a href="${listHref('/payments', filters, { after: String(view.newerAfter) })}" rel="prev" id="newer">Newer payments</a>` : '',
    view.nextBefore ? html`<a href="${listHref('/payments', filters, { before: String(view.nextBefore) })}" rel="next" id="older">Older payments</a>` : '',
  ];
  return html`<form class="filters" method="get" action="${DASHBOARD_BASE}/payments" role="search" aria-label="Filter payments">
<div><label for="kind">Kind</label><select id="kind" name="kind">${option('', 'Any kind', filters.kind ?? '')}${view.kinds.map((kind) => option(kind, wordsOf(kind), filters.kind ?? ''))}</select></div>
<div><label for="status">Status</label><select id="status" name="status">${option('', 'Any status', filters.status ?? '')}${view.statuses.map((status) => option(status, wordsOf(status), filters.status ?? ''))}</select></div>
<div><label for="out_trade_no">Order id</label><input type="text" id="out_trade_no" name="out_trade_no" maxlength="128" value="${filters.out_trade_no ?? ''}"></div>
<div><label for="reference">Reference</label><input type="text" id="reference" name="reference" maxlength="128" value="${filters.reference ?? ''}"></div>
<div><label for="amount_from">Amount from</label><input type="text" inputmode="decimal" class="short" id="amount_from" name="amount_from" maxlength="24" value="${filters.amount_from ?? ''}"></div>
<div><label for="amount_to">Amount to</label><input type="text" inputmode="decimal" class="short" id="amount_to" name="amount_to" maxlength="24" value="${filters.amount_to ?? ''}"></div>
<div><label for="created_from">Created from</label><input type="date" id="created_from" name="created_from" value="${filters.created_from ?? ''}"></div>
<div><label for="created_to">Created to</label><input type="date" id="created_to" name="created_to" value="${filters.created_to ?? ''}"></div>
${filters.page_size ? html`<input type="hidden" name="page_size" value="${filters.page_size}">` : ''}
<div class="filter-actions"><button type="submit" id="apply">Apply filters</button> <a href="${DASHBOARD_BASE}/payments">Clear</a></div>
</form>
<p class="muted">One row per payment: your order id (else its reference), its kind, the status of its latest event,
the amount asked, the fee and what reached your balance (net, once paid), when it was created and last changed.
Amounts are in the payment's currency; days are UTC, both ends included.</p>
<p><a id="export" href="${listHref('/payments.csv', exportFilters(filters))}" download>Export these payments as CSV</a> <span class="muted">(every page of the filtered list)</span></p>
${table}
${view.newerAfter || view.nextBefore ? html`<nav aria-label="Pages of payments" class="pages">${links}</nav>` : ''}`;
}

/** The events page: filters type and subject; the newest events first, each event's data folded; older pages. */
export function eventsContent(view: {
  events: readonly DashboardEvent[];
  types: readonly string[];
  /** The filters as asked (type, subject, before, page_size). */
  filters: Record<string, string>;
  nextBefore: bigint;
}): SafeHtml {
  const filters = view.filters;
  const items = view.events.map(
    (event) => html`<li class="event" data-seq="${event.seq.toString()}">
<p><code>${event.type}</code> · <a href="${DASHBOARD_BASE}/payments/${encodeURIComponent(event.subject)}">${event.subject}</a> · ${time(event.createdAt)} <span class="muted">seq ${event.seq.toString()}</span></p>
<details><summary>Data</summary><pre><code>${prettyJson(event.dataJson)}</code></pre></details>
</li>`,
  );
  const paged = (filters.before ?? '') !== '';
  const list = view.events.length
    ? html`<ol id="events" class="events" reversed>${items}</ol>`
    : html`<p id="empty">No event${paged ? ' before these' : ''}${filters.type || filters.subject ? ' matches these filters' : ' yet'}.</p>`;
  const links = [
    paged ? html`<a href="${listHref('/events', filters, { before: '' })}" id="newest">Newest events</a>` : '',
    view.nextBefore ? html`<a href="${listHref('/events', filters, { before: String(view.nextBefore) })}" rel="next" id="older">Older events</a>` : '',
  ];
  return html`<form class="filters" method="get" action="${DASHBOARD_BASE}/events" role="search" aria-label="Filter events">
<div><label for="type">Type</label><select id="type" name="type">${option('', 'Any type', filters.type ?? '')}${view.types.map((type) => option(type, type, filters.type ?? ''))}</select></div>
<div><label for="subject">Subject (payment reference)</label><input type="text" id="subject" name="subject" maxlength="128" value="${filters.subject ?? ''}"></div>
${filters.page_size ? html`<input type="hidden" name="page_size" value="${filters.page_size}">` : ''}
<div class="filter-actions"><button type="submit" id="apply">Apply filters</button> <a href="${DASHBOARD_BASE}/events">Clear</a></div>
</form>
<p class="muted">Your event stream, as <code>GET /api/v1/events</code> answers it, newest first: every change of your
payments (<em>seq</em> numbers them 1, 2, 3 … with no gaps). Open an event's data to read it; amounts there are
minor units.</p>
${list}
${paged || view.nextBefore ? html`<nav aria-label="Pages of events" class="pages">${links}</nav>` : ''}`;
}

/** JSON text indented for reading (as it is when it does not parse). */
function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
