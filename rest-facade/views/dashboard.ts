/**
 * The merchant dashboard's HTML (docs/dashboard.md): the layout (skip link, header with the merchant and the
 * sign-out form, the navigation built from the list of pages it is given, main), the sign-in form, balances, webhook
 * deliveries with their attempts and a redeliver form each, the webhook endpoint with its signing headers explained,
 * and the error pages. Pure functions, no I/O; escaping by ./html.ts. No script anywhere, no inline style: the one
 * stylesheet is /dashboard/style.css (./dashboard-style.ts). Every form that changes something carries the session's
 * CSRF token (the sign-in form the sign-in cookie's).
 */
import { formatAmount, isCurrency } from '../../src/money';
import { NextRetry, type GetWebhookEndpointResponse, type Session, type TestDelivery, type Wallet, type WebhookAttempt, type WebhookDelivery } from '../../src/gen/payments/dashboard/v1/dashboard_pb';
import { html, type SafeHtml } from './html';

/** Where the dashboard lives (its cookie's Path too). */
export const DASHBOARD_BASE = '/dashboard';
export const DASHBOARD_STYLESHEET_PATH = `${DASHBOARD_BASE}/style.css`;

/** One entry of the navigation: a page under DASHBOARD_BASE, its title (its heading) and its link's text. */
export interface NavigationEntry {
  path: string;
  title: string;
  /** The link's text when shorter than the title. */
  label?: string;
}

/** What the layout shows of the signed-in merchant (absent on the sign-in page and signed-out error pages). */
export type SignedIn = Pick<Session, 'merchantId' | 'merchantName' | 'csrfToken'>;

const csrfField = (token: string) => html`<input type="hidden" name="csrf_token" value="${token}">`;

/** `2026-01-31 09:15:02 UTC` in a <time> element carrying the ISO 8601 instant. */
export function time(iso: string): SafeHtml {
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace('T', ' ')} UTC</time>`;
}

function header(signedIn: SignedIn | undefined): SafeHtml {
  if (!signedIn) return html`<header><p class="brand">Merchant dashboard</p></header>`;
  return html`<header>
<p class="brand">Merchant dashboard</p>
<p>Signed in as <strong id="merchant-name">${signedIn.merchantName}</strong> <span class="muted-light">(${signedIn.merchantId})</span></p>
</header>`;
}

/** The navigation bar: a link per page in order, then Sign out (a POST form with the session's CSRF token). */
function navigation(entries: readonly NavigationEntry[], current: string | undefined, csrfToken: string): SafeHtml {
  const items = entries.map(
    (entry) => html`<li><a href="${DASHBOARD_BASE}${entry.path}"${current === entry.path ? html` aria-current="page"` : ''}>${entry.label ?? entry.title}</a></li>`,
  );
  return html`<nav aria-label="Dashboard"><ul>${items}<li class="sign-out"><form method="post" action="${DASHBOARD_BASE}/sign-out">${csrfField(csrfToken)}<button type="submit" id="sign-out">Sign out</button></form></li></ul></nav>`;
}

/**
 * A whole dashboard document. `navigation` is the list of pages (shown when signed in); `current` the path of the
 * page shown among them.
 */
export function dashboardDocument(view: {
  title: string;
  content: SafeHtml;
  signedIn?: SignedIn;
  navigation?: readonly NavigationEntry[];
  current?: string;
}): string {
  return html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${view.title} · Merchant dashboard</title>
<link rel="stylesheet" href="${DASHBOARD_STYLESHEET_PATH}">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${header(view.signedIn)}
${view.signedIn && view.navigation ? navigation(view.navigation, view.current, view.signedIn.csrfToken) : ''}
<main id="main">
<h1>${view.title}</h1>
${view.content}
</main>
</body>
</html>
`.value;
}

/** The sign-in form; `error` is shown above it (role alert), `userName` refilled after a refusal. */
export function signInContent(view: { csrfToken: string; error?: string; userName?: string }): SafeHtml {
  return html`${view.error ? html`<p class="error" id="error" role="alert">${view.error}</p>` : ''}
<form class="sign-in" method="post" action="${DASHBOARD_BASE}/sign-in">
${csrfField(view.csrfToken)}
<label for="user_name">API user name</label>
<input type="text" id="user_name" name="user_name" autocomplete="username" required maxlength="256" value="${view.userName ?? ''}">
<label for="password">API password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required maxlength="256">
<div><button type="submit" id="sign-in">Sign in</button></div>
</form>
<p class="muted">Use the API user name and password you received at onboarding (the credentials of the merchant API's
<code>/login</code>). Too many wrong attempts lock signing in from your address for a while.</p>`;
}

