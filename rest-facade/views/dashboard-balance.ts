/**
 * A wallet's balance transactions (`/dashboard/balances/<currency>`, docs/dashboard.md "Balance transactions"):
 * every posting that changed the balance, newest first, with the balance it left and the payment it belongs to, an
 * older-page link and a CSV export. Pure function, no I/O; escaping by ./html.ts.
 */
import type { ListBalanceTransactionsResponse } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import { amount, DASHBOARD_BASE, time } from './dashboard';
import { html, type SafeHtml } from './html';

export function balanceTransactionsContent(answer: ListBalanceTransactionsResponse, paged: boolean): SafeHtml {
  const currency = answer.currency;
  const base = `${DASHBOARD_BASE}/balances/${encodeURIComponent(currency)}`;
  const rows = answer.transactions.map(
    (entry) => html`<tr>
<td>${time(entry.at)}</td>
<td>${entry.description}</td>
<td>${entry.paymentReference ? html`<a href="${DASHBOARD_BASE}/payments/${encodeURIComponent(entry.paymentReference)}">${entry.paymentReference}</a>` : html`<span class="muted">—</span>`}</td>
<td class="amount">${amount(entry.amountUnits, currency)}</td>
<td class="amount">${amount(entry.balanceAfterUnits, currency)}</td>
</tr>`,
  );
  const table = rows.length
    ? html`<div class="scroll"><table id="balance-transactions" class="list">
<caption>Every movement of your ${currency} balance, newest first</caption>
<thead><tr><th scope="col">Time</th><th scope="col">Movement</th><th scope="col">Payment</th><th scope="col">Amount (${currency})</th><th scope="col">Balance after (${currency})</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>`
    : html`<p id="empty">No movement${paged ? ' before these' : ' yet'}.</p>`;
  const links = [
    paged ? html`<a href="${base}" id="newest">Newest movements</a>` : '',
    answer.nextBefore ? html`<a href="${base}?before=${encodeURIComponent(answer.nextBefore)}" rel="next" id="older">Older movements</a>` : '',
  ];
  return html`<p class="muted">A positive amount entered your balance, a negative one left it. <a href="${DASHBOARD_BASE}/balances">All balances</a></p>
<p><a id="export" href="${base}.csv" download>Export every movement as CSV</a></p>
${table}
${paged || answer.nextBefore ? html`<nav aria-label="Pages of movements" class="pages">${links}</nav>` : ''}`;
}
