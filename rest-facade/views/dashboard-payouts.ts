/**
 * The dashboard's payouts page (`/dashboard/payouts`, docs/dashboard.md "Payouts"): the merchant's payouts newest
 * first (reference, order id, amount and fee in major units, destination, a status badge, created time), an approve /
 * reject form on each payout awaiting approval, and the form requesting a crypto payout (amount in USDT, TRON
 * address, optional memo). Each form carries the session's CSRF token; the request form also a key of its own, so
 * the same form sent twice pays once. Below them the "Automatic payouts" settings: the merchant's schedule now (off,
 * or daily / weekly with its minimum, reserve and saved address) and the form setting it or turning it off. Pure
 * function, no I/O; escaping by ./html.ts.
 */
import type { DashboardPayout, DashboardPayoutSchedule } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import { amount, DASHBOARD_BASE, time } from './dashboard';
import { html, type SafeHtml } from './html';

export const PAYOUTS_PATH = '/payouts';
/** Where the automatic payouts form posts, under PAYOUTS_PATH. */
export const PAYOUT_SCHEDULE_PATH = `${PAYOUTS_PATH}/schedule`;

const EVERY_TEXT: Record<string, string> = { off: 'Off', daily: 'Daily (00:05 UTC)', weekly: 'Weekly (Mondays, 00:05 UTC)' };

/** What each payout status reads as, and its badge's tone (text, never colour alone). */
const PAYOUT_STATUS: Record<string, { text: string; tone: 'ok' | 'wait' | 'bad' }> = {
  awaiting_approval: { text: 'Pending approval', tone: 'wait' },
  held: { text: 'In progress', tone: 'wait' },
  requested: { text: 'Sent to provider', tone: 'wait' },
  succeeded: { text: 'Paid out', tone: 'ok' },
  failed: { text: 'Failed', tone: 'bad' },
};

function payoutBadge(status: string): SafeHtml {
  const { text, tone } = PAYOUT_STATUS[status] ?? { text: status, tone: 'wait' as const };
  return html`<span class="badge badge-${tone}" data-status="${status}">${text}</span>`;
}

const money = (units: bigint, currency: string) => `${amount(units, currency)} ${currency}`;

function decisionForms(payout: DashboardPayout, csrfToken: string): SafeHtml {
  if (payout.status !== 'awaiting_approval') return html``;
  const action = `${DASHBOARD_BASE}${PAYOUTS_PATH}/${payout.payoutReference}/decision`;
  return html`<form method="post" class="inline" action="${action}"><input type="hidden" name="csrf_token" value="${csrfToken}"><input type="hidden" name="decision" value="approve"><button type="submit" aria-label="Approve payout ${payout.payoutReference}">Approve</button></form>
<form method="post" class="inline" action="${action}"><input type="hidden" name="csrf_token" value="${csrfToken}"><input type="hidden" name="decision" value="reject"><button type="submit" aria-label="Reject payout ${payout.payoutReference}">Reject</button></form>`;
}

/** The "Automatic payouts" section: the schedule now and the form changing it (amounts shown in major units). */
function scheduleSection(schedule: DashboardPayoutSchedule | undefined, csrfToken: string): SafeHtml {
  const every = schedule?.every ?? 'off';
  const option = (value: string) => html`<option value="${value}"${value === every ? html` selected` : ''}>${EVERY_TEXT[value]}</option>`;
  const current = schedule
    ? html`<p id="payout-schedule-current"><strong>${EVERY_TEXT[schedule.every] ?? schedule.every}</strong>: everything above a reserve of ${money(schedule.reserveUnits, 'USDT')} (and the payout fee), when it is at least ${money(schedule.minimumUnits, 'USDT')}, to <code class="address">${schedule.address}</code>.</p>`
    : html`<p id="payout-schedule-current"><strong>Off</strong>: no automatic payouts.</p>`;
  return html`<section aria-labelledby="schedule-heading"><h2 id="schedule-heading">Automatic payouts</h2>
${current}
<form method="post" class="refund" id="payout-schedule-form" action="${DASHBOARD_BASE}${PAYOUT_SCHEDULE_PATH}">
<input type="hidden" name="csrf_token" value="${csrfToken}">
<label for="schedule-every">Schedule</label>
<select id="schedule-every" name="every">${option('off')}${option('daily')}${option('weekly')}</select>
<label for="schedule-minimum">Minimum payout (USDT)</label>
<input type="text" id="schedule-minimum" name="minimum" inputmode="decimal" maxlength="40" placeholder="10.00" value="${schedule ? amount(schedule.minimumUnits, 'USDT') : ''}">
<label for="schedule-reserve">Reserve kept on your balance (USDT)</label>
<input type="text" id="schedule-reserve" name="reserve" inputmode="decimal" maxlength="40" placeholder="0" value="${schedule ? amount(schedule.reserveUnits, 'USDT') : ''}">
<label for="schedule-address">Destination address (TRON)</label>
<input type="text" id="schedule-address" name="address" maxlength="64" autocomplete="off" spellcheck="false" value="${schedule?.address ?? ''}">
<p class="muted">Each run is an ordinary payout (fee, limits and approval threshold apply); a period that fires twice pays once.</p>
<div><button type="submit" id="save-payout-schedule">Save schedule</button></div>
</form></section>`;
}