/** Minor units as the currency's decimal text (plain units for a currency the platform does not know). */
export function amount(units: bigint, currency: string): string {
  return isCurrency(currency) ? formatAmount(units, currency) : units.toString();
}

/** Balances: one row per wallet. */
export function balancesContent(wallets: readonly Wallet[]): SafeHtml {
  const rows = wallets.map(
    (wallet) => html`<tr>
<th scope="row"><a href="${DASHBOARD_BASE}/balances/${encodeURIComponent(wallet.currency)}" id="transactions-${wallet.currency}">${wallet.currency}</a></th>
<td class="amount">${amount(wallet.balanceUnits, wallet.currency)}</td>
<td class="amount" id="available-${wallet.currency}">${amount(wallet.availableUnits, wallet.currency)}</td>
<td class="amount">${amount(wallet.heldUnits, wallet.currency)}</td>
</tr>`,
  );
  return html`<table id="balances">
<caption>Your wallets</caption>
<thead><tr><th scope="col">Currency</th><th scope="col">Balance</th><th scope="col">Available</th><th scope="col">Held</th></tr></thead>
<tbody>${rows}</tbody>
</table>
<p class="muted">Balance is every posted movement; held is money reserved by movements not finished yet (blocked money,
pending transfers); available is what you can spend: the balance less what is held. Open a currency for every
movement behind its balance.</p>`;
}

const STATUS_TEXT: Record<string, string> = { pending: 'Pending', delivered: 'Delivered', failed: 'Failed: retries ended' };

function nextRetryText(delivery: WebhookDelivery): SafeHtml | string {
  switch (delivery.nextRetry) {
    case NextRetry.SCHEDULED:
      return delivery.nextRetryAt ? time(delivery.nextRetryAt) : 'Scheduled';
    case NextRetry.IN_PROGRESS:
      return 'Being attempted now';
    case NextRetry.NOT_SCHEDULED:
      return delivery.nextRetryAt
        ? html`Was due at ${time(delivery.nextRetryAt)} and has not been sent: redeliver it to send it again`
        : 'Not scheduled: redeliver it to send it again';
    case NextRetry.UNKNOWN:
      return 'Unknown just now (reload in a moment)';
    default:
      return 'None';
  }
}

function attemptRow(attempt: WebhookAttempt): SafeHtml {
  return html`<tr>
<th scope="row">${attempt.attempt}</th>
<td>${time(attempt.attemptedAt)}</td>
<td>${attempt.statusCode === 0 ? 'no answer' : attempt.statusCode}</td>
<td class="amount">${attempt.latencyMs} ms</td>
<td>${attempt.error || '—'}</td>
<td>${attempt.responseBody ? html`<details><summary>Response body</summary><pre><code>${attempt.responseBody}</code></pre></details>` : html`<span class="muted">—</span>`}</td>
</tr>`;
}

function deliveryArticle(delivery: WebhookDelivery, csrfToken: string, index: number): SafeHtml {
  const headingId = `delivery-${index}`;
  const attempts = delivery.attempts.length
    ? html`<div class="scroll"><table>
<caption>Delivery attempts</caption>
<thead><tr><th scope="col">Attempt</th><th scope="col">Time</th><th scope="col">Status code</th><th scope="col">Latency</th><th scope="col">Error</th><th scope="col">Answer (first 2 KiB)</th></tr></thead>
<tbody>${delivery.attempts.map(attemptRow)}</tbody>
</table></div>`
    : html`<p class="muted">No attempt yet.</p>`;
  return html`<article class="delivery" aria-labelledby="${headingId}" data-webhook-id="${delivery.webhookId}">
<h2 id="${headingId}">${delivery.event} · ${delivery.subjectReference}</h2>
<dl>
<dt>Status</dt><dd class="status-${delivery.status}">${STATUS_TEXT[delivery.status] ?? delivery.status}</dd>
<dt>Webhook id</dt><dd><code>${delivery.webhookId}</code></dd>
<dt>Created</dt><dd>${time(delivery.createdAt)}</dd>
${delivery.deliveredAt ? html`<dt>Delivered</dt><dd>${time(delivery.deliveredAt)}</dd>` : ''}
<dt>Sent to</dt><dd>${delivery.callbackUrl}</dd>
<dt>Next retry</dt><dd>${nextRetryText(delivery)}</dd>
</dl>
<details class="request-body"><summary>Request body (sent with every attempt)</summary><pre><code>${prettyBody(delivery.body)}</code></pre></details>
${attempts}
<form method="post" action="${DASHBOARD_BASE}/webhooks/${encodeURIComponent(delivery.webhookId)}/redeliver">
${csrfField(csrfToken)}<button type="submit" aria-describedby="${headingId}">Redeliver</button>
</form>
</article>`;
}

