/**
 * The bank-account activation pages (docs/area-c.md "Tokenization"): the page the activation QR code opens,
 * with an "Activate account" button posting back to the same URL, its answer, and the unknown-link page. Pure
 * functions, no I/O; layout and escaping: ./html.ts. Only the last 4 digits of the account are ever shown.
 */
import { html, messagePage, page, type SafeHtml } from './html';

/** What an activation page shows of the account. */
export interface ActivationView {
  bankName: string;
  bankNumberLast4: string;
}

function accountLine(view: ActivationView): SafeHtml {
  return html`<p>${view.bankName ? `${view.bankName}, ` : ''}account ending in <strong>${view.bankNumberLast4}</strong></p>`;
}

/** GET of the activation URL: the button, or "already activated". */
export function activationPage(view: ActivationView & { activated: boolean; activationUrl: string }): string {
  const action = view.activated
    ? html`<p>This bank account is already activated.</p>`
    : html`<form method="post" action="${view.activationUrl}"><button type="submit">Activate account</button></form>`;
  return page('Activate bank account', html`<h1>Activate bank account</h1>
${accountLine(view)}
${action}`);
}

/** POST of the activation URL: activated now, or already before. */
export function activatedPage(view: ActivationView & { activatedNow: boolean }): string {
  const message = view.activatedNow ? 'Your bank account is now activated.' : 'This bank account is already activated.';
  return page('Bank account activated', html`<h1>Bank account activated</h1>
${accountLine(view)}
<p>${message}</p>`);
}

/** An unknown or malformed activation code. */
export function activationNotFoundPage(): string {
  return messagePage('Activation link not found', 'This activation link is invalid.');
}
