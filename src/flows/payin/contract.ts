/**
 * The payin flow's contract (Area B, payment-services-interface.md "Payin status", platform decisions §4, §5): what
 * the PayinWorkflow, its activities, the PayinService and the Area B façade share. Imports nothing but
 * `@temporalio/workflow`, so the workflow bundle can use it.
 *
 * Lifetime: B1 records the payin (status `waiting`) with a workflow-start outbox row; the PayinWorkflow (id =
 * invoice_reference) waits for the upstream's notification (the `notify` Update, sent with Update-with-Start; the
 * `settled` and `closed` signals, sent with signal-with-start when the Update did not get through in time) or its
 * expiry timer, applies the transition through one local activity, and delivers the resulting event's webhook.
 */
import { defineSignal, defineUpdate } from '@temporalio/workflow';

/**
 * Every reason the PayinService, the PayinWorkflow and its activities fail with, and its kind (`DomainErrorKind`
 * of src/errors.ts).
 */
export const PAYIN_REASONS = {
  /** The merchant's account is suspended. */
  MERCHANT_SUSPENDED: 'permission_denied',
  /** Another live payin of the merchant holds this out_trade_no. */
  OUT_TRADE_NO_TAKEN: 'already_exists',
  /** No upstream payin server is configured. */
  UPSTREAM_NOT_CONFIGURED: 'failed_precondition',
  /** The upstream did not answer, or answered other than the contract's 200. */
  UPSTREAM_UNAVAILABLE: 'unavailable',
  /** The payin could not be recorded after the upstream accepted it. */
  PAYIN_FAILED: 'internal',
  /** No payin with this out_trade_no or invoice_reference. */
  PAYIN_NOT_FOUND: 'not_found',
  /**
   * A settlement with no applied upstream notification of that amount and trx_ref: workflows never trust an amount
   * a signal carries, so the settlement moves nothing.
   */
  SETTLEMENT_NOT_AUTHORIZED: 'failed_precondition',
  /**
   * A close with no applied upstream close notification of the payin: a `closed` signal or a close `notify` Update
   * sent straight to Temporal closes nothing.
   */
  CLOSE_NOT_AUTHORIZED: 'failed_precondition',
  /** A notification's X-Upstream-Signature does not match its body. */
  UPSTREAM_SIGNATURE_INVALID: 'unauthenticated',
} as const;
export type PayinReason = keyof typeof PAYIN_REASONS;

/** The payer's address an upstream success notification may report (`payer_address`): TRON, `T` and 33 base58 characters. */
export const PAYER_ADDRESS = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;

/** Field limits of an upstream notification (platform decisions §4; the columns are at least this wide). */
export const NOTIFICATION_LIMITS = {
  invoice_reference: 32,
  trx_ref: 255,
} as const;

/** A payin's lifecycle; `failed` = the upstream refused it (kept for audit, does not hold its out_trade_no). */
export type PayinStatus = 'waiting' | 'success' | 'expired' | 'close' | 'failed';

/**
 * The webhook events of a payin (platform decisions §5). `payin.additional_payment` announces money received for a
 * payin that was already settled (a second payment, or another amount): it is credited too, never dropped.
 */
export type PayinEvent = 'payin.success' | 'payin.expired' | 'payin.closed' | 'payin.additional_payment';

export interface PayinWorkflowInput {
  invoice_reference: string;
  /** PAYIN_TTL_SECONDS at creation: the expiry timer when `expires_at` is absent (a payin row without one). */
  ttl_seconds: number;
  /**
   * ISO 8601 instant the payin expires (its creation + PAYIN_TTL_SECONDS). The timer runs to it, so a workflow
   * started late by the outbox dispatcher still expires the payin on time.
   */
  expires_at?: string;
}

export interface PayinWorkflowResult {
  outcome: string;
  webhook_ids: string[];
}

/** The upstream reported the payment (amount in USDT minor units, as a decimal string). */
export interface SettledSignalInput {
  amount_units: string;
  trx_ref: string;
}

