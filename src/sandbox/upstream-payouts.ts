/**
 * The sandbox upstream's payouts (test mode; docs/payouts.md "Providers"): how `POST /payins/payouts` and
 * `POST /sandbox/payouts/{payout_reference}/decide` of src/sandbox/upstream.ts behave, as a real provider would.
 *
 * The destination address decides the outcome (SANDBOX_PAYOUT_ADDRESSES); any other well-formed TRON address succeeds
 * at once. A pending payout is decided by a signed notification (`payout_succeeded` / `payout_failed`,
 * X-Upstream-Signature under UPSTREAM_WEBHOOK_SECRET) sent to the request's X-Notify-Url, after
 * `decision_delay_seconds` for the `late_*` addresses, or when the decide route is called. The same Idempotency-Key
 * answers the same payout and never pays twice; the key with other parameters, or the payout_reference under another
 * key, is refused (422).
 */
import { randomBytes } from 'node:crypto';
import type http from 'node:http';
import { AmountError, amountJson, isLosslessNumber, parseJsonLossless, readAmount, stringifyJson } from '../money';
import { hasControlCharacters } from '../text';
import { sendSignedDecision, type SentDecision } from './signed-decision';

/** Test addresses with a fixed outcome (TRON addresses, checksums valid). */
export const SANDBOX_PAYOUT_ADDRESSES = {
  /** Answered `failed` ("The destination rejected the transfer."). */
  fails: 'TTtmHTBkLg9DYNHUZE5ipRF287eeDFypjf',
  /** Refused with 422 (an address the provider does not send to): a refusal for good. */
  rejected: 'TWkLtM96PMtW3EsX4driBfuvkXR9mM9qdB',
  /** Answered `pending`; decided only on the decide route. */
  pending: 'TAi85uzd1NN73YmUSmfuXEC8XUeiyjFAqq',
  /** Answered `pending`; `payout_succeeded` is notified after the decision delay (or on the decide route). */
  late_success: 'TMPmjG7FhoWNsLcMaHxxSSes8z8GZZprei',
  /** Answered `pending`; `payout_failed` is notified after the decision delay (or on the decide route). */
  late_failure: 'TYwHCikh2gYiPJ8rpiwz9UjXZ5tCGd5RYk',
  /** The first request under an Idempotency-Key answers 503 and records nothing; the next one succeeds at once. */
  unavailable_once: 'THtCufGx762ySdmUXYUJv24yncCD2EspgP',
  /** An ordinary address: succeeds at once. */
  succeeds: 'TBCfDME9Ay3epGBPhwHcf9Epo42CsFtsBq',
} as const;

export const PAYOUT_FAILURE_REASON = 'The destination rejected the transfer.';
export const LATE_PAYOUT_FAILURE_REASON = 'The payout transfer was not confirmed on chain.';
/** Default seconds before a `late_*` payout is decided. */
export const DEFAULT_PAYOUT_DECISION_DELAY_SECONDS = 5;

const TRON_ADDRESS = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;

export interface SandboxPayout {
  payout_reference: string;
  idempotency_key: string;
  amount_units: bigint;
  address: string;
  memo: string;
  notify_url: string;
  status: 'succeeded' | 'failed' | 'pending';
  payout_trx_ref?: string;
  failure_reason?: string;
  fingerprint: string;
}

export interface SandboxPayoutNotification extends SentDecision {
  payout_reference: string;
}

export interface SandboxPayouts {
  payouts: ReadonlyMap<string, SandboxPayout>;
  notifications: SandboxPayoutNotification[];
  /** Requests by Idempotency-Key answered (a retry counts again): how often the provider was asked. */
  requests: number;
  create(headers: http.IncomingHttpHeaders, body: string): { status: number; body: string };
  decide(payout_reference: string, body: string): Promise<{ status: number; body: string }>;
  close(): void;
}

const json = (status: number, body: unknown) => ({ status, body: typeof body === 'string' ? body : stringifyJson(body) });

function header(headers: http.IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return typeof value === 'string' ? value : '';
}

