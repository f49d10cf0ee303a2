/**
 * The dashboard's payment page (`/dashboard/payments/<reference>`, docs/dashboard.md "A payment's page"): one payment
 * in the merchant's words, as DashboardService GetPayment answers it. A summary first (amount and currency in major
 * units, a status badge, fee, net, paid amount, payer address, order id, created and settled times, refunds and a
 * refund form), then the story as the merchant's steps, then the platform's own entries (workflow history, ledger
 * keys, requests, attempts) folded under "Technical details". Semantic HTML, no script: folding is <details>.
 * Pure function, no I/O; escaping by ./html.ts.
 */
import type { GetPaymentResponse, PaymentDetails, PaymentStep } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import type { TimelineEntry } from '../../src/gen/payments/timeline/v1/timeline_pb';
import { amount, DASHBOARD_BASE, time } from './dashboard';
import { html, type SafeHtml } from './html';

const SOURCE_TEXT: Record<string, string> = {
  request: 'Request',
  workflow: 'Workflow',
  provider: 'Provider',
  ledger: 'Ledger',
  event: 'Event',
  webhook: 'Webhook',
};

/** What each status reads as, and its badge's tone. */
const STATUS_TEXT: Record<string, { text: string; tone: 'ok' | 'wait' | 'bad' }> = {
  created: { text: 'Awaiting payment', tone: 'wait' },
  success: { text: 'Paid', tone: 'ok' },
  expired: { text: 'Expired', tone: 'bad' },
  closed: { text: 'Closed', tone: 'bad' },
  failed: { text: 'Failed', tone: 'bad' },
  completed: { text: 'Completed', tone: 'ok' },
  confirmed: { text: 'Confirmed', tone: 'ok' },
  declined: { text: 'Declined', tone: 'bad' },
  cancelled: { text: 'Cancelled', tone: 'bad' },
  released: { text: 'Released', tone: 'ok' },
  paid: { text: 'Paid', tone: 'ok' },
  blocked: { text: 'Blocked', tone: 'wait' },
};

/** A status as a badge (text, not colour alone). */
export function statusBadge(status: string): SafeHtml {
  const known = STATUS_TEXT[status] ?? { text: status || 'Unknown', tone: 'wait' as const };
  return html`<span class="badge badge-${known.tone}" data-status="${status}">${known.text}</span>`;
}

/** A refund's status as a badge: held and pending are in progress. */
function refundBadge(status: string): SafeHtml {
  const [text, tone] = status === 'succeeded' ? ['Refunded', 'ok'] : status === 'failed' ? ['Failed', 'bad'] : ['In progress', 'wait'];
  return html`<span class="badge badge-${tone}" data-status="${status}">${text}</span>`;
}

const money = (units: bigint, payment: PaymentDetails) => `${amount(units, payment.currency)} ${payment.currency}`;

function refundsSection(payment: PaymentDetails, csrfToken: string, formKey: string): SafeHtml {
  const rows = payment.refunds.map(
    (refund) => html`<tr>
<td><code>${refund.refundReference}</code></td>
<td class="amount">${money(refund.amountUnits, payment)}</td>
<td>${refundBadge(refund.status)}</td>
<td>${time(refund.createdAt)}</td>
<td>${refund.decidedAt ? time(refund.decidedAt) : '—'}</td>
</tr>`,
  );
  const table = rows.length
    ? html`<div class="scroll"><table id="refunds">
<thead><tr><th scope="col">Refund</th><th scope="col">Amount</th><th scope="col">Status</th><th scope="col">Requested</th><th scope="col">Decided</th></tr></thead>
<tbody>${rows}</tbody></table></div>`
    : html`<p class="muted" id="no-refunds">No refunds.</p>`;
  const form =
    payment.refundableUnits > 0n && payment.payerAddress
      ? html`<form method="post" class="refund" id="refund-form" action="${DASHBOARD_BASE}/payments/${payment.reference}/refund">
<input type="hidden" name="csrf_token" value="${csrfToken}">
<input type="hidden" name="idempotency_key" value="${formKey}">
<label for="refund-amount">Amount to refund (${payment.currency}, at most ${amount(payment.refundableUnits, payment.currency)})</label>
<input type="text" id="refund-amount" name="amount" inputmode="decimal" maxlength="40" placeholder="${amount(payment.refundableUnits, payment.currency)}">
<label for="refund-reason">Reason (optional)</label>
<input type="text" id="refund-reason" name="reason" maxlength="255">
<p class="muted">The money goes back to the payer's address <code>${payment.payerAddress}</code>. Leave the amount empty to refund everything still refundable.</p>
<div><button type="submit" id="refund">Refund</button></div>
</form>`
      : payment.kind === 'payin' && payment.status === 'success'
        ? html`<p class="muted" id="not-refundable">${payment.payerAddress ? 'Nothing more can be refunded.' : 'No payer address was reported with this payment, so it cannot be refunded from here.'}</p>`
        : '';
  return html`<section aria-labelledby="refunds-heading"><h2 id="refunds-heading">Refunds</h2>${table}${form}</section>`;
}

