/**
 * The reconciliation flow's contract (docs/operations.md "Reconciliation"): what the ReconciliationWorkflow, its
 * activity, the AdminService `Reconcile` call and `payments admin reconcile` share. Imports nothing but
 * `@temporalio/workflow`.
 *
 * Reconciliation compares the records with the ledger and with the durable flows, and repairs (or, in a report-only
 * run, only lists) every inconsistency a fault can leave behind. Every repair goes through the same idempotent path
 * the flow itself uses, so a run repeated, or racing the flow it repairs, moves no money twice.
 */

/** What one inconsistency is. */
export type FindingKind =
  /** An upstream success notification applied to a payin whose payment is in no ledger transaction. */
  | 'notification_not_credited'
  /** An upstream close notification applied to a payin that is still waiting. */
  | 'close_not_applied'
  /** A notification recorded whose outcome was never decided (its process died in between). */
  | 'notification_undecided'
  /** A pre-transfer hold past its expiry with no live workflow to void it. */
  | 'hold_past_expiry'
  /** A deposit pending past its lifetime with no live workflow to close it. */
  | 'deposit_past_expiry'
  /** A completed deposit whose money is in no ledger transaction. */
  | 'deposit_not_credited'
  /** A webhook event neither delivered nor failed, with no live delivery workflow. */
  | 'webhook_stalled'
  /** A committed payin whose workflow start is still waiting in the outbox. */
  | 'outbox_lag'
  /** A ledger invariant broken (reported, never repaired automatically). */
  | 'ledger_imbalance'
  /** A refund still held (undecided) past its decision timeout. */
  | 'refund_undecided'
  /** A signed provider refund decision recorded for no refund of the platform. */
  | 'refund_outcome_unknown'
  /** A deposit's refund still held past the grace period (docs/refunds.md "Area C"). */
  | 'deposit_refund_held'
  /** A payout still held or requested past its decision timeout (docs/payouts.md "Operators"). */
  | 'payout_undecided'
  /** A signed provider payout decision recorded for no payout of the platform. */
  | 'payout_outcome_unknown'
  /** A payout still awaiting approval past PAYOUT_APPROVAL_TIMEOUT_SECONDS (its run should have voided it). */
  | 'payout_approval_stale';

export interface Finding {
  kind: FindingKind;
  /** The record: invoice_reference, pre_transfer_id, deposit reference, webhook id, or the ledger's own text. */
  id: string;
  /** `repaired`: the repair was started or done; `reported`: left for an operator (report-only run, or no repair). */
  action: 'repaired' | 'reported';
  detail: string;
}

export interface ReconcileInput {
  /** false: report only, change nothing. */
  repair: boolean;
  /** Records younger than this many seconds are in flight, not inconsistent. */
  grace_seconds: number;
}

export interface ReconciliationReport {
  /** RFC 3339 time the run started. */
  started_at: string;
  /** Every inconsistency found (at most `FINDINGS_LIMIT` per kind). */
  findings: Finding[];
  /** Findings repaired in this run. */
  repaired: number;
  /** Findings left (report-only runs, ledger imbalances). */
  reported: number;
  /** Client idempotency keys past IDEMPOTENCY_RETENTION_SECONDS deleted by this run (repairing runs only). */
  idempotency_keys_purged: number;
  /** Events older than EVENTS_RETENTION_DAYS deleted by this run (repairing runs only; at most EVENTS_PURGE_MAX_PER_RUN). */
  events_purged: number;
}

/** Events deleted per batch of a run's purge, and at most per run (the next run takes the rest). */
export const EVENTS_PURGE_BATCH = 5_000;
export const EVENTS_PURGE_MAX_PER_RUN = 50_000;

/** At most this many records of each kind are looked at per run; the next run takes the rest. */
export const FINDINGS_LIMIT = 500;

export interface ReconciliationActivities {
  reconcile(input: ReconcileInput): Promise<ReconciliationReport>;
}

/** A payment as an upstream notification recorded it (the payin flow's PayinNotification). */
export interface RecordedPayment {
  status: 'success' | 'close';
  /** Minor units. */
  amount_units: bigint;
  trx_ref: string;
}

/**
 * The repairs reconciliation makes, each through its flow's own idempotent path. The composition root builds them
 * from the flows (src/activities.ts), so this flow imports no other flow's service, activities or store.
 */
export interface ReconciliationRepairs {
  /** Voids a pending pre-transfer's hold with the pre-transfer's own void step and key. */
  voidPreTransferHold(pre_transfer_id: string): Promise<void>;
  /** Closes a pending deposit as expired (moves nothing). */
  expireDeposit(reference: string): Promise<void>;
  /** Decides a recorded, undecided notification of the payin and acts as B4 would have. */
  applyRecordedNotification(invoice_reference: string, idempotency_key: string, payment: RecordedPayment): Promise<void>;
  /** Hands a notification to the payin's workflow again (Update-with-Start). */
  renotifyPayin(invoice_reference: string, payment: RecordedPayment): Promise<void>;
  /** Starts a refund's workflow when it was never started (a no-op for one that exists or existed). */
  startRefund(refund_reference: string): Promise<void>;
  /** Starts a deposit refund's workflow when it was never started (a no-op for one that exists or existed). */
  startDepositRefund(refund_reference: string): Promise<void>;
  /** Starts a payout's workflow when it was never started (a no-op for one that exists or existed). */
  startPayout(payout_reference: string): Promise<void>;
}

export interface ReconciliationWorkflowInput {
  /** Seconds between two runs. */
  interval_seconds: number;
  grace_seconds: number;
  /** Runs before the workflow continues as new (default RUNS_PER_EXECUTION; the workflow tests take fewer). */
  runs_per_execution?: number;
}

/** Runs before the workflow continues as new, keeping its history short. */
export const RUNS_PER_EXECUTION = 50;

/** The workflow id of a task queue's reconciliation (one per deployment and task queue). */
export function reconciliationWorkflowId(taskQueue: string): string {
  return `reconciliation:${taskQueue}`;
}
