/**
 * The upstream provider's refund port (Area B, docs/refunds.md "Providers"): a refund of a settled payin requested
 * from the upstream crypto provider, and the signed notification by which the provider decides a refund it answered
 * `pending`. The RefundWorkflow's activities call `requestUpstreamRefund` (or a port from `upstreamRefundsFromConfig`)
 * and the notification route reads a refund notification with `openRefundNotification`.
 *
 * Request: `POST {UPSTREAM_REFUND_URL}` (default `<UPSTREAM_PAYIN_URL>/refunds`, src/config.ts upstreamRefundUrl)
 * with `Content-Type: application/json`, `Authorization: Bearer {UPSTREAM_API_KEY}`, `Idempotency-Key` and
 * `X-Notify-Url`, body `{"refund_reference", "invoice_reference", "trx_ref", "amount", "currency": "USDT", "address",
 * "reason"}` (`amount` an exact JSON number, `trx_ref` the payment refunded). Answer 200/201/202
 * `{"refund_reference", "status": "succeeded" | "failed" | "pending", "refund_trx_ref"?, "failure_reason"?,
 * "amount"?, "currency"?}`. The same Idempotency-Key answers the same refund, never a second one.
 *
 * Notification (the same route, `X-Upstream-Signature` and secret as the payin's, platform decisions §4): a body with
 * a `refund_reference` member is a refund notification, `{"refund_reference", "status": "refund_succeeded" |
 * "refund_failed", "amount", "currency": "USDT", "trx_ref"?, "refund_trx_ref"?, "failure_reason"?}`; every other body
 * is a payin notification (the route tells them apart: ./notifications.ts `upstreamNotificationKind`). The statuses
 * of the two kinds are disjoint as well.
 */
import type { Config } from '../../config';
import { upstreamRefundUrl } from '../../config';
import { verifyHmacSha256Hex } from '../../crypto/hmac';
import { invalidFields, reasonError, type FieldViolations } from '../../errors';
import { AmountError, amountJson, isLosslessNumber, parseJsonLossless, parseJsonObject, readAmount, stringifyJson } from '../../money';
import { hasControlCharacters } from '../../text';
import { PAYIN_REASONS } from './contract';
import { postToUpstream } from './upstream-client';

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