export function createSandboxPayouts(options: { webhook_secret: string; decision_delay_seconds?: number | null }): SandboxPayouts {
  const byReference = new Map<string, SandboxPayout>();
  const byKey = new Map<string, SandboxPayout>();
  const notifications: SandboxPayoutNotification[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const unavailableOnce = new Set<string>();
  const delay = options.decision_delay_seconds === undefined ? DEFAULT_PAYOUT_DECISION_DELAY_SECONDS : options.decision_delay_seconds;

  const answer = (payout: SandboxPayout) =>
    json(200, {
      payout_reference: payout.payout_reference,
      status: payout.status,
      amount: amountJson(payout.amount_units, 'USDT'),
      currency: 'USDT',
      ...(payout.payout_trx_ref ? { payout_trx_ref: payout.payout_trx_ref } : {}),
      ...(payout.status === 'failed' ? { failure_reason: payout.failure_reason } : {}),
    });

  async function notify(payout: SandboxPayout): Promise<{ status: number; body: string }> {
    const body = stringifyJson({
      payout_reference: payout.payout_reference,
      status: payout.status === 'succeeded' ? 'payout_succeeded' : 'payout_failed',
      amount: amountJson(payout.amount_units, 'USDT'),
      currency: 'USDT',
      ...(payout.payout_trx_ref ? { payout_trx_ref: payout.payout_trx_ref } : {}),
      ...(payout.status === 'failed' ? { failure_reason: payout.failure_reason } : {}),
    });
    const sent: SandboxPayoutNotification = { payout_reference: payout.payout_reference, body, status: 0, answer: '' };
    notifications.push(sent);
    return sendSignedDecision(payout.notify_url, options.webhook_secret, sent);
  }

  function settle(payout: SandboxPayout, status: 'succeeded' | 'failed', failure_reason: string): void {
    payout.status = status;
    if (status === 'succeeded') payout.payout_trx_ref = randomBytes(32).toString('hex');
    else payout.failure_reason = failure_reason;
  }

  function scheduleLateDecision(payout: SandboxPayout, status: 'succeeded' | 'failed'): void {
    if (delay === null) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (payout.status !== 'pending') return;
      settle(payout, status, LATE_PAYOUT_FAILURE_REASON);
      void notify(payout);
    }, delay * 1000);
    timer.unref();
    timers.add(timer);
  }

  const state: SandboxPayouts = {
    payouts: byReference,
    notifications,
    requests: 0,
    create(headers, raw) {
      state.requests += 1;
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
      const fields: Record<string, string[]> = {};
      const payout_reference = typeof body.payout_reference === 'string' ? body.payout_reference : '';
      if (!payout_reference || payout_reference.length > 64 || hasControlCharacters(payout_reference)) fields.payout_reference = ['invalid'];
      const address = typeof body.address === 'string' ? body.address : '';
      if (!TRON_ADDRESS.test(address)) fields.address = ['not a TRON address'];
      const memo = typeof body.memo === 'string' ? body.memo : '';
      let amount_units = 0n;
      try {
        if (!isLosslessNumber(body.amount)) throw new AmountError('not_a_number', 'USDT');
        amount_units = readAmount(body.amount, 'USDT');
      } catch (error) {
        fields.amount = [(error as AmountError).problem ?? 'invalid'];
      }
      if (body.currency !== 'USDT') fields.currency = ['invalid'];
      if (Object.keys(fields).length > 0) return json(422, { error: 'invalid payout', fields });
      if (address === SANDBOX_PAYOUT_ADDRESSES.rejected) return json(422, { error: 'the provider does not send to this address', fields: { address: ['rejected'] } });

      const fingerprint = JSON.stringify([payout_reference, amount_units.toString(), address, memo]);
      const known = byKey.get(idempotency_key);
      if (known) return known.fingerprint === fingerprint ? answer(known) : json(422, { error: 'Idempotency-Key already used with other parameters' });
      if (byReference.has(payout_reference)) return json(422, { error: 'payout_reference already used with another Idempotency-Key' });
      if (address === SANDBOX_PAYOUT_ADDRESSES.unavailable_once && !unavailableOnce.has(idempotency_key)) {
        unavailableOnce.add(idempotency_key);
        return json(503, { error: 'temporarily unavailable' });
      }
      const payout: SandboxPayout = { payout_reference, idempotency_key, amount_units, address, memo, notify_url, status: 'pending', fingerprint };
      if (address === SANDBOX_PAYOUT_ADDRESSES.fails) settle(payout, 'failed', PAYOUT_FAILURE_REASON);
      else if (address === SANDBOX_PAYOUT_ADDRESSES.late_success) scheduleLateDecision(payout, 'succeeded');
      else if (address === SANDBOX_PAYOUT_ADDRESSES.late_failure) scheduleLateDecision(payout, 'failed');
      else if (address !== SANDBOX_PAYOUT_ADDRESSES.pending) settle(payout, 'succeeded', '');
      byKey.set(idempotency_key, payout);
      byReference.set(payout_reference, payout);
      return answer(payout);
    },
    async decide(payout_reference, raw) {
      const payout = byReference.get(payout_reference);
      if (!payout) return json(404, { error: 'unknown payout_reference' });
      let status: unknown;
      try {
        status = (parseJsonLossless(raw || '{}') as { status?: unknown }).status;
      } catch {
        return json(400, { error: 'body is not JSON' });
      }
      if (status !== 'succeeded' && status !== 'failed') return json(400, { error: 'status must be "succeeded" or "failed"' });
      if (payout.status === 'pending') settle(payout, status, LATE_PAYOUT_FAILURE_REASON);
      else if (payout.status !== status) return json(409, { error: `already ${payout.status}` });
      return notify(payout);
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
  return state;
}