/** A JSON body indented for reading (as it is when it does not parse). */
function prettyBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/** The deliveries' status filter's choices. */
const DELIVERY_FILTER: ReadonlyArray<[string, string]> = [
  ['', 'Any status'],
  ['pending', 'Pending'],
  ['delivered', 'Delivered'],
  ['failed', 'Failed: retries ended'],
];

/** Webhook deliveries, newest first: each with its attempts and a redeliver form; links to older pages. */
export function deliveriesContent(view: {
  deliveries: readonly WebhookDelivery[];
  csrfToken: string;
  nextPageToken: string;
  /** True on a page after the first. */
  paged: boolean;
  /** The webhook id a redelivery was just started for. */
  redelivered?: string;
  /** The status filter ('' for any). */
  status?: string;
  /** When the endpoint was disabled ('' while enabled). */
  disabledAt?: string;
}): SafeHtml {
  const status = view.status ?? '';
  const keep = status ? `&status=${encodeURIComponent(status)}` : '';
  const disabled = view.disabledAt
    ? html`<p class="error" id="endpoint-disabled" role="alert">Your endpoint was disabled on ${time(view.disabledAt)} after failing every attempt: nothing is sent until you <a href="${DASHBOARD_BASE}/webhook-endpoint">enable it</a>.</p>`
    : '';
  const filter = html`<form class="filters" method="get" action="${DASHBOARD_BASE}/webhooks" role="search" aria-label="Filter deliveries">
<div><label for="status">Status</label><select id="status" name="status">${DELIVERY_FILTER.map(([value, label]) => html`<option value="${value}"${value === status ? html` selected` : ''}>${label}</option>`)}</select></div>
<div class="filter-actions"><button type="submit" id="apply">Apply filter</button> <a href="${DASHBOARD_BASE}/webhooks">Clear</a></div>
</form>`;
  const notice = view.redelivered
    ? html`<p class="notice" id="notice" role="status">Redelivery of <code>${view.redelivered}</code> started: it is sent again now, with the same webhook id.</p>`
    : '';
  const list = view.deliveries.length
    ? view.deliveries.map((delivery, index) => deliveryArticle(delivery, view.csrfToken, index))
    : html`<p id="empty">No webhook${status ? ' with this status' : ''} has been sent${view.paged ? ' before these' : ' yet'}.</p>`;
  const links = [
    view.paged ? html`<a href="${DASHBOARD_BASE}/webhooks${status ? `?status=${encodeURIComponent(status)}` : ''}">Newest deliveries</a>` : '',
    view.nextPageToken ? html`<a href="${DASHBOARD_BASE}/webhooks?page_token=${encodeURIComponent(view.nextPageToken)}${keep}" rel="next" id="older">Older deliveries</a>` : '',
  ];
  return html`${disabled}${notice}
${filter}
<p class="muted">Every webhook and call-back sent to you, newest first, with every attempt. A delivery is retried with
backoff until your endpoint answers 2xx or its retry window ends; <em>Redeliver</em> sends it again with the same
webhook id (de-duplicate on it).</p>
${list}
${view.paged || view.nextPageToken ? html`<nav aria-label="Pages of deliveries" class="pages">${links}</nav>` : ''}`;
}