function summarySection(payment: PaymentDetails): SafeHtml {
  const dash = html`<span class="muted">—</span>`;
  return html`<section aria-labelledby="summary-heading" id="summary"><h2 id="summary-heading">Summary</h2>
<p class="headline"><span class="big" id="summary-amount">${money(payment.amountUnits, payment)}</span> ${statusBadge(payment.status)}</p>
<dl>
<dt>Order id</dt><dd id="summary-order">${payment.outTradeNo || dash}</dd>
<dt>Reference</dt><dd><code id="reference">${payment.reference}</code></dd>
<dt>Kind</dt><dd>${payment.kind}</dd>
<dt>Paid</dt><dd id="summary-paid">${payment.hasPaid ? money(payment.paidAmountUnits, payment) : dash}</dd>
<dt>Fee</dt><dd id="summary-fee">${money(payment.feeUnits, payment)}</dd>
<dt>Net</dt><dd id="summary-net">${payment.hasPaid ? money(payment.netUnits, payment) : dash}</dd>
<dt>Payer address</dt><dd id="summary-payer">${payment.payerAddress ? html`<code>${payment.payerAddress}</code>` : dash}</dd>
<dt>Created</dt><dd>${payment.createdAt ? time(payment.createdAt) : dash}</dd>
<dt>Settled</dt><dd id="summary-settled">${payment.settledAt ? time(payment.settledAt) : dash}</dd>
</dl>
</section>`;
}

function stepItem(step: PaymentStep): SafeHtml {
  return html`<li class="step step-${step.state}" data-step="${step.step}" data-state="${step.state}">
<p><strong>${step.title}</strong> · ${time(step.at)}</p>
<p>${step.outcome}</p>
</li>`;
}

function details(entry: TimelineEntry): string {
  try {
    return JSON.stringify(JSON.parse(entry.detailsJson), null, 2);
  } catch {
    return entry.detailsJson;
  }
}

function technicalItem(entry: TimelineEntry): SafeHtml {
  return html`<li class="entry" data-source="${entry.source}" data-kind="${entry.kind}">
${time(entry.at)} <span class="source">${SOURCE_TEXT[entry.source] ?? entry.source}</span> <code>${entry.kind}</code>
<p>${entry.summary}</p>
<details><summary>Data</summary><pre><code>${details(entry)}</code></pre></details>
${entry.link ? html`<p><a href="${entry.link}" rel="noopener noreferrer">Open in the Temporal Web UI</a></p>` : ''}
</li>`;
}

/**
 * The payment page's content. `csrfToken` is the session's (the refund form's); `formKey` a fresh random key for the
 * refund form, so sending the same form twice refunds once; `notice` a line after a refund.
 */
export function paymentContent(answer: GetPaymentResponse, csrfToken: string, formKey: string, notice?: string): SafeHtml {
  const payment = answer.payment!;
  const missing = answer.sources.map((status) => html`<li data-source="${status.source}" data-state="${status.state}">${SOURCE_TEXT[status.source] ?? status.source}: ${status.reason}</li>`);
  return html`${notice ? html`<p class="notice" id="notice" role="status">${notice}</p>` : ''}
${summarySection(payment)}
<section aria-labelledby="story-heading"><h2 id="story-heading">What happened</h2>
${answer.steps.length ? html`<ol id="steps" class="steps">${answer.steps.map(stepItem)}</ol>` : html`<p class="muted">Nothing has happened yet.</p>`}
</section>
${refundsSection(payment, csrfToken, formKey)}
<section aria-labelledby="technical-heading" id="technical"><h2 id="technical-heading">Technical details</h2>
<details id="technical-details"><summary>Workflow events, ledger postings, requests and webhook attempts (${answer.technical.length})</summary>
${missing.length ? html`<ul id="missing">${missing}</ul>` : ''}
${answer.truncated.length ? html`<p class="muted" id="truncated">Only the first entries of ${answer.truncated.map((source) => SOURCE_TEXT[source] ?? source).join(', ')} are shown.</p>` : ''}
<ol id="timeline" class="timeline">${answer.technical.map(technicalItem)}</ol>
</details>
</section>`;
}
