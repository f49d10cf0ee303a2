/**
 * The sandbox upstream's refunds (test mode; docs/refunds.md "Providers"): how `POST /payins/refunds` and
 * `POST /sandbox/refunds/{refund_reference}/decide` of src/sandbox/upstream.ts behave, as a real provider would.
 *
 * The refund's address decides its outcome (SANDBOX_REFUND_ADDRESSES): any other well-formed address succeeds at
 * once. A pending refund is decided by a signed notification (`refund_succeeded` / `refund_failed`, X-Upstream-
 * Signature under UPSTREAM_WEBHOOK_SECRET) sent to the request's X-Notify-Url, after `decision_delay_seconds` for
 * the `late_*` addresses, or when the decide route is called. The same Idempotency-Key answers the same refund (its
 * outcome, or its decision once decided) and never refunds twice; the key with other parameters, or the
 * refund_reference under another key, is refused (422). A refund of a payin this sandbox was paid for is refused
 * (`failed`) when the payin's refunds would exceed what was paid; a payin it does not know (a restarted sandbox) is
 * refunded without that check.
 */
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { AmountError, amountJson, isLosslessNumber, parseJsonLossless, readAmount, stringifyJson } from '../money';
import { hasControlCharacters } from '../text';
import { sendSignedDecision, type SentDecision } from './signed-decision';

/**
 * Test addresses with a fixed outcome (TRON addresses, checksums valid). Any other address of the TRON form
 * (`T` + 33 base58 characters) succeeds at once.
 */
export const SANDBOX_REFUND_ADDRESSES = {
  /** Answered `failed` ("The refund address rejected the transfer."). */
  fails: 'TH2XmMR47SdwtruqTerPwhWbzNBeM9Dza6',
  /** Answered `pending`; decided only on the decide route. */
  pending: 'TEd727yV6hAMzpMFFGV1Qz7UxRrpsq3Rsn',
  /** Answered `pending`; `refund_succeeded` is notified after the decision delay (or on the decide route). */
  late_success: 'TLud3RAsnU2YVUNbFeWiDUVD13akQjx3E5',
  /** Answered `pending`; `refund_failed` is notified after the decision delay (or on the decide route). */
  late_failure: 'TTudsuMEmLTDj2nciXpKEwSw6oF9soQPox',
  /**
   * The first request under an Idempotency-Key answers 503 and records nothing (a provider briefly down); the next
   * one under that key succeeds at once: a retry with the same key gets the refund, once.
   */
  unavailable_once: 'TYxy8DmZ2qJbNUtFF2wQkDCy3L9wAkpV8m',
  /** An ordinary address: succeeds at once. */
  succeeds: 'TYc5kF5MQbAravbQy1ULgaP5Wt9PHN64jG',
} as const;

export const REFUND_FAILURE_REASON = 'The refund address rejected the transfer.';
/** The failure reason of a refund decided `failed` late. */
export const LATE_REFUND_FAILURE_REASON = 'The refund transfer was not confirmed on chain.';
export const OVER_REFUND_REASON = 'The refunds of this payment would exceed what was paid.';

/** Default seconds before a `late_*` refund is decided. */
export const DEFAULT_REFUND_DECISION_DELAY_SECONDS = 5;

const TRON_ADDRESS = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;

export type SandboxRefundStatus = 'succeeded' | 'failed' | 'pending';

export interface SandboxRefund {
  refund_reference: string;
  idempotency_key: string;
  invoice_reference: string;
  trx_ref: string;
  amount_units: bigint;
  address: string;
  reason: string;
  notify_url: string;
  status: SandboxRefundStatus;
  refund_trx_ref?: string;
  failure_reason?: string;
  /** The request's parameters as one text: the same key with others is refused. */
  fingerprint: string;
}

/** A refund notification the sandbox sent, with the portal's answer (status 0: not delivered, `error` says why). */
export interface SandboxRefundNotification extends SentDecision {
  refund_reference: string;
}

