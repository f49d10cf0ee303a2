/**
 * The upstream crypto provider's API as the platform calls it (platform decisions §4; docs/refunds.md "Providers"):
 * one pool of connections (undici), payin forwarding (B1) and refund requests; payouts add theirs here. What the
 * provider sends back on its own, its signed notifications, is ./notifications.ts.
 *
 * Payin forwarding: the merchant's body byte for byte with `Content-Type`, `Authorization: Bearer {UPSTREAM_API_KEY}`,
 * `X-Invoice-Reference` and `X-Notify-Url`. A 200 answer must be `{"qrcode": {"content": string, "image"?: string},
 * "trx_ref"?: string}`; anything else, a timeout (`UPSTREAM_TIMEOUT_SECONDS`) or a refused connection is
 * `UpstreamUnavailableError`.
 *
 * Refund request: `POST {UPSTREAM_REFUND_URL}` (default `<UPSTREAM_PAYIN_URL>/refunds`, src/config.ts
 * upstreamRefundUrl) with `Content-Type: application/json`, `Authorization: Bearer {UPSTREAM_API_KEY}`,
 * `Idempotency-Key` and `X-Notify-Url`, body `{"refund_reference", "invoice_reference", "trx_ref", "amount",
 * "currency": "USDT", "address", "reason"}` (`amount` an exact JSON number, `trx_ref` the payment refunded). Answer
 * 200/201/202 `{"refund_reference", "status": "succeeded" | "failed" | "pending", "refund_trx_ref"?,
 * "failure_reason"?, "amount"?, "currency"?}`. The same Idempotency-Key answers the same refund, never a second one.
 */
import { Agent, request, type Dispatcher } from 'undici';
import type { Config } from '../config';
import { upstreamPayoutUrl, upstreamRefundUrl } from '../config';
import { amountJson, isLosslessNumber, parseJsonLossless, readAmount, stringifyJson } from '../money';
import { hasControlCharacters } from '../text';

export class UpstreamUnavailableError extends Error {
  constructor(detail: string) {
    super(`upstream payin server unavailable: ${detail}`);
    this.name = 'UpstreamUnavailableError';
  }
}

export interface UpstreamPayinAnswer {
  qr_content: string;
  /** Base64 PNG when the upstream sent one. */
  qr_image?: string;
  trx_ref?: string;
}

/**
 * The connections to the upstream provider, shared by payin forwarding and refund requests. Its URLs
 * are the operator's choice, so it is not the outbound policy's guarded dispatcher (docs/security.md "Outbound
 * requests"); live mode requires them to be https (src/config.ts liveModeProblem).
 */
export const upstreamAgent = new Agent({ keepAliveTimeout: 10_000, connections: 64 });

/**
 * POSTs a JSON `body` to the upstream over `upstreamAgent`, with `Authorization: Bearer {api_key}` when one is set,
 * `headers` beside it, and `timeout_seconds` (UPSTREAM_TIMEOUT_SECONDS) on the headers, the body and the whole call.
 * Shared by payin forwarding and refund requests. @throws undici's error when no answer came (refused, timed out)
 */
export function postToUpstream(
  url: string,
  body: string | Uint8Array,
  options: { api_key?: string; timeout_seconds: number; headers: Record<string, string> },
): Promise<Dispatcher.ResponseData> {
  const timeoutMs = Math.round(options.timeout_seconds * 1000);
  return request(url, {
    method: 'POST',
    body,
    dispatcher: upstreamAgent,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
    headers: { 'content-type': 'application/json', ...(options.api_key ? { authorization: `Bearer ${options.api_key}` } : {}), ...options.headers },
  });
}

/**
 * POSTs `body` (the raw bytes) to `url`.
 * @param options.timeout_seconds header and body timeout (UPSTREAM_TIMEOUT_SECONDS)
 * @throws UpstreamUnavailableError for any answer but a well-formed 200, a timeout or a network error
 */
