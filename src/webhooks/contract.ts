/**
 * Outbound webhooks' contract (platform decisions §5): the WebhookDeliveryWorkflow (one per event, id = webhook id,
 * the X-Webhook-Id) and its activities. Imports nothing but `@temporalio/workflow`.
 */

/** How the WebhookDeliveryWorkflow retries, in seconds (exponential backoff, factor 2). */
export interface WebhookRetrySettings {
  initial_seconds: number;
  max_interval_seconds: number;
  window_seconds: number;
}

export interface WebhookDeliveryInput {
  webhook_id: string;
  /**
   * The first attempt was made before the workflow started (right after the event committed) and failed: the run
   * begins with the first backoff delay instead of an attempt. Absent: the run makes the first attempt itself.
   */
  first_attempt_failed?: boolean;
  /** With `first_attempt_failed`: the retry settings the inline attempt answered. */
  retry?: WebhookRetrySettings;
}

export interface WebhookDeliveryResult {
  delivered: boolean;
  attempts: number;
}

export interface WebhookAttemptResult {
  delivered: boolean;
  /** This attempt's number (X-Webhook-Attempt), 1, 2, … across every run of the event. */
  attempt: number;
  retry: WebhookRetrySettings;
}

/** The WebhookDeliveryWorkflow's activities (src/webhooks/activities.ts). */
export interface WebhookDeliveryActivities {
  /**
   * One delivery attempt: POST the recorded body, signed with the merchant's HMAC secret, and record the attempt
   * (time, status code, latency, error). Any 2xx within WEBHOOK_TIMEOUT_SECONDS is delivered.
   */
  attemptWebhookDelivery(input: WebhookDeliveryInput): Promise<WebhookAttemptResult>;
  /** Marks the event failed once its retry window has passed without a 2xx. */
  markWebhookFailed(input: WebhookDeliveryInput): Promise<void>;
}

/** Every reason the webhook capability fails with (`DomainErrorKind` of src/errors.ts). */
export const WEBHOOK_REASONS = {
  /** No webhook event with this id. */
  WEBHOOK_NOT_FOUND: 'not_found',
} as const;
export type WebhookReason = keyof typeof WEBHOOK_REASONS;