export const settledSignal = defineSignal<[SettledSignalInput]>('settled');
/** The upstream closed (cancelled) the payin. */
export const closedSignal = defineSignal<[{ trx_ref: string }]>('closed');

/** A recorded upstream notification, as the PayinService hands it to the run (amount in USDT minor units). */
export type PayinNotificationInput = ({ status: 'success' } & SettledSignalInput) | { status: 'close'; trx_ref: string };

/** What the run did with one notification. */
export interface PayinNotificationOutcome {
  /** The webhook event it produced (and whose first attempt was made or whose delivery workflow started); null: none. */
  webhook_id: string | null;
  /**
   * A settlement or close the activity refused for good (no applied notification of it: SETTLEMENT_NOT_AUTHORIZED,
   * CLOSE_NOT_AUTHORIZED).
   */
  refused?: PayinReason;
}

/**
 * The upstream's notification, applied by the run before it answers: the PayinService sends it with
 * Update-with-Start (one Temporal call that starts a new run when none is open, e.g. a late success after expiry),
 * so its answer to the upstream means "credited" (or "closed") instead of "queued", and a burst of notifications
 * waits at the door instead of queueing inside Temporal. The `settled`/`closed` signals do the same without an answer.
 */
export const notifyUpdate = defineUpdate<PayinNotificationOutcome, [PayinNotificationInput]>('notify');

/**
 * The ledger idempotency key of a payin's settlement: a retried settlement never credits twice. Every ledger key of
 * a payin starts with its invoice_reference (`<reference>:<step>`, docs/architecture.md "One business key").
 */
export function payinSettlementIdempotencyKey(invoice_reference: string): string {
  return `${invoice_reference}:settle`;
}

/**
 * The ledger idempotency key of a payment received after the payin was settled (one per upstream payment). The
 * amount (minor units) is written canonically, so no other spelling of one recorded amount ('06000000') names
 * another key.
 * @throws SyntaxError when `amount_units` is not an integer
 */
export function additionalPaymentIdempotencyKey(invoice_reference: string, payment: { amount_units: string | bigint; trx_ref: string }): string {
  return `${invoice_reference}:additional:${payment.trx_ref}:${BigInt(payment.amount_units).toString()}`;
}

/** Result of a payin transition: the webhook event to deliver, or null when nothing changed. */
export interface PayinTransition {
  webhook_id: string | null;
  /**
   * Refunds the merchant's outcome policy recorded with a settlement (held; docs/refunds.md "Outcome policies"),
   * whose RefundWorkflows the run starts (`startRefunds`) once the transaction committed. Absent: none.
   */
  refund_references?: string[];
}

/** The PayinWorkflow's activities (src/flows/payin/activities.ts); local activities, short database transactions. */
export interface PayinActivities {
  /**
   * Credits the paid amount to the merchant's wallet and charges the fee in one ledger transaction, marks the
   * payin success (late when it had expired or closed) and records the payin.success webhook. Repeats return the
   * same webhook.
   */
  settlePayin(input: { invoice_reference: string } & SettledSignalInput): Promise<PayinTransition>;
  /** waiting → expired and the payin.expired webhook; anything else: no change. */
  expirePayin(input: { invoice_reference: string }): Promise<PayinTransition>;
  /**
   * waiting → close and the payin.closed webhook, on an applied upstream close notification of the payin (of this
   * trx_ref when the message names one); anything else: no change.
   * @throws ApplicationFailure CLOSE_NOT_AUTHORIZED (non-retryable) without such a notification
   */
  closePayin(input: { invoice_reference: string; trx_ref?: string }): Promise<PayinTransition>;
  /**
   * Delivers each recorded webhook event: the first attempt right away, and the durable WebhookDeliveryWorkflow
   * (once per event, ever) only for an event whose first attempt failed (src/webhooks `deliverWebhooks`).
   */
  startWebhookDeliveries(input: { webhook_ids: string[] }): Promise<void>;
  /**
   * Starts the RefundWorkflow of each refund an outcome policy recorded (by reference; one already started or
   * decided is left alone). Reconciliation starts a held refund left without a workflow too.
   */
  startRefunds(input: { refund_references: string[] }): Promise<void>;
}
