/**
 * The reconciliation's one activity (contract.ts): finds what faults left inconsistent between the records, the
 * durable flows and the ledger, and repairs it through each flow's own idempotent path:
 *
 *   notification_not_credited / close_not_applied   hand it to the payin's workflow again (Update-with-Start)
 *   notification_undecided                         decide and act as B4 would have
 *   hold_past_expiry                               void the hold (the pre-transfer's own void step and key)
 *   deposit_past_expiry                            close the deposit as expired (moves nothing)
 *   webhook_stalled                                start a delivery run (same webhook id)
 *   outbox_lag                                     wake the outbox dispatcher (reported)
 *   refund_undecided                               start its workflow when it has none (a no-op for one that
 *                                                  existed); a refund whose workflow runs is reported: it stays
 *                                                  held until the provider decides
 *   refund_outcome_unknown                         reported: a provider decision for no refund of the platform
 *   deposit_refund_held                            a deposit's refund held with no workflow: start it (a running
 *                                                  one is reported: it waits for the acquirer or the capture)
 *   payout_undecided                               as refund_undecided, for a payout
 *   payout_outcome_unknown                         reported: a provider decision for no payout of the platform
 *   payout_approval_stale                          reported: a payout awaiting approval past its timeout (held)
 *   deposit_not_credited, ledger_imbalance         reported for an operator, never repaired blindly
 *
 * A record whose workflow is still running is left to it. Repairs of one run are independent: one that fails is
 * reported with its error and the others go on. A repairing run also purges the client idempotency keys past their
 * retention (one bounded batch) and the events past EVENTS_RETENTION_DAYS (bounded batches; the owners' sequences
 * stay, so `seq` keeps growing).
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { purgeEvents } from '../../events';
import type { PlatformDeps } from '../../platform-deps';
import { redeliverWebhook } from '../../webhooks';
import { additionalPaymentIdempotencyKey } from '../payin/contract';
import {
  EVENTS_PURGE_BATCH,
  EVENTS_PURGE_MAX_PER_RUN,
  type Finding,
  type FindingKind,
  type ReconcileInput,
  type ReconciliationActivities,
  type ReconciliationRepairs,
  type ReconciliationReport,
  type RecordedPayment,
} from './contract';
import {
  depositsPastExpiry,
  heldDepositRefunds,
  holdsPastExpiry,
  notificationCandidates,
  outboxLag,
  pendingWebhooks,
  payoutOutcomesWithoutPayout,
  refundOutcomesWithoutRefund,
  staleApprovalPayouts,
  undecidedPayouts,
  undecidedRefunds,
  uncreditedDeposits,
  type NotificationCandidate,
} from './store';

type Repair = () => Promise<void>;

/** True while a workflow with this id has an open run (it will finish the work itself). */
async function isRunning(deps: PlatformDeps, workflowId: string): Promise<boolean> {
  try {
    const description = await deps.temporal.client.workflow.getHandle(workflowId).describe();
    return description.status.name === 'RUNNING';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

function paymentOf(candidate: NotificationCandidate): RecordedPayment {
  return { status: candidate.status, amount_units: candidate.amount_units ?? 0n, trx_ref: candidate.trx_ref ?? '' };
}

/**
 * Runs one reconciliation. @returns every finding with what was done about it
 * @throws only when the database cannot be read; a failed repair is a `reported` finding
 */
export async function reconcile(deps: PlatformDeps, repairs: ReconciliationRepairs, input: ReconcileInput): Promise<ReconciliationReport> {
  const started = new Date();
  const cutoff = new Date(started.getTime() - input.grace_seconds * 1000);
  const findings: Finding[] = [];
  const act = async (kind: FindingKind, id: string, detail: string, repair?: Repair) => {
    if (!repair || !input.repair) {
      findings.push({ kind, id, action: 'reported', detail });
      return;
    }
    try {
      await repair();
      findings.push({ kind, id, action: 'repaired', detail });
    } catch (error) {
      deps.logger.warn({ kind, id, err: (error as Error).message }, 'reconciliation repair failed');
      findings.push({ kind, id, action: 'reported', detail: `${detail}; repair failed: ${(error as Error).message}` });
    }
  };

  await reconcileNotifications(deps, repairs, cutoff, act);
  for (const id of await holdsPastExpiry(deps.database, cutoff)) {
    if (await isRunning(deps, id)) continue;
    await act('hold_past_expiry', id, 'pre-transfer pending past expiry with no workflow', () => repairs.voidPreTransferHold(id));
  }
  for (const reference of await depositsPastExpiry(deps.database, cutoff)) {
    if (await isRunning(deps, reference)) continue;
    await act('deposit_past_expiry', reference, 'deposit pending past its lifetime with no workflow', () => repairs.expireDeposit(reference));
  }
  for (const reference of await uncreditedDeposits(deps.database, deps.ledger, cutoff)) {
    await act('deposit_not_credited', reference, 'completed deposit without its ledger transaction');
  }
  for (const id of await pendingWebhooks(deps.database, cutoff)) {
    if (await isRunning(deps, id)) continue;
    await act('webhook_stalled', id, 'webhook event pending with no delivery workflow', async () => {
      await redeliverWebhook(deps, id);
    });
  }
  const lagging = await outboxLag(deps.database, cutoff);
  for (const invoice_reference of lagging) {
    await act('outbox_lag', invoice_reference, 'payin workflow start waiting in the outbox');
  }
  if (lagging.length) deps.payinOutbox?.wake();
  for (const refund of await undecidedRefunds(deps.database, cutoff)) {
    const detail = `refund ${refund.status} past its decision timeout (due ${refund.decision_due_at.toISOString()})`;
    if (await isRunning(deps, refund.refund_reference)) await act('refund_undecided', refund.refund_reference, `${detail}; its workflow waits for the provider`);
    else await act('refund_undecided', refund.refund_reference, `${detail}; no workflow`, () => repairs.startRefund(refund.refund_reference));
  }
  for (const refund_reference of await heldDepositRefunds(deps.database, cutoff)) {
    if (await isRunning(deps, refund_reference)) await act('deposit_refund_held', refund_reference, 'deposit refund held; its workflow waits for the acquirer or the capture');
    else await act('deposit_refund_held', refund_reference, 'deposit refund held with no workflow', () => repairs.startDepositRefund(refund_reference));
  }
  for (const outcome of await refundOutcomesWithoutRefund(deps.database)) {
    await act('refund_outcome_unknown', outcome.refund_reference, `provider notified ${outcome.status} for no refund`);
  }
  for (const payout of await undecidedPayouts(deps.database, cutoff)) {
    const detail = `payout ${payout.status} past its decision timeout (due ${payout.decision_due_at.toISOString()})`;
    if (await isRunning(deps, payout.payout_reference)) await act('payout_undecided', payout.payout_reference, `${detail}; its workflow waits for the provider`);
    else await act('payout_undecided', payout.payout_reference, `${detail}; no workflow`, () => repairs.startPayout(payout.payout_reference));
  }
  for (const payout of await staleApprovalPayouts(deps.database, cutoff)) {
    await act('payout_approval_stale', payout.payout_reference, `payout awaiting approval past its timeout (due ${payout.approval_due_at.toISOString()}); its holds stay`);
  }
  for (const outcome of await payoutOutcomesWithoutPayout(deps.database)) {
    await act('payout_outcome_unknown', outcome.payout_reference, `provider notified ${outcome.status} for no payout`);
  }
  const ledger = await deps.ledger.check();
  for (const imbalance of ledger.imbalances) await act('ledger_imbalance', imbalance, 'ledger invariant broken');

  // Housekeeping on the same schedule: answers kept for client retries are dropped once their retention is over
  // (one bounded batch per run), so the table holds about one retention's worth of keys.
  const idempotency_keys_purged = input.repair ? await deps.idempotency.purgeExpired() : 0;
  const events_purged = input.repair ? await purgeOldEvents(deps) : 0;

  const repaired = findings.filter((finding) => finding.action === 'repaired').length;
  if (findings.length) deps.logger.warn({ repaired, reported: findings.length - repaired }, 'reconciliation found inconsistencies');
  return { started_at: started.toISOString(), findings, repaired, reported: findings.length - repaired, idempotency_keys_purged, events_purged };
}

/**
 * Deletes the events past EVENTS_RETENTION_DAYS, oldest first, in batches of EVENTS_PURGE_BATCH (each its own short
 * statement) until a batch comes back short or EVENTS_PURGE_MAX_PER_RUN are gone. @returns how many were deleted
 */
async function purgeOldEvents(deps: PlatformDeps): Promise<number> {
  let purged = 0;
  while (purged < EVENTS_PURGE_MAX_PER_RUN) {
    const batch = Math.min(EVENTS_PURGE_BATCH, EVENTS_PURGE_MAX_PER_RUN - purged);
    const deleted = await purgeEvents(deps.database, { retention_days: deps.config.EVENTS_RETENTION_DAYS, batch });
    purged += deleted;
    if (deleted < batch) break;
  }
  return purged;
}

/** The ledger key the payment of `candidate` is posted under when it did not settle its payin. */
function additionalKey(candidate: NotificationCandidate): string {
  return additionalPaymentIdempotencyKey(candidate.invoice_reference, { amount_units: String(candidate.amount_units ?? 0n), trx_ref: candidate.trx_ref ?? '' });
}

/** Notifications recorded but not (yet) in their payin or the ledger. */
async function reconcileNotifications(
  deps: PlatformDeps,
  repairs: ReconciliationRepairs,
  cutoff: Date,
  act: (kind: FindingKind, id: string, detail: string, repair?: Repair) => Promise<void>,
): Promise<void> {
  const candidates = await notificationCandidates(deps.database, cutoff);
  const additionalKeys = candidates
    .filter((candidate) => candidate.outcome === 'applied' && candidate.status === 'success')
    .map((candidate) => additionalKey(candidate));
  const credited = await deps.ledger.usedKeys(additionalKeys);
  for (const candidate of candidates) {
    const payment = paymentOf(candidate);
    const detail = `${candidate.status} ${candidate.amount_units ?? ''} trx_ref ${candidate.trx_ref ?? '-'}`.trim();
    if (candidate.outcome === 'received') {
      await act('notification_undecided', candidate.invoice_reference, detail, async () => {
        await repairs.applyRecordedNotification(candidate.invoice_reference, candidate.idempotency_key, payment);
      });
      continue;
    }
    const renotify = () => repairs.renotifyPayin(candidate.invoice_reference, payment);
    if (candidate.status === 'close') {
      await act('close_not_applied', candidate.invoice_reference, detail, renotify);
      continue;
    }
    if (credited.has(additionalKey(candidate))) continue;
    await act('notification_not_credited', candidate.invoice_reference, detail, renotify);
  }
}

export function createReconciliationActivities(deps: PlatformDeps, repairs: ReconciliationRepairs): ReconciliationActivities {
  return { reconcile: (input) => reconcile(deps, repairs, input) };
}