export interface SandboxRefunds {
  /** Refunds by refund_reference. */
  refunds: ReadonlyMap<string, SandboxRefund>;
  notifications: SandboxRefundNotification[];
  /** `POST /payins/refunds` after its credentials were checked. */
  create(headers: http.IncomingHttpHeaders, body: string): { status: number; body: string };
  /** `POST /sandbox/refunds/{refund_reference}/decide`. */
  decide(refund_reference: string, body: string): Promise<{ status: number; body: string }>;
  close(): void;
}

export interface SandboxRefundOptions {
  webhook_secret: string;
  /** Seconds before a `late_*` refund is decided; null: only on the decide route. */
  decision_delay_seconds?: number | null;
  /** What the sandbox received for a payin, in USDT units; undefined when it does not know the payin. */
  paidUnits(invoice_reference: string): bigint | undefined;
}

type Fields = Record<string, string[]>;

function text(body: Record<string, unknown>, field: string, limit: number, fields: Fields, required = true): string {
  const value = body[field];
  if (value === undefined || value === null || value === '') {
    if (required) fields[field] = ['required'];
    return '';
  }
  if (typeof value !== 'string' || [...value].length > limit || hasControlCharacters(value)) fields[field] = ['invalid'];
  return String(value);
}

function header(headers: http.IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return typeof value === 'string' ? value : '';
}

const json = (status: number, body: unknown) => ({ status, body: typeof body === 'string' ? body : stringifyJson(body) });