/** What each header a webhook carries means (the signature header is the merchant's own name). */
const HEADER_MEANINGS: Record<string, string> = {
  'x-webhook-id': 'The event\'s id: the same on every attempt. De-duplicate on it.',
  'x-webhook-event': 'The event type (payin.success, payin.expired, payin.closed, payin.additional_payment; call-backs name their own).',
  'x-webhook-attempt': '1, 2, … counting every attempt of this event.',
  'webhook-id': 'Standard Webhooks: the event\'s id (as X-Webhook-Id); it is signed.',
  'webhook-timestamp': 'Standard Webhooks: Unix seconds when this attempt was signed. Refuse old ones to stop replays.',
  'webhook-signature': 'Standard Webhooks: v1,<base64 HMAC-SHA256 of "id.timestamp.body">, keyed with the same hmac_secret; during a secret rotation also the replaced secret\'s, space-separated.',
};

/** The verification example, for the merchant's own signature header name. */
function verificationExample(signatureHeader: string): string {
  const header = signatureHeader.toLowerCase();
  return `const { createHmac, timingSafeEqual } = require('node:crypto');

// rawBody: the request body exactly as received (a Buffer), before any JSON parsing.
function verifyWebhook(rawBody, headers, hmacSecret) {
  const expected = createHmac('sha256', hmacSecret).update(rawBody).digest('hex');
  const given = String(headers['${header}'] ?? '').toLowerCase();
  return given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}

// Standard Webhooks: the same secret over "id.timestamp.body"; refuse timestamps older than 5 minutes.
function verifyStandardWebhook(rawBody, headers, hmacSecret) {
  const timestamp = Number(headers['webhook-timestamp']);
  if (!Number.isInteger(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > 300) return false;
  const signed = \`\${headers['webhook-id']}.\${timestamp}.\${rawBody}\`;
  const expected = 'v1,' + createHmac('sha256', hmacSecret).update(signed).digest('base64');
  return String(headers['webhook-signature'] ?? '').split(' ').some(
    (given) => given.length === expected.length && timingSafeEqual(Buffer.from(given), Buffer.from(expected)));
}`;
}

/** What the endpoint page shows after one of its forms. */
export interface EndpointResult {
  /** A rotation's new secret (shown once) and until when the old one signs too. */
  rotated?: { secret: string; previousValidUntil: string };
  /** A test event's outcome. */
  test?: TestDelivery;
  /** A line after a change (URL saved, endpoint enabled). */
  notice?: string;
  /** Why a change was refused (nothing changed). */
  refused?: string;
}

