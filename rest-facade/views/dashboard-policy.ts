/**
 * The dashboard's Payment policy page (docs/dashboard.md, docs/refunds.md "Outcome policies"): the merchant's
 * payment-outcome policy, what each rule does, and a form that changes it (POST with the session's CSRF token). Pure,
 * no I/O; escaping by ./html.ts; no script, no inline style.
 */
import type { OutcomePolicy } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import { DASHBOARD_BASE, time } from './dashboard';
import { html, type SafeHtml } from './html';

/** Where the page is and where its form posts. */
export const POLICY_PATH = '/payment-policy';

/** Each rule's choices, in the words the form shows. */
const CHOICES = {
  underpaid: [
    ['credit', 'Credit what was paid'],
    ['refund', 'Refund the whole payment to the payer'],
  ],
  overpaid: [
    ['credit', 'Credit what was paid'],
    ['refund_excess', 'Refund the excess (paid − invoice) to the payer'],
  ],
  late: [
    ['credit', 'Credit what was paid'],
    ['refund', 'Refund the whole payment to the payer'],
  ],
  refund_fee: [
    ['kept', 'Kept by the platform: a refund is at most what was credited, all from your balance'],
    ['returned', 'Returned: a refund may be what was paid; its share of the fee comes back from the platform'],
  ],
} as const;

const LABELS = {
  underpaid: 'Underpaid',
  overpaid: 'Overpaid (and a second payment to a paid invoice)',
  late: 'Paid after the payin expired or closed',
  refund_fee: 'The payin fee on refunds (yours and the policy\'s)',
} as const;

/** What the page says of a refused field (the service's field names). */
export const POLICY_FIELD_TEXTS: Record<string, string> = {
  underpaid: 'Underpaid must be one of the choices offered.',
  overpaid: 'Overpaid must be one of the choices offered.',
  late: 'Paid late must be one of the choices offered.',
  tolerance_percent: 'Tolerance must be a percent from 0 to 100 with at most 2 decimals, such as 0.5.',
  refund_fee: 'The payin fee on refunds must be one of the choices offered.',
};

function rule(name: keyof typeof CHOICES, current: string): SafeHtml {
  const options = CHOICES[name].map(([value, text]) => html`<option value="${value}"${value === current ? html` selected` : ''}>${text}</option>`);
  return html`<label for="${name}">${LABELS[name]}</label>
<select id="${name}" name="${name}">${options}</select>`;
}

/**
 * The page: the policy as stored (or the default), its form, a notice after a save, the refused fields after a
 * refusal (role alert: nothing was changed).
 */
export function policyContent(view: { policy: OutcomePolicy; csrfToken: string; saved?: boolean; problems?: readonly string[] }): SafeHtml {
  const { policy } = view;
  const status = policy.stored
    ? html`<p id="policy-status">Last changed on ${time(policy.updatedAt)} by <code>${policy.updatedBy}</code>.</p>`
    : html`<p id="policy-status">No policy is set: every payment is credited as paid (the default below).</p>`;
  return html`${view.saved ? html`<p class="notice" id="notice" role="status">Your payment policy was saved. It applies to payments settled from now on.</p>` : ''}
${view.problems?.length ? html`<div class="error" id="problems" role="alert"><p>Nothing was changed:</p><ul>${view.problems.map((text) => html`<li>${text}</li>`)}</ul></div>` : ''}
<p>What the platform does with a payment that does not match its invoice. A refund goes back to the payer's address
the provider reported, less the payin fee unless the fee is returned (below); without an address the payment is
credited. The payin fee setting applies to every refund created after it is saved, yours too; a refund already
created keeps the setting it was created with.
You receive <code>payin.success</code> with the decision in <code>resolution</code>, then <code>refund.succeeded</code>
or <code>refund.failed</code>.</p>
${status}
<dl id="policy">
<dt>Underpaid</dt><dd id="policy-underpaid">${policy.underpaid}</dd>
<dt>Overpaid</dt><dd id="policy-overpaid">${policy.overpaid}</dd>
<dt>Paid late</dt><dd id="policy-late">${policy.late}</dd>
<dt>Tolerance</dt><dd id="policy-tolerance">${policy.tolerancePercent} %</dd>
<dt>Payin fee on refunds</dt><dd id="policy-refund-fee">${policy.refundFee}</dd>
</dl>
<h2>Change it</h2>
<form method="post" action="${DASHBOARD_BASE}${POLICY_PATH}" id="policy-form">
<input type="hidden" name="csrf_token" value="${view.csrfToken}">
${rule('underpaid', policy.underpaid)}
${rule('overpaid', policy.overpaid)}
${rule('late', policy.late)}
<label for="tolerance_percent">Tolerance, percent of the invoice (a payment this close counts as matching)</label>
<input type="text" id="tolerance_percent" name="tolerance_percent" inputmode="decimal" maxlength="16" required value="${policy.tolerancePercent}">
${rule('refund_fee', policy.refundFee)}
<p><button type="submit" id="save-policy">Save</button></p>
</form>`;
}
