/**
 * A payment's timeline: one ordered list of what happened to a payment, from every source that saw it (the requests
 * received, the workflow's history, the provider's or acquirer's messages, the ledger postings, the events and the
 * webhook attempts). Each source answers entries of one shape, or a status saying why it has none, so a timeline
 * still shows the rest when one source is gone or cannot be reached.
 */

/** Where an entry comes from. */
export type TimelineSource = 'request' | 'workflow' | 'provider' | 'ledger' | 'event' | 'webhook';

/** One thing that happened to a payment. */
export interface TimelineEntry {
  /** When it happened: ISO 8601 in UTC with milliseconds (`2025-01-31T12:00:00.123Z`). */
  at: string;
  source: TimelineSource;
  /**
   * What happened, dotted: `workflow.started`, `timer.started`, `timer.fired`, `update.accepted`, `update.rejected`,
   * `update.completed`, `signal.received`, `activity.scheduled`, `activity.failed`, `activity.completed`,
   * `workflow.completed`, … (each source documents its kinds).
   */
  kind: string;
  /** One human line, never a secret or a sealed value. */
  summary: string;
  /** The facts behind the line, JSON-safe; amounts are decimal strings of minor units; secrets redacted. */
  details: Record<string, unknown>;
  /** The Temporal Web UI page of the workflow run (at its event where the UI has one), when TEMPORAL_UI_URL is set. */
  link?: string;
}

/**
 * A source that has no entries to give, and why: `gone` when what it reads no longer exists (a workflow history past
 * the namespace's retention), `unavailable` when it could not be read (Temporal unreachable within the deadline).
 * `reason` is one human line, safe for the payment's owner to read.
 */
export interface TimelineSourceStatus {
  source: TimelineSource;
  state: 'gone' | 'unavailable';
  reason: string;
}
