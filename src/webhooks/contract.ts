/**
 * Outbound webhooks' contract (platform decisions §5, docs/webhooks.md): the WebhookDeliveryWorkflow (one per event,
 * id = webhook id, the X-Webhook-Id), which waits for its turn (no earlier webhook of its subject pending) before its
 * first attempt, and its activities. Imports nothing but `@temporalio/workflow`.
 */
import { defineSignal } from '@temporalio/workflow';

/** Checks of a waiting run's turn before it continues as new (keeps a long wait's history short). */
export const TURN_CHECKS_PER_RUN = 200;

/** How the WebhookDeliveryWorkflow retries, in seconds (exponential backoff, factor 2). */
export interface WebhookRetrySettings {
  initial_seconds: number;
  max_interval_seconds: number;
  window_seconds: number;
  /**
   * 0 to 1: each wait is its backoff times a random factor in [1 − jitter/2, 1 + jitter/2], so endpoints that failed
   * together are not retried together (absent: 0, runs started before jitter existed).
   */
  jitter?: number;
}

export interface WebhookDeliveryInput {
  webhook_id: string;
  /** The retry schedule (WEBHOOK_RETRY_*_SECONDS when the run was started). */
  retry: WebhookRetrySettings;
  /**
   * The first attempt was made before the workflow started (right after the event committed, when no earlier webhook
   * of its subject was pending) and failed: the run begins with the first backoff delay instead of its turn and an
   * attempt. Absent: the run waits for its turn, then makes the first attempt itself.
   */
  first_attempt_failed?: boolean;
  /** Checks of its turn before the run continues as new (default TURN_CHECKS_PER_RUN; the workflow tests take fewer). */
  turn_checks_per_run?: number;
}

export interface WebhookDeliveryResult {
  delivered: boolean;
  attempts: number;
}

export interface WebhookAttemptInput {
  webhook_id: string;
  /** How long the run waits before the next attempt if this one fails (recorded with it); null: none follows. */
  next_retry_seconds: number | null;
}

export interface WebhookAttemptResult {
  delivered: boolean;
  /** This attempt's number (X-Webhook-Attempt), 1, 2, … across every run of the event. */
  attempt: number;
}

/**
 * The wait after a failed attempt (seconds): `initial_seconds` after the first, then doubling, capped at
 * `max_interval_seconds`; null once waiting it would pass `window_seconds` of waiting in all (the event is given up).
 * `previous`: the wait before the attempt that failed (undefined after the first); `waited`: seconds waited so far.
 */
export function retryDelaySeconds(retry: WebhookRetrySettings, previous: number | undefined, waited: number): number | null {
  const delay = previous === undefined ? retry.initial_seconds : Math.min(previous * 2, retry.max_interval_seconds);
  return waited + delay > retry.window_seconds ? null : delay;
}

/**
 * A wait with its jitter: `delay` times 1 − jitter/2 + jitter × `random` (`random` in [0, 1): the workflow's own
 * Math.random, replayed identically).
 */
export function withJitter(delay: number, jitter: number, random: number): number {
  return delay * (1 - jitter / 2 + jitter * random);
}

/**
 * Sent to a waiting delivery run when the webhook before it (same merchant and subject, lower event seq) was
 * delivered or given up: its turn may have come (it checks). Carries no authority: a run checks the records.
 */
export const predecessorSettledSignal = defineSignal('predecessorSettled');

/** The WebhookDeliveryWorkflow's activities (src/webhooks/index.ts). */
export interface WebhookDeliveryActivities {
  /**
   * The pending webhook delivered just before this one (same merchant and subject, the greatest lower event seq),
   * or null when none is pending: then it is this webhook's turn.
   */
  pendingPredecessor(input: { webhook_id: string }): Promise<{ webhook_id: string | null }>;
  /**
   * One delivery attempt: POST the recorded body, signed with the merchant's HMAC secret, and record the attempt
   * (time, status code, latency, error, next retry). Any 2xx within WEBHOOK_TIMEOUT_SECONDS is delivered; then the
   * next pending webhook of its subject is told its turn may have come.
   */
  attemptWebhookDelivery(input: WebhookAttemptInput): Promise<WebhookAttemptResult>;
  /**
   * Marks the event failed (given up) once its retry window has passed without a 2xx, with its `webhook.failed`
   * event, and tells the next pending webhook of its subject.
   */
  markWebhookFailed(input: { webhook_id: string }): Promise<void>;
}

/** Every reason the webhook capability fails with (`DomainErrorKind` of src/errors.ts). */
export const WEBHOOK_REASONS = {
  /** No webhook event with this id. */
  WEBHOOK_NOT_FOUND: 'not_found',
} as const;
export type WebhookReason = keyof typeof WEBHOOK_REASONS;