/** The upstream refund port: what the RefundWorkflow's activities are given. */
export interface UpstreamRefunds {
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

/** Reads the body up to MAX_ANSWER_BYTES. */
async function readAnswer(body: AsyncIterable<Uint8Array> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    length += chunk.length;
    if (length > MAX_ANSWER_BYTES) {
      body.destroy();
      throw new UpstreamRefundError('malformed', `answer longer than ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A provider's text (a failure reason): control characters replaced by spaces, at most REFUND_LIMITS.failure_reason characters. */
function providerText(value: unknown): string {
  if (typeof value !== 'string') return '';
  // eslint-disable-next-line no-control-regex
  return [...value.replace(/[\x00-\x1f\x7f]/g, ' ').trim()].slice(0, REFUND_LIMITS.failure_reason).join('');
}

/** A reference the provider gave: a non-empty string within `limit`, without control characters. */
function isReference(value: unknown, limit: number): value is string {
  return typeof value === 'string' && value !== '' && [...value].length <= limit && !hasControlCharacters(value);
}

/** The outcome of a 2xx answer to `input`. @throws UpstreamRefundError malformed */
function outcomeOf(text: string, input: UpstreamRefundRequest): UpstreamRefundOutcome {
  let answer: Record<string, unknown>;
  try {
    const parsed = parseJsonLossless(text);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
    answer = parsed as Record<string, unknown>;
  } catch {
    throw new UpstreamRefundError('malformed', 'answer is not a JSON object');
  }
  if (answer.refund_reference !== input.refund_reference) throw new UpstreamRefundError('malformed', 'answer names another refund_reference');
  if (answer.currency !== undefined && answer.currency !== input.currency) throw new UpstreamRefundError('malformed', 'answer names another currency');
  if (answer.amount !== undefined) {
    let answered: bigint | undefined;
    try {
      answered = isLosslessNumber(answer.amount) ? readAmount(answer.amount, input.currency) : undefined;
    } catch {
      answered = undefined;
    }
    if (answered !== input.amount_units) throw new UpstreamRefundError('malformed', 'answer names another amount');
  }
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
 * forwarding uses.
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
  let response;
  try {
    response = await postToUpstream(url, body, {
      api_key: options.api_key,
      timeout_seconds: options.timeout_seconds,
      headers: { 'idempotency-key': idempotency_key, 'x-notify-url': options.notify_url },
    });
  } catch (error) {
    throw new UpstreamRefundError('unreachable', describe(error));
  }
  const status = response.statusCode;
  if (status >= 400) {
    await response.body.dump().catch(() => undefined);
    throw new UpstreamRefundError(status >= 500 ? 'server_error' : 'refused', `HTTP ${status}`, status);
  }
  let text: string;
  try {
    text = await readAnswer(response.body);
  } catch (error) {
    if (error instanceof UpstreamRefundError) throw error;
    throw new UpstreamRefundError('unreachable', `reading the answer: ${describe(error)}`);
  }
  if (status !== 200 && status !== 201 && status !== 202) throw new UpstreamRefundError('malformed', `HTTP ${status}`, status);
  return outcomeOf(text, input);
}

/**
 * The port over the configured upstream: UPSTREAM_REFUND_URL (or its default), UPSTREAM_API_KEY,
 * UPSTREAM_TIMEOUT_SECONDS, notifications to `{PUBLIC_BASE_URL}/api/v1/upstream/notifications`.
 * @returns undefined when no upstream is configured
 */
export function upstreamRefundsFromConfig(
  config: Pick<Config, 'UPSTREAM_PAYIN_URL' | 'UPSTREAM_REFUND_URL' | 'UPSTREAM_API_KEY' | 'UPSTREAM_TIMEOUT_SECONDS' | 'PUBLIC_BASE_URL'>,
): UpstreamRefunds | undefined {
  const url = upstreamRefundUrl(config);
  if (!url) return undefined;
  const options: UpstreamRefundOptions = {
    api_key: config.UPSTREAM_API_KEY,
    notify_url: `${config.PUBLIC_BASE_URL}/api/v1/upstream/notifications`,
    timeout_seconds: config.UPSTREAM_TIMEOUT_SECONDS,
  };
  return { refund: (input, idempotency_key) => requestUpstreamRefund(url, input, idempotency_key, options) };
}

/** A refund notification's fields, read from verified bytes. */
export interface UpstreamRefundNotification {
  refund_reference: string;
  status: 'refund_succeeded' | 'refund_failed';
  /** Minor units of USDT, exact (the JSON number read without a float). */
  amount_units: bigint;
  currency: 'USDT';
  /** The payment refunded, when the provider names it. */
  trx_ref?: string;
  /** The refund's own transaction reference: always present on `refund_succeeded`. */
  refund_trx_ref?: string;
  /** On `refund_failed`: the provider's reason (bounded, control characters replaced), possibly empty. */
  failure_reason?: string;
}

function parseObject(signed_body: Uint8Array): Record<string, unknown> | undefined {
  return parseJsonObject(Buffer.from(signed_body).toString('utf8'));
}

/** Checks an optional reference field; records its problem in `fields`. */
function optionalReference(body: Record<string, unknown>, field: 'trx_ref' | 'refund_trx_ref', fields: FieldViolations): string | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (!isReference(value, REFUND_LIMITS[field])) fields[field] = ['invalid'];
  return value as string;
}

/**
 * Reads a refund notification from its verified bytes, field by field, before anything is recorded.
 * @throws DomainError VALIDATION_FAILED (every failing field: `body`, `refund_reference`, `status`, `amount` with
 *   the money module's problem, `currency`, `trx_ref`, `refund_trx_ref`, `failure_reason`)
 */
export function readRefundNotification(signed_body: Uint8Array): UpstreamRefundNotification {
  const body = parseObject(signed_body);
  if (!body) throw invalidFields({ body: ['The request body must be a JSON object.'] });
  const fields: FieldViolations = {};
  const refund_reference = body.refund_reference;
  if (refund_reference === undefined || refund_reference === null || refund_reference === '') fields.refund_reference = ['required'];
  else if (!isReference(refund_reference, REFUND_LIMITS.refund_reference)) fields.refund_reference = ['invalid'];
  const status = body.status;
  if (status !== 'refund_succeeded' && status !== 'refund_failed') fields.status = ['invalid'];
  let amount_units = 0n;
  if (!isLosslessNumber(body.amount)) {
    fields.amount = ['not_a_number'];
  } else {
    try {
      amount_units = readAmount(body.amount, 'USDT');
    } catch (error) {
      if (!(error instanceof AmountError)) throw error;
      fields.amount = [error.problem];
    }
  }
  if (body.currency !== undefined && body.currency !== 'USDT') fields.currency = ['invalid'];
  const trx_ref = optionalReference(body, 'trx_ref', fields);
  const refund_trx_ref = optionalReference(body, 'refund_trx_ref', fields);
  if (status === 'refund_succeeded' && refund_trx_ref === undefined) fields.refund_trx_ref = ['required'];
  if (body.failure_reason !== undefined && typeof body.failure_reason !== 'string') fields.failure_reason = ['invalid'];
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
  return {
    refund_reference: refund_reference as string,
    status: status as UpstreamRefundNotification['status'],
    amount_units,
    currency: 'USDT',
    ...(trx_ref !== undefined ? { trx_ref } : {}),
    ...(refund_trx_ref !== undefined ? { refund_trx_ref } : {}),
    ...(status === 'refund_failed' ? { failure_reason: providerText(body.failure_reason) } : {}),
  };
}

/**
 * The notification door for a refund: verifies `X-Upstream-Signature` (hex HMAC-SHA256 of the raw bytes under
 * UPSTREAM_WEBHOOK_SECRET, compared in constant time) before a single field is read, then reads the body.
 * @param secret UPSTREAM_WEBHOOK_SECRET; unset refuses every notification
 * @throws DomainError UPSTREAM_SIGNATURE_INVALID (PAYIN_REASONS), then VALIDATION_FAILED (readRefundNotification)
 */
export function openRefundNotification(secret: string | undefined, signed_body: Uint8Array, signature: string | undefined | null): UpstreamRefundNotification {
  if (!secret || !verifyHmacSha256Hex(secret, signed_body, signature)) {
    throw reasonError(PAYIN_REASONS, 'UPSTREAM_SIGNATURE_INVALID', 'invalid upstream signature');
  }
  return readRefundNotification(signed_body);
}

/**
 * Where the notification route hands a verified refund notification (the refund flow's, wired by the composition
 * root): records it as the decision's authority and tells the refund's workflow.
 * @returns whether this notification was recorded now, the refunded payin's invoice_reference ('' for an unknown
 *   refund) and the decision recorded
 */
export type RefundNotificationReceiver = (
  notification: UpstreamRefundNotification,
  raw_body: string,
) => Promise<{ applied: boolean; invoice_reference: string; status: string }>;