export async function forwardPayin(
  url: string,
  body: Uint8Array,
  options: { api_key?: string; invoice_reference: string; notify_url: string; timeout_seconds: number },
): Promise<UpstreamPayinAnswer> {
  let response;
  try {
    response = await postToUpstream(url, body, {
      api_key: options.api_key,
      timeout_seconds: options.timeout_seconds,
      headers: { 'x-invoice-reference': options.invoice_reference, 'x-notify-url': options.notify_url },
    });
  } catch (error) {
    throw new UpstreamUnavailableError((error as Error).message);
  }
  let text: string;
  try {
    text = await response.body.text();
  } catch (error) {
    throw new UpstreamUnavailableError(`reading the answer: ${(error as Error).message}`);
  }
  if (response.statusCode !== 200) throw new UpstreamUnavailableError(`HTTP ${response.statusCode}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UpstreamUnavailableError('answer is not JSON');
  }
  const answer = parsed as { qrcode?: { content?: unknown; image?: unknown }; trx_ref?: unknown };
  const content = answer?.qrcode?.content;
  if (typeof content !== 'string' || content === '') throw new UpstreamUnavailableError('answer has no qrcode.content');
  const image = answer.qrcode?.image;
  return {
    qr_content: content,
    ...(typeof image === 'string' && image !== '' ? { qr_image: image } : {}),
    ...(typeof answer.trx_ref === 'string' && answer.trx_ref !== '' ? { trx_ref: answer.trx_ref } : {}),
  };
}

// ---- Refunds ----

/** Field limits of a refund request, its answer and its notification (characters). */
export const REFUND_LIMITS = {
  refund_reference: 64,
  idempotency_key: 255,
  trx_ref: 255,
  refund_trx_ref: 255,
  address: 128,
  reason: 255,
  failure_reason: 255,
} as const;

/** Largest answer body read from the provider, bytes: anything longer is a malformed answer. */
export const MAX_ANSWER_BYTES = 65_536;

/** A refund of (part of) a settled payin, as the upstream is asked for it. */
export interface UpstreamRefundRequest {
  /** The platform's reference of the refund (also the RefundWorkflow's id). */
  refund_reference: string;
  /** The payin refunded (`PAYIN-…`). */
  invoice_reference: string;
  /** The upstream's reference of the payment refunded (the `trx_ref` of its success notification). */
  trx_ref: string;
  /** Minor units of `currency` (USDT: 6 decimals), > 0. */
  amount_units: bigint;
  currency: 'USDT';
  /** Where the provider sends the money back (a TRON address for USDT TRC-20). */
  address: string;
  /** Why, as the merchant gave it (≤ 255 characters). */
  reason: string;
}

/**
 * The provider's answer: `succeeded` (money sent; its transaction reference), `failed` (nothing sent, for good; its
 * reason as the provider wrote it, bounded and without control characters) or `pending` (decided later by a signed
 * notification, or by asking again with the same idempotency key).
 */
export type UpstreamRefundOutcome =
  | { status: 'succeeded'; refund_trx_ref: string }
  | { status: 'failed'; failure_reason: string }
  | { status: 'pending' };

/**
 * Why a refund request got no outcome:
 *   unreachable   no answer: connection refused or reset, name not resolved, UPSTREAM_TIMEOUT_SECONDS ran out
 *   refused       a 4xx: the provider refused this request (credentials, fields, idempotency key reused with
 *                 other parameters); retrying the same request gets the same answer, except 408, 409, 425, 429
 *   server_error  a 5xx
 *   malformed     a 2xx whose body is not the answer above (or names another refund, or another amount), any other
 *                 status (1xx, 3xx), or an answer longer than MAX_ANSWER_BYTES
 */
export type UpstreamRefundErrorKind = 'unreachable' | 'refused' | 'server_error' | 'malformed';

/** 4xx statuses that say "not now" rather than "never": a retry with the same key may get the outcome. */
const RETRYABLE_REFUSALS = new Set([408, 409, 425, 429]);

/**
 * A refund request without an outcome. `retryable`: whether the same request (same idempotency key) may be sent
 * again. Every kind but `refused` is: the key makes a retry safe, and the refund may have happened at the provider
 * (no answer is not "nothing happened"). The message names the kind and the HTTP status, never the body or a secret.
 */
export class UpstreamRefundError extends Error {
  readonly retryable: boolean;

  constructor(
    readonly kind: UpstreamRefundErrorKind,
    detail: string,
    readonly status_code?: number,
  ) {
    super(`upstream refund ${kind}: ${detail}`);
    this.name = 'UpstreamRefundError';
    this.retryable = kind !== 'refused' || (status_code !== undefined && RETRYABLE_REFUSALS.has(status_code));
  }
}

export interface UpstreamRefundOptions {
  /** UPSTREAM_API_KEY, sent as `Authorization: Bearer …` when set. */
  api_key?: string;
  /** Where the provider notifies a late decision (`{PUBLIC_BASE_URL}/api/v1/upstream/notifications`). */
  notify_url: string;
  /** Header and body timeout, seconds (UPSTREAM_TIMEOUT_SECONDS). */
  timeout_seconds: number;
}

/**
 * The upstream provider port (`deps.upstream`, built by the composition root with `upstreamFromConfig`): what the
 * money-out flows ask it. Payouts add `payout` here.
 */
export interface Upstream {
  /**
   * Asks the provider to pay out (docs/payouts.md "Providers"). A repeat with the same `idempotency_key` answers the
   * same payout (its outcome, or its decision once a pending payout was decided) and never pays twice.
   * @throws UpstreamPayoutError when no outcome was answered (see `retryable`)
   */
  payout(input: UpstreamPayoutRequest, idempotency_key: string): Promise<UpstreamPayoutOutcome>;
  /**
   * Asks the provider to refund. A repeat with the same `idempotency_key` answers the same refund (its outcome, or
   * its decision once a pending refund was decided) and never refunds twice.
   * @throws UpstreamRefundError when no outcome was answered (see `retryable`)
   */
  refund(input: UpstreamRefundRequest, idempotency_key: string): Promise<UpstreamRefundOutcome>;
}

/** Printable ASCII without spaces at the ends: what a header value and a provider's key store both take. */
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** A request the platform itself got wrong (a programming error, never the provider's answer). */
function checkRequest(input: UpstreamRefundRequest, idempotency_key: string): void {
  const problems: string[] = [];
  if (!IDEMPOTENCY_KEY_PATTERN.test(idempotency_key) || idempotency_key.length > REFUND_LIMITS.idempotency_key) problems.push('idempotency_key');
  if (typeof input.amount_units !== 'bigint' || input.amount_units <= 0n) problems.push('amount_units');
  if (input.currency !== 'USDT') problems.push('currency');
  const limits = { refund_reference: REFUND_LIMITS.refund_reference, invoice_reference: REFUND_LIMITS.refund_reference, trx_ref: REFUND_LIMITS.trx_ref, address: REFUND_LIMITS.address };
  for (const field of ['refund_reference', 'invoice_reference', 'trx_ref', 'address'] as const) {
    const value: unknown = input[field];
    if (!isReference(value, limits[field])) problems.push(field);
  }
  if (typeof input.reason !== 'string' || [...input.reason].length > REFUND_LIMITS.reason || hasControlCharacters(input.reason)) problems.push('reason');
  if (problems.length > 0) throw new TypeError(`invalid upstream refund request: ${problems.join(', ')}`);
}

/** An error of the connection in a few words: `timed out` for any of the timeouts, else its message. */
function describe(error: unknown): string {
  const { name, code, message } = error as { name?: string; code?: string; message?: string };
  if (name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timed out';
  return message ?? String(error);
}

/** An answer over MAX_ANSWER_BYTES (read no further). */
class AnswerTooLongError extends Error {}

/** How a money-out exchange fails: the flow's own error of `kind`. */
type MoneyOutFailure = (kind: UpstreamRefundErrorKind, detail: string, status_code?: number) => Error;

/**
 * One money-out request to the provider (a refund or a payout): the signed POST of `body` under `idempotency_key`
 * with the notification URL, then the answer's text when the provider answered 200, 201 or 202.
 * @throws what `fail` makes: unreachable (not sent, or the answer not read), refused (4xx), server_error (5xx),
 *   malformed (another 2xx or 3xx, or an answer over MAX_ANSWER_BYTES)
 */
async function exchange(url: string, body: string, idempotency_key: string, options: UpstreamRefundOptions, fail: MoneyOutFailure): Promise<string> {
  let response;
  try {
    response = await postToUpstream(url, body, {
      api_key: options.api_key,
      timeout_seconds: options.timeout_seconds,
      headers: { 'idempotency-key': idempotency_key, 'x-notify-url': options.notify_url },
    });
  } catch (error) {
    throw fail('unreachable', describe(error));
  }
  const status = response.statusCode;
  if (status >= 400) {
    await response.body.dump().catch(() => undefined);
    throw fail(status >= 500 ? 'server_error' : 'refused', `HTTP ${status}`, status);
  }
  let text: string;
  try {
    text = await readAnswer(response.body);
  } catch (error) {
    if (error instanceof AnswerTooLongError) throw fail('malformed', error.message);
    throw fail('unreachable', `reading the answer: ${describe(error)}`);
  }
  if (status !== 200 && status !== 201 && status !== 202) throw fail('malformed', `HTTP ${status}`, status);
  return text;
}

/** Reads the body up to MAX_ANSWER_BYTES. */
async function readAnswer(body: AsyncIterable<Uint8Array> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    length += chunk.length;
    if (length > MAX_ANSWER_BYTES) {
      body.destroy();
      throw new AnswerTooLongError(`answer longer than ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A provider's text (a failure reason): control characters replaced by spaces, at most REFUND_LIMITS.failure_reason characters. */
export function providerText(value: unknown): string {
  if (typeof value !== 'string') return '';
  // eslint-disable-next-line no-control-regex
  return [...value.replace(/[\x00-\x1f\x7f]/g, ' ').trim()].slice(0, REFUND_LIMITS.failure_reason).join('');
}

/** A reference the provider gave: a non-empty string within `limit`, without control characters. */
export function isReference(value: unknown, limit: number): value is string {
  return typeof value === 'string' && value !== '' && [...value].length <= limit && !hasControlCharacters(value);
}

/**
 * The JSON object of a money-out provider's 2xx answer, checked against what was asked: the same reference under
 * `referenceField`, and the same currency and amount (minor units) when it names them.
 * @throws what `malformed` makes of the first thing wrong
 */
function checkedAnswer(
  text: string,
  referenceField: 'refund_reference' | 'payout_reference',
  asked: { reference: string; currency: 'USDT'; amount_units: bigint },
  malformed: (detail: string) => Error,
): Record<string, unknown> {
  let answer: Record<string, unknown>;
  try {
    const parsed = parseJsonLossless(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    answer = parsed as Record<string, unknown>;
  } catch {
    throw malformed('answer is not a JSON object');
  }
  if (answer[referenceField] !== asked.reference) throw malformed(`answer names another ${referenceField}`);
  if (answer.currency !== undefined && answer.currency !== asked.currency) throw malformed('answer names another currency');
  if (answer.amount !== undefined) {
    let answered: bigint | undefined;
    try {
      answered = isLosslessNumber(answer.amount) ? readAmount(answer.amount, asked.currency) : undefined;
    } catch {
      answered = undefined;
    }
    if (answered !== asked.amount_units) throw malformed('answer names another amount');
  }
  return answer;
}

/** The outcome of a 2xx answer to `input`. @throws UpstreamRefundError malformed */
function outcomeOf(text: string, input: UpstreamRefundRequest): UpstreamRefundOutcome {
  const answer = checkedAnswer(text, 'refund_reference', { reference: input.refund_reference, currency: input.currency, amount_units: input.amount_units }, (detail) => new UpstreamRefundError('malformed', detail));
  switch (answer.status) {
    case 'succeeded':
      if (!isReference(answer.refund_trx_ref, REFUND_LIMITS.refund_trx_ref)) throw new UpstreamRefundError('malformed', 'a succeeded answer without refund_trx_ref');
      return { status: 'succeeded', refund_trx_ref: answer.refund_trx_ref };
    case 'failed':
      return { status: 'failed', failure_reason: providerText(answer.failure_reason) || 'refused by the provider' };
    case 'pending':
      return { status: 'pending' };
    default:
      throw new UpstreamRefundError('malformed', 'answer has no known status');
  }
}

/**
 * Requests a refund from the upstream provider at `url` (UPSTREAM_REFUND_URL), through the connections payin
 * forwarding uses (`upstreamAgent`).
 * @param idempotency_key the refund's key (printable ASCII, ≤ 255 characters), sent as `Idempotency-Key`
 * @returns the provider's outcome
 * @throws UpstreamRefundError unreachable | refused | server_error | malformed (see its `retryable`)
 * @throws TypeError when the request itself is invalid (a programming error: nothing was sent)
 */
export async function requestUpstreamRefund(
  url: string,
  input: UpstreamRefundRequest,
  idempotency_key: string,
  options: UpstreamRefundOptions,
): Promise<UpstreamRefundOutcome> {
  checkRequest(input, idempotency_key);
  const body = stringifyJson({
    refund_reference: input.refund_reference,
    invoice_reference: input.invoice_reference,
    trx_ref: input.trx_ref,
    amount: amountJson(input.amount_units, input.currency),
    currency: input.currency,
    address: input.address,
    reason: input.reason,
  });
  const text = await exchange(url, body, idempotency_key, options, (kind, detail, status_code) => new UpstreamRefundError(kind, detail, status_code));
  return outcomeOf(text, input);
}

// ---- Payouts ----

/** Field limits of a payout request, its answer and its notification (characters). */
export const PAYOUT_LIMITS = { payout_reference: 64, payout_trx_ref: 255, address: 128, memo: 255 } as const;

/**
 * A payout from a merchant's wallet to a crypto address, as the upstream is asked for it: `POST {UPSTREAM_PAYOUT_URL}`
 * with `Idempotency-Key` and `X-Notify-Url`, body `{"payout_reference", "amount", "currency": "USDT", "address",
 * "memo"}`; answer 200/201/202 `{"payout_reference", "status": "succeeded" | "failed" | "pending", "payout_trx_ref"?,
 * "failure_reason"?, "amount"?, "currency"?}`.
 */
export interface UpstreamPayoutRequest {
  /** The platform's reference of the payout (also the PayoutWorkflow's id). */
  payout_reference: string;
  /** Minor units of `currency` (USDT: 6 decimals), > 0: what the destination receives (the fee stays on the platform). */
  amount_units: bigint;
  currency: 'USDT';
  /** The destination address (TRON, checked by the payout service). */
  address: string;
  /** ≤ 255 characters, no control characters; may be empty. */
  memo: string;
}

export type UpstreamPayoutOutcome = { status: 'succeeded'; payout_trx_ref: string } | { status: 'failed'; failure_reason: string } | { status: 'pending' };

/** A payout request without an outcome: the kinds and `retryable` of UpstreamRefundError (a 4xx is a refusal for good). */
export class UpstreamPayoutError extends Error {
  readonly retryable: boolean;

  constructor(
    readonly kind: UpstreamRefundErrorKind,
    detail: string,
    readonly status_code?: number,
  ) {
    super(`upstream payout ${kind}: ${detail}`);
    this.name = 'UpstreamPayoutError';
    this.retryable = kind !== 'refused' || (status_code !== undefined && RETRYABLE_REFUSALS.has(status_code));
  }
}

function checkPayoutRequest(input: UpstreamPayoutRequest, idempotency_key: string): void {
  const problems: string[] = [];
  if (!IDEMPOTENCY_KEY_PATTERN.test(idempotency_key) || idempotency_key.length > REFUND_LIMITS.idempotency_key) problems.push('idempotency_key');
  if (typeof input.amount_units !== 'bigint' || input.amount_units <= 0n) problems.push('amount_units');
  if (input.currency !== 'USDT') problems.push('currency');
  if (!isReference(input.payout_reference, PAYOUT_LIMITS.payout_reference)) problems.push('payout_reference');
  if (!isReference(input.address, PAYOUT_LIMITS.address)) problems.push('address');
  if (typeof input.memo !== 'string' || [...input.memo].length > PAYOUT_LIMITS.memo || hasControlCharacters(input.memo)) problems.push('memo');
  if (problems.length > 0) throw new TypeError(`invalid upstream payout request: ${problems.join(', ')}`);
}

/** The outcome of a 2xx answer to `input`. @throws UpstreamPayoutError malformed */
function payoutOutcomeOf(text: string, input: UpstreamPayoutRequest): UpstreamPayoutOutcome {
  const answer = checkedAnswer(text, 'payout_reference', { reference: input.payout_reference, currency: input.currency, amount_units: input.amount_units }, (detail) => new UpstreamPayoutError('malformed', detail));
  switch (answer.status) {
    case 'succeeded':
      if (!isReference(answer.payout_trx_ref, PAYOUT_LIMITS.payout_trx_ref)) throw new UpstreamPayoutError('malformed', 'a succeeded answer without payout_trx_ref');
      return { status: 'succeeded', payout_trx_ref: answer.payout_trx_ref };
    case 'failed':
      return { status: 'failed', failure_reason: providerText(answer.failure_reason) || 'refused by the provider' };
    case 'pending':
      return { status: 'pending' };
    default:
      throw new UpstreamPayoutError('malformed', 'answer has no known status');
  }
}

/**
 * Requests a payout from the upstream provider at `url` (UPSTREAM_PAYOUT_URL) through `upstreamAgent`.
 * @param idempotency_key the payout's key (printable ASCII, ≤ 255 characters), sent as `Idempotency-Key`
 * @throws UpstreamPayoutError unreachable | refused | server_error | malformed (see its `retryable`)
 * @throws TypeError when the request itself is invalid (nothing was sent)
 */
export async function requestUpstreamPayout(url: string, input: UpstreamPayoutRequest, idempotency_key: string, options: UpstreamRefundOptions): Promise<UpstreamPayoutOutcome> {
  checkPayoutRequest(input, idempotency_key);
  const body = stringifyJson({
    payout_reference: input.payout_reference,
    amount: amountJson(input.amount_units, input.currency),
    currency: input.currency,
    address: input.address,
    memo: input.memo,
  });
  const text = await exchange(url, body, idempotency_key, options, (kind, detail, status_code) => new UpstreamPayoutError(kind, detail, status_code));
  return payoutOutcomeOf(text, input);
}

/**
 * The port over the configured upstream: UPSTREAM_REFUND_URL and UPSTREAM_PAYOUT_URL (or their defaults under
 * UPSTREAM_PAYIN_URL), UPSTREAM_API_KEY, UPSTREAM_TIMEOUT_SECONDS, notifications to
 * `{PUBLIC_BASE_URL}/api/v1/upstream/notifications`.
 * @returns undefined when no upstream is configured
 */
export function upstreamFromConfig(
  config: Pick<Config, 'UPSTREAM_PAYIN_URL' | 'UPSTREAM_REFUND_URL' | 'UPSTREAM_PAYOUT_URL' | 'UPSTREAM_API_KEY' | 'UPSTREAM_TIMEOUT_SECONDS' | 'PUBLIC_BASE_URL'>,
): Upstream | undefined {
  const url = upstreamRefundUrl(config);
  if (!url) return undefined;
  // Set with UPSTREAM_REFUND_URL alone (no UPSTREAM_PAYIN_URL to derive it from): payouts wait until it is configured.
  const payout_url = upstreamPayoutUrl(config);
  const options: UpstreamRefundOptions = {
    api_key: config.UPSTREAM_API_KEY,
    notify_url: `${config.PUBLIC_BASE_URL}/api/v1/upstream/notifications`,
    timeout_seconds: config.UPSTREAM_TIMEOUT_SECONDS,
  };
  return {
    refund: (input, idempotency_key) => requestUpstreamRefund(url, input, idempotency_key, options),
    payout: (input, idempotency_key) =>
      payout_url ? requestUpstreamPayout(payout_url, input, idempotency_key, options) : Promise.reject(new UpstreamPayoutError('unreachable', 'no UPSTREAM_PAYOUT_URL configured')),
  };
}