export function createSandboxRefunds(options: SandboxRefundOptions): SandboxRefunds {
  const byReference = new Map<string, SandboxRefund>();
  const byKey = new Map<string, SandboxRefund>();
  const notifications: SandboxRefundNotification[] = [];
  const timers = new Set<NodeJS.Timeout>();
  /** Keys whose first request to `unavailable_once` was answered 503. */
  const unavailableOnce = new Set<string>();
  const delay = options.decision_delay_seconds === undefined ? DEFAULT_REFUND_DECISION_DELAY_SECONDS : options.decision_delay_seconds;

  const answer = (refund: SandboxRefund) =>
    json(200, {
      refund_reference: refund.refund_reference,
      status: refund.status,
      amount: amountJson(refund.amount_units, 'USDT'),
      currency: 'USDT',
      ...(refund.refund_trx_ref ? { refund_trx_ref: refund.refund_trx_ref } : {}),
      ...(refund.status === 'failed' ? { failure_reason: refund.failure_reason } : {}),
    });

  /** Sends the refund's decision to its notify URL, signed; records the portal's answer. */
  async function notify(refund: SandboxRefund): Promise<{ status: number; body: string }> {
    const body = stringifyJson({
      refund_reference: refund.refund_reference,
      status: refund.status === 'succeeded' ? 'refund_succeeded' : 'refund_failed',
      amount: amountJson(refund.amount_units, 'USDT'),
      currency: 'USDT',
      trx_ref: refund.trx_ref,
      ...(refund.refund_trx_ref ? { refund_trx_ref: refund.refund_trx_ref } : {}),
      ...(refund.status === 'failed' ? { failure_reason: refund.failure_reason } : {}),
    });
    const sent: SandboxRefundNotification = { refund_reference: refund.refund_reference, body, status: 0, answer: '' };
    notifications.push(sent);
    return sendSignedDecision(refund.notify_url, options.webhook_secret, sent);
  }

  function settle(refund: SandboxRefund, status: 'succeeded' | 'failed', failure_reason: string): void {
    refund.status = status;
    if (status === 'succeeded') refund.refund_trx_ref = randomBytes(32).toString('hex');
    else refund.failure_reason = failure_reason;
  }

  function scheduleLateDecision(refund: SandboxRefund, status: 'succeeded' | 'failed'): void {
    if (delay === null) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (refund.status !== 'pending') return;
      settle(refund, status, LATE_REFUND_FAILURE_REASON);
      void notify(refund);
    }, delay * 1000);
    timer.unref();
    timers.add(timer);
  }

  /** Refunds of the payin that still count against what was paid (succeeded or undecided). */
  function refundedUnits(invoice_reference: string): bigint {
    let total = 0n;
    for (const refund of byReference.values()) {
      if (refund.invoice_reference === invoice_reference && refund.status !== 'failed') total += refund.amount_units;
    }
    return total;
  }

  function create(headers: http.IncomingHttpHeaders, raw: string) {
    const idempotency_key = header(headers, 'idempotency-key');
    const notify_url = header(headers, 'x-notify-url');
    if (!idempotency_key || !notify_url) return json(400, { error: 'Idempotency-Key and X-Notify-Url are required' });
    let body: Record<string, unknown>;
    try {
      const parsed = parseJsonLossless(raw);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      body = parsed as Record<string, unknown>;
    } catch {
      return json(400, { error: 'body is not a JSON object' });
    }
    const fields: Fields = {};
    const refund_reference = text(body, 'refund_reference', 64, fields);
    const invoice_reference = text(body, 'invoice_reference', 64, fields);
    const trx_ref = text(body, 'trx_ref', 255, fields);
    const address = text(body, 'address', 128, fields);
    if (!fields.address && !TRON_ADDRESS.test(address)) fields.address = ['not a TRON address'];
    const reason = text(body, 'reason', 255, fields, false);
    let amount_units = 0n;
    try {
      if (!isLosslessNumber(body.amount)) throw new AmountError('not_a_number', 'USDT');
      amount_units = readAmount(body.amount, 'USDT');
    } catch (error) {
      fields.amount = [(error as AmountError).problem ?? 'invalid'];
    }
    if (body.currency !== 'USDT') fields.currency = ['invalid'];
    if (Object.keys(fields).length > 0) return json(422, { error: 'invalid refund', fields });

    const fingerprint = JSON.stringify([refund_reference, invoice_reference, trx_ref, amount_units.toString(), address, reason]);
    const known = byKey.get(idempotency_key);
    if (known) return known.fingerprint === fingerprint ? answer(known) : json(422, { error: 'Idempotency-Key already used with other parameters' });
    if (byReference.has(refund_reference)) return json(422, { error: 'refund_reference already used with another Idempotency-Key' });
    if (address === SANDBOX_REFUND_ADDRESSES.unavailable_once && !unavailableOnce.has(idempotency_key)) {
      unavailableOnce.add(idempotency_key);
      return json(503, { error: 'temporarily unavailable' });
    }

    const refund: SandboxRefund = { refund_reference, idempotency_key, invoice_reference, trx_ref, amount_units, address, reason, notify_url, status: 'pending', fingerprint };
    const paid = options.paidUnits(invoice_reference);
    if (paid !== undefined && refundedUnits(invoice_reference) + amount_units > paid) settle(refund, 'failed', OVER_REFUND_REASON);
    else if (address === SANDBOX_REFUND_ADDRESSES.fails) settle(refund, 'failed', REFUND_FAILURE_REASON);
    else if (address === SANDBOX_REFUND_ADDRESSES.late_success) scheduleLateDecision(refund, 'succeeded');
    else if (address === SANDBOX_REFUND_ADDRESSES.late_failure) scheduleLateDecision(refund, 'failed');
    else if (address !== SANDBOX_REFUND_ADDRESSES.pending) settle(refund, 'succeeded', '');
    byKey.set(idempotency_key, refund);
    byReference.set(refund_reference, refund);
    return answer(refund);
  }

  async function decide(refund_reference: string, raw: string) {
    const refund = byReference.get(refund_reference);
    if (!refund) return json(404, { error: 'unknown refund_reference' });
    let status: unknown;
    try {
      status = (parseJsonLossless(raw || '{}') as { status?: unknown }).status;
    } catch {
      return json(400, { error: 'body is not JSON' });
    }
    if (status !== 'succeeded' && status !== 'failed') return json(400, { error: 'status must be "succeeded" or "failed"' });
    if (refund.status === 'pending') settle(refund, status, LATE_REFUND_FAILURE_REASON);
    else if (refund.status !== status) return json(409, { error: `already ${refund.status}` });
    // Decided now, or again with the same decision: the portal is notified (again, with the same body).
    return notify(refund);
  }

  return {
    refunds: byReference,
    notifications,
    create,
    decide,
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
