/**
 * The HTML documents of Area C deposits (docs/area-c.md "Deposits and confirmations"): the Visa/Master
 * confirmation page (html_confirm_payment), the result page with the hidden input `result`, the hosted preorder
 * page with its card form, and small error pages; and the translation of DepositService's page views (DepositPage)
 * into them with their HTTP status, the result object and the redirect with `result`. Pure functions, no I/O.
 * Layout and escaping: ./html.ts.
 */
import { formatAmount, isCurrency } from '../../src/money';
import { html, messagePage, page, SafeHtml } from './html';
import type { CardConfirmation, DepositPage, DepositResult, PreorderPage } from '../../src/gen/payments/deposit/v1/deposit_pb';
import { problem } from '../../src/field-problems';
import { fieldViolationsOf } from '../../src/rpc/errors';
import { DEPOSIT_MESSAGES, renderFieldProblems, renderProblem } from '../merchant/contract';

export interface ConfirmationView {
  /** Absolute URL the form posts to (`<PUBLIC_BASE_URL><MERCHANT_PREFIX>/visa-master/confirm/<deposit token>`). */
  actionUrl: string;
  merchantName: string;
  description: string | null;
  /** Decimal text ("12.50"). */
  amount: string;
  currency: string;
  brand: string | null;
  last4: string;
  holderName: string;
  reference: string;
}

/** html_confirm_payment: the payment summary and a form that posts (no fields) to the confirmation URL. */
export function confirmationPage(view: ConfirmationView): string {
  return page(
    'Confirm your payment',
    html`<h1>Confirm your payment</h1>
<dl>
<dt>Merchant</dt><dd id="merchant">${view.merchantName}</dd>
${view.description ? html`<dt>Description</dt><dd id="description">${view.description}</dd>` : ''}
<dt>Amount</dt><dd id="amount">${view.amount} ${view.currency}</dd>
<dt>Card</dt><dd id="card">${(view.brand ?? 'card').toUpperCase()} •••• ${view.last4} (${view.holderName})</dd>
<dt>Reference</dt><dd id="reference">${view.reference}</dd>
</dl>
<form method="post" action="${view.actionUrl}">
<button type="submit" id="confirm">Confirm payment</button>
</form>`,
  );
}

/** The answer to a confirmation without redirect_url: the outcome and the hidden input `result`. */
export function resultPage(view: { success: boolean; message: string; reference: string; resultBase64: string }): string {
  return page(
    view.success ? 'Payment completed' : 'Payment not completed',
    html`<h1>${view.success ? 'Payment completed' : 'Payment not completed'}</h1>
<p id="message">${view.message}</p>
<p class="muted">Reference ${view.reference}</p>
<input type="hidden" name="result" value="${view.resultBase64}">`,
  );
}

export interface PreorderView {
  /** Absolute URL the card form posts to (`…/pre-order/<token>/pay`). */
  actionUrl: string;
  sellerName: string;
  description: string;
  amount: string;
  currency: string;
  paid: boolean;
  /** Field → messages, shown next to the form after a refused submission. */
  errors?: Record<string, string[]>;
  /** What the payer typed (never the card number or security code). */
  values?: { holderName?: string; expiryMonth?: string; expiryYear?: string };
}

function fieldErrors(errors: Record<string, string[]> | undefined, ...fields: string[]): SafeHtml {
  const messages = fields.flatMap((field) => errors?.[field] ?? []);
  return html`${messages.map((message) => html`<p class="error">${message}</p>`)}`;
}

/** The hosted preorder page: seller, description, amount and a Visa/Master card form (or "paid", without a form). */
export function preorderPage(view: PreorderView): string {
  const summary = html`<h1>Pay ${view.sellerName}</h1>
<dl>
<dt>Seller</dt><dd id="seller">${view.sellerName}</dd>
<dt>Description</dt><dd id="description">${view.description}</dd>
<dt>Amount</dt><dd id="amount">${view.amount} ${view.currency}</dd>
</dl>`;
  if (view.paid) return page('Order paid', html`${summary}<p id="paid">This order has already been paid.</p>`);
  const errors = view.errors;
  const known = new Set(['holder_name', 'number', 'card_number', 'expiry', 'expiry_month', 'expiry_year', 'security_code']);
  const others = Object.keys(errors ?? {}).filter((field) => !known.has(field));
  return page(
    `Pay ${view.sellerName}`,
    html`${summary}
${fieldErrors(errors, ...others)}
<form method="post" action="${view.actionUrl}" autocomplete="off">
<label for="holder_name">Name on card</label>
<input id="holder_name" name="holder_name" required maxlength="100" value="${view.values?.holderName ?? ''}">
${fieldErrors(errors, 'holder_name')}
<label for="card_number">Card number (Visa or Mastercard)</label>
<input id="card_number" name="card_number" required inputmode="numeric" maxlength="23">
${fieldErrors(errors, 'number', 'card_number')}
<div class="row">
<div><label for="expiry_month">Expiry month</label>
<input id="expiry_month" name="expiry_month" required inputmode="numeric" maxlength="2" placeholder="MM" value="${view.values?.expiryMonth ?? ''}"></div>
<div><label for="expiry_year">Expiry year</label>
<input id="expiry_year" name="expiry_year" required inputmode="numeric" maxlength="4" placeholder="YY" value="${view.values?.expiryYear ?? ''}"></div>
</div>
${fieldErrors(errors, 'expiry', 'expiry_month', 'expiry_year')}
<label for="security_code">Security code</label>
<input id="security_code" name="security_code" required inputmode="numeric" maxlength="4" type="password">
${fieldErrors(errors, 'security_code')}
<button type="submit" id="pay">Pay ${view.amount} ${view.currency}</button>
</form>`,
  );
}