function testOutcome(test: TestDelivery): SafeHtml {
  const answered = test.statusCode === 0 ? 'no answer' : `HTTP ${test.statusCode}`;
  return html`<div class="${test.error ? 'error' : 'notice'}" id="test-result" role="status">
<p>Test event <code>${test.webhookId}</code>: ${test.error ? html`not accepted (${answered}${test.error && test.statusCode === 0 ? `: ${test.error}` : ''})` : html`accepted (${answered})`}.</p>
${test.responseBody ? html`<details><summary>Your endpoint's answer (first 2 KiB)</summary><pre><code>${test.responseBody}</code></pre></details>` : ''}
</div>`;
}

/**
 * The webhook endpoint: where webhooks go, the headers they carry and how to verify them, and the forms that manage it
 * (change the URL after a test delivery, send a test event, rotate the signing secret, enable a disabled endpoint).
 * The secret is shown only once, right after a rotation.
 */
export function endpointContent(endpoint: GetWebhookEndpointResponse, csrfToken = '', result: EndpointResult = {}): SafeHtml {
  const rows = endpoint.headers.map((name) => {
    const meaning = name === endpoint.signatureHeader ? 'Lowercase hex HMAC-SHA256 of the raw body, keyed with your current hmac_secret.' : (HEADER_MEANINGS[name.toLowerCase()] ?? '');
    return html`<tr><th scope="row"><code>${name}</code></th><td>${meaning}</td></tr>`;
  });
  const days = Number(endpoint.disableAfterSeconds) / 86_400;
  const window = days >= 1 ? `${days} days` : `${Number(endpoint.disableAfterSeconds)} seconds`;
  const state = endpoint.disabledAt
    ? html`<div class="error" id="endpoint-disabled" role="alert"><p>Your endpoint was <strong>disabled</strong> on ${time(endpoint.disabledAt)}: every attempt failed for ${window}. Nothing is sent to it until you enable it; webhooks meanwhile are recorded and can be redelivered.</p>
<form method="post" action="${DASHBOARD_BASE}/webhook-endpoint/enable">${csrfField(csrfToken)}<button type="submit" id="enable">Enable the endpoint</button></form></div>`
    : endpoint.failingSince
      ? html`<p class="error" id="endpoint-failing" role="status">Every attempt since ${time(endpoint.failingSince)} failed. The endpoint is disabled once it has failed for ${window}.</p>`
      : '';
  const rotated = result.rotated
    ? html`<div class="notice" id="rotated" role="status"><p>Your new signing secret (copy it now: it is never shown again):</p>
<p><code id="new-secret">${result.rotated.secret}</code></p>
<p>Until ${time(result.rotated.previousValidUntil)} every webhook carries both signatures in <code>webhook-signature</code> (the new secret's first); then only the new one. The <code>${endpoint.signatureHeader}</code> header is signed with the new secret from now on.</p></div>`
    : '';
  return html`${state}${rotated}${result.notice ? html`<p class="notice" id="notice" role="status">${result.notice}</p>` : ''}${result.test ? testOutcome(result.test) : ''}${result.refused ? html`<p class="error" id="refused" role="alert">${result.refused}</p>` : ''}
<dl id="endpoint">
<dt>Callback URL</dt><dd id="callback-url">${endpoint.callbackUrl}</dd>
<dt>Signature header</dt><dd id="signature-header"><code>${endpoint.signatureHeader}</code></dd>
<dt>Signing secret</dt><dd id="secret">Your <code>${endpoint.secretName}</code>, issued on ${time(endpoint.secretIssuedAt)}. It is shown only once, when issued.${
    endpoint.previousSecretValidUntil ? html` The secret it replaced also signs until ${time(endpoint.previousSecretValidUntil)}.` : ''
  }</dd>
</dl>
<section aria-labelledby="manage-heading"><h2 id="manage-heading">Manage the endpoint</h2>
<form method="post" class="manage" action="${DASHBOARD_BASE}/webhook-endpoint/url">${csrfField(csrfToken)}
<label for="callback_url">New callback URL</label>
<input type="text" id="callback_url" name="callback_url" inputmode="url" maxlength="2048" required placeholder="https://">
<p class="muted">A public http(s) address. A signed test event (<code>webhook.test</code>) is sent to it first; the URL is saved only when it answers 2xx.</p>
<div><button type="submit" id="change-url">Test and save the URL</button></div>
</form>
<form method="post" class="manage" action="${DASHBOARD_BASE}/webhook-endpoint/test">${csrfField(csrfToken)}
<p>Send a signed <code>webhook.test</code> event to your current URL and see what it answers.</p>
<div><button type="submit" id="send-test">Send a test event</button></div>
</form>
<form method="post" class="manage" action="${DASHBOARD_BASE}/webhook-endpoint/rotate">${csrfField(csrfToken)}
<p>Rotate the signing secret: a new secret is shown once; the current one keeps signing beside it for a while, so you can deploy the new one without missing a webhook.</p>
<div><button type="submit" id="rotate">Rotate the signing secret</button></div>
</form>
</section>
<h2>Headers of every webhook</h2>
<div class="scroll"><table id="headers">
<caption>Besides <code>Content-Type: application/json</code></caption>
<thead><tr><th scope="col">Header</th><th scope="col">What it carries</th></tr></thead>
<tbody>${rows}</tbody>
</table></div>
<h2>Verifying a webhook</h2>
<p>Compute the HMAC over the bytes you received, before parsing them, compare in constant time, and answer 401 when
it does not match. Answer 2xx once you have stored the event; anything else is retried. During a secret rotation
<code>webhook-signature</code> holds one signature per secret, space-separated: accept the webhook when any matches.</p>
<pre><code>${verificationExample(endpoint.signatureHeader)}</code></pre>`;
}

/** A page with one message (refused form, not found, too many attempts, fault); `link` offers the way on. */
export function messageContent(message: string, link?: { href: string; text: string }): SafeHtml {
  return html`<p id="message">${message}</p>${link ? html`<p><a href="${link.href}">${link.text}</a></p>` : ''}`;
}

/** The 400 page: what is wrong with each filter (role alert), that nothing changed, and the way back. */
export function invalidContent(problems: readonly string[], link: { href: string; text: string }): SafeHtml {
  return html`<div class="error" id="problems" role="alert"><p>These filters are not valid, so nothing was shown:</p>
<ul>${problems.map((text) => html`<li>${text}</li>`)}</ul></div>
<p><a href="${link.href}">${link.text}</a></p>`;
}