/**
 * The page's content. `formKey` is the request form's idempotency key (a fresh one per rendering); `notice` what the
 * last form did.
 */
export function payoutsContent(view: {
  payouts: readonly DashboardPayout[];
  fee: string;
  feeCurrency: string;
  csrfToken: string;
  formKey: string;
  notice?: string;
  schedule?: DashboardPayoutSchedule;
}): SafeHtml {
  const rows = view.payouts.map(
    (payout) => html`<tr data-reference="${payout.payoutReference}">
<td><code>${payout.payoutReference}</code></td>
<td>${payout.outTradeNo || '—'}</td>
<td class="amount">${money(payout.amountUnits, payout.currency)}</td>
<td class="amount">${money(payout.feeUnits, payout.currency)}</td>
<td class="address"><code>${payout.address}</code>${payout.memo ? html`<br><span class="muted">Memo: ${payout.memo}</span>` : ''}</td>
<td>${payoutBadge(payout.status)}${payout.failureReason ? html`<br><span class="muted">${payout.failureReason}</span>` : ''}${decisionForms(payout, view.csrfToken)}</td>
<td>${time(payout.createdAt)}</td>
</tr>`,
  );
  const table = rows.length
    ? html`<div class="scroll"><table id="payouts">
<caption>Your payouts, newest first</caption>
<thead><tr><th scope="col">Payout</th><th scope="col">Order id</th><th scope="col">Amount</th><th scope="col">Fee</th><th scope="col">Destination</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead>
<tbody>${rows}</tbody></table></div>`
    : html`<p class="muted" id="no-payouts">No payouts yet.</p>`;
  return html`${view.notice ? html`<p class="notice" role="status" id="payout-notice">${view.notice}</p>` : ''}
<section aria-labelledby="request-heading"><h2 id="request-heading">Request a payout</h2>
<form method="post" class="refund" id="payout-form" action="${DASHBOARD_BASE}${PAYOUTS_PATH}">
<input type="hidden" name="csrf_token" value="${view.csrfToken}">
<input type="hidden" name="idempotency_key" value="${view.formKey}">
<label for="payout-amount">Amount (USDT)</label>
<input type="text" id="payout-amount" name="amount" inputmode="decimal" maxlength="40" required placeholder="100.00">
<label for="payout-address">Destination address (TRON)</label>
<input type="text" id="payout-address" name="address" maxlength="64" required autocomplete="off" spellcheck="false">
<label for="payout-memo">Memo (optional)</label>
<input type="text" id="payout-memo" name="memo" maxlength="255">
${view.fee ? html`<p id="payout-fee">Fee: <strong>${view.fee} ${view.feeCurrency}</strong> per payout, charged with it from the same balance.</p>` : html`<p id="payout-fee" class="error">No payout fee is configured: payouts are not available yet.</p>`}
<p class="muted">A payout above your approval threshold waits for your approval on this page.</p>
<div><button type="submit" id="request-payout">Request payout</button></div>
</form></section>
<section aria-labelledby="payouts-heading"><h2 id="payouts-heading">Payouts</h2>${table}</section>
${scheduleSection(view.schedule, view.csrfToken)}`;
}