/** The page of an unknown preorder or deposit token. */
export function notFoundPage(): string {
  return messagePage('Not found', 'This payment page does not exist.');
}

/** The page of a hosted-page request refused by the abuse limits (HTTP 429 with Retry-After). */
export function tooManyRequestsPage(): string {
  return messagePage('Too many attempts', 'Too many attempts from here. Please wait a minute and try again.');
}

/** The page the façade shows when the platform fails unexpectedly (no details). */
export function faultPage(): string {
  return messagePage('Something went wrong', 'An unexpected error occurred. Please try again later.');
}

// ---- DepositService views → documents ----

/** Decimal text of minor units ("12.50"); the units as they are for a currency the platform does not know. */
function amountText(amountUnits: bigint, currency: string): string {
  return isCurrency(currency) ? formatAmount(amountUnits, currency) : amountUnits.toString();
}

/** `<PUBLIC_BASE_URL><MERCHANT_PREFIX>`: where the hosted pages' forms post. */
export type PageBaseUrl = string;

/** The confirmation page's view: the form posts to `<base>/visa-master/confirm/<deposit token>`. */
export function confirmationView(confirmation: CardConfirmation, base: PageBaseUrl): ConfirmationView {
  return {
    actionUrl: `${base}/visa-master/confirm/${encodeURIComponent(confirmation.depositToken)}`,
    merchantName: confirmation.merchantName,
    description: confirmation.description || null,
    amount: amountText(confirmation.amountUnits, confirmation.currency),
    currency: confirmation.currency,
    brand: confirmation.brand || null,
    last4: confirmation.last4,
    holderName: confirmation.holderName,
    reference: confirmation.reference,
  };
}

/**
 * The result object of a Visa/Master confirmation: `{success, code, message, data: {transaction_ref}}`, code 200
 * and "OK" for a completed deposit, else code 400 and the end state's message.
 */
export function resultObject(result: DepositResult): { success: boolean; code: number; message: string; data: { transaction_ref: string } } {
  const message = result.success ? 'OK' : result.problem ? renderProblem('token', result.problem) : DEPOSIT_MESSAGES.failed;
  return { success: result.success, code: result.success ? 200 : 400, message, data: { transaction_ref: result.reference } };
}

/** base64 of the result object's JSON (the `result` query parameter / hidden input). */
export function encodeResult(result: DepositResult): string {
  return Buffer.from(JSON.stringify(resultObject(result)), 'utf8').toString('base64');
}

/** The preorder's redirect_url with the query parameter `result` added. */
export function resultRedirect(redirectUrl: string, result: DepositResult): string {
  const target = new URL(redirectUrl);
  const parameter = `result=${encodeURIComponent(encodeResult(result))}`;
  target.search = target.search ? `${target.search}&${parameter}` : `?${parameter}`;
  return target.toString();
}

function preorderPageHtml(view: PreorderPage, base: PageBaseUrl, submission: boolean): { status: number; html: string } {
  const errors = renderFieldProblems(fieldViolationsOf(view.errors));
  const acquirerMissing = view.errors.some((violation) => violation.messages.includes(problem('acquirer_missing')));
  // Showing a paid preorder is a page like any other; paying it again is the conflict.
  const status = view.paid ? (submission ? 409 : 200) : acquirerMissing ? 503 : view.errors.length > 0 ? 400 : 200;
  const rendered = preorderPage({
    actionUrl: `${base}/pre-order/${encodeURIComponent(view.preOrderToken)}/pay`,
    sellerName: view.sellerName,
    description: view.description,
    amount: amountText(view.amountUnits, view.currency),
    currency: view.currency,
    paid: view.paid,
    errors: view.errors.length > 0 ? errors : undefined,
    values: view.errors.length > 0 && !acquirerMissing ? { holderName: view.holderName, expiryMonth: view.expiryMonth, expiryYear: view.expiryYear } : undefined,
  });
  return { status, html: rendered };
}

/**
 * One DepositService page view as its HTML document and status: not found 404; the confirmation and the result
 * 200; the preorder page 200, and for a card form submission (`submission`) 400 when refused, 409 when already
 * paid, 503 when card payments are off. A missing view is a fault (500).
 */
export function renderDepositPage(view: DepositPage | undefined, base: PageBaseUrl, submission = false): { status: number; html: string } {
  switch (view?.view.case) {
    case 'notFound':
      return { status: 404, html: notFoundPage() };
    case 'confirmation':
      return { status: 200, html: confirmationPage(confirmationView(view.view.value, base)) };
    case 'result': {
      const result = view.view.value;
      const object = resultObject(result);
      return { status: 200, html: resultPage({ success: object.success, message: object.message, reference: result.reference, resultBase64: encodeResult(result) }) };
    }
    case 'preorder':
      return preorderPageHtml(view.view.value, base, submission);
    default:
      return { status: 500, html: faultPage() };
  }
}
