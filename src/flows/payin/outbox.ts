/**
 * The payin flow's dispatcher (docs/payins.md "Workflow start and notification hand-over"): what was recorded in
 * PostgreSQL and still has to reach Temporal.
 *
 * - Workflow starts: B1 writes the payin and its `payin_workflow_outbox` row in one statement and answers without
 *   waiting for Temporal.
 * - Notification hand-overs: B4 records and decides an upstream notification, then hands it to the payin's workflow
 *   itself; when that did not get through within the upstream's patience (Temporal unreachable, or the process died),
 *   the notification's `handoff_due_at` passes and the dispatcher hands it over (signal-with-start).
 *
 * One idiom for both: the record is committed first; the dispatcher claims due rows by moving their due time past a
 * lease in one committed statement (`FOR UPDATE SKIP LOCKED` inside it, so several api processes share the work),
 * then makes the Temporal calls outside any transaction, each within a deadline, and clears the rows that got
 * through. A row whose call failed comes due again at once; a claim whose process died comes due when its lease
 * ends. The dispatcher (one per api-role process, built by the composition root) runs when woken and otherwise
 * every `poll_interval_ms`.
 *
 * Idempotent: a start by workflow id (= invoice_reference, `WorkflowIdReusePolicy.REJECT_DUPLICATE`: a workflow
 * that exists or existed counts as started), a hand-over because the settlement re-reads its applied notification
 * and posts under the payment's ledger key. The PayinWorkflow's expiry timer runs to the payin's `expires_at`, so a
 * late start does not lengthen the payin's life. A payin already `failed` (upstream refused it) gets no workflow.
 */
import { withTraceparent } from '../../tracing';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { PlatformDeps } from '../../platform-deps';
import { startWorkflow } from '../../temporal/client';
import { requestDeadlineSeconds, withRequestDeadline } from '../../temporal/deadline';
import { payinWorkflow } from '../../../workflows/payin';
import { payinSearchAttributes, payinWorkflowInputOf, signalPayin } from './notifications';
import {
  claimDueHandoffs,
  claimOutboxBatch,
  deleteOutboxRows,
  markNotificationHanded,
  releaseHandoffs,
  releaseOutboxRows,
  type DueHandoff,
  type OutboxRow,
} from './store';

export interface PayinOutboxOptions {
  /** Rows claimed per batch (default 200). */
  batch_size?: number;
  /** Temporal calls in flight at once (default 32). */
  concurrency?: number;
  /** Pause between sweeps when nothing woke the dispatcher, in milliseconds (default 1000). */
  poll_interval_ms?: number;
}

export interface PayinOutboxDispatcher {
  /** Asks for a sweep now (cheap; coalesces). */
  wake(): void;
  /** Sweeps until nothing is due (tests, shutdown); resolves with the number of workflows started. */
  drain(): Promise<number>;
  /** Finishes the sweep in progress, then stops. */
  stop(): Promise<void>;
}

/** Seconds a claim outlives the longest Temporal call it covers, so no other dispatcher takes a row still in flight. */
const LEASE_MARGIN_SECONDS = 10;

/** What one dispatcher sweeps with. */
interface Sweeper {
  deps: PlatformDeps;
  batchSize: number;
  concurrency: number;
  /** Seconds a claim lasts: the Temporal deadline plus LEASE_MARGIN_SECONDS. */
  leaseSeconds: number;
  isStopped(): boolean;
}

/**
 * Runs `call` for each item, `concurrency` at a time, each within the Temporal deadline; after the first failure no
 * further item is tried (Temporal is likely unreachable). @returns the items that got through and the rest
 */
async function callEach<T>(sweeper: Sweeper, items: T[], call: (item: T) => Promise<void>): Promise<{ through: T[]; rest: T[] }> {
  const { deps } = sweeper;
  const through: T[] = [];
  const rest: T[] = [];
  let next = 0;
  let failed = false;
  await Promise.all(
    Array.from({ length: Math.min(sweeper.concurrency, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++]!;
        if (failed) {
          rest.push(item);
          continue;
        }
        try {
          await withRequestDeadline(deps, () => call(item));
          through.push(item);
        } catch (error) {
          failed = true;
          rest.push(item);
          deps.logger.warn({ err: (error as Error).message }, 'payin dispatch to Temporal failed; retried');
        }
      }
    }),
  );
  return { through, rest };
}

/** Starts the workflows of one claimed batch of the outbox. @returns [claimed, started, all went through] */
async function dispatchStarts(sweeper: Sweeper): Promise<[number, number, boolean]> {
  const { deps } = sweeper;
  const rows = await claimOutboxBatch(deps.database, sweeper.batchSize, sweeper.leaseSeconds);
  let started = 0;
  const { through, rest } = await callEach(sweeper, rows, async (row: OutboxRow) => {
    if (row.status === 'failed') return;
    try {
      // Inside the creating request's trace: the run (its settlement, its webhook) continues it.
      await withTraceparent(row.traceparent, () =>
        startWorkflow(deps.temporal, payinWorkflow, {
          taskQueue: deps.temporal.taskQueue,
          workflowId: row.invoice_reference,
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          args: [payinWorkflowInputOf(deps, row)],
          ...payinSearchAttributes(row),
        }),
      );
      started += 1;
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  });
  await deleteOutboxRows(deps.database, through.map((row) => row.id));
  await releaseOutboxRows(deps.database, rest.map((row) => row.id));
  return [rows.length, started, rest.length === 0];
}

/** Hands one claimed batch of due notifications to their workflows. @returns [claimed, all went through] */
async function dispatchHandoffs(sweeper: Sweeper): Promise<[number, boolean]> {
  const { deps } = sweeper;
  const due = await claimDueHandoffs(deps.database, sweeper.batchSize, sweeper.leaseSeconds);
  const { through, rest } = await callEach(sweeper, due, async (handoff: DueHandoff) => {
    await signalPayin(deps, { invoice_reference: handoff.invoice_reference, expires_at: handoff.expires_at, ...handoff.payin }, { status: handoff.status, amount_units: handoff.amount_units ?? 0n, trx_ref: handoff.trx_ref ?? '' });
    await markNotificationHanded(deps.database, handoff.idempotency_key);
  });
  await releaseHandoffs(deps.database, rest.map((handoff) => handoff.idempotency_key));
  if (through.length > 0) deps.logger.info({ notifications: through.length }, 'upstream notifications handed to their payin workflows');
  return [due.length, rest.length === 0];
}

/** Dispatches until a batch comes back short or a call failed. @returns the number of workflows started */
async function sweep(sweeper: Sweeper): Promise<number> {
  let total = 0;
  for (;;) {
    const [claimed, started, allStarted] = await dispatchStarts(sweeper);
    total += started;
    if (claimed < sweeper.batchSize || !allStarted || sweeper.isStopped()) break;
  }
  for (;;) {
    const [claimed, allHanded] = await dispatchHandoffs(sweeper);
    if (claimed < sweeper.batchSize || !allHanded || sweeper.isStopped()) break;
  }
  return total;
}

/** Starts the dispatcher of this process (api role, built by the composition root). */
export function startPayinOutboxDispatcher(deps: PlatformDeps, options: PayinOutboxOptions = {}): PayinOutboxDispatcher {
  const pollIntervalMs = options.poll_interval_ms ?? 1000;
  let stopped = false;
  let woken = false;
  let wakeUp: (() => void) | undefined;
  const sweeper: Sweeper = {
    deps,
    batchSize: options.batch_size ?? 200,
    concurrency: options.concurrency ?? 32,
    leaseSeconds: Math.ceil(requestDeadlineSeconds(deps.config)) + LEASE_MARGIN_SECONDS,
    isStopped: () => stopped,
  };
  /** Sleeps until woken or `pollIntervalMs` passed. */
  const pause = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, pollIntervalMs);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      wakeUp = undefined;
    });

  let running: Promise<number> = Promise.resolve(0);
  const loop = (async () => {
    while (!stopped) {
      woken = false;
      running = sweep(sweeper).catch((error: unknown) => {
        deps.logger.error({ err: error }, 'payin outbox sweep failed');
        return 0;
      });
      await running;
      if (!stopped && !woken) await pause();
    }
  })();

  return {
    wake() {
      woken = true;
      wakeUp?.();
    },
    async drain() {
      await running;
      return sweep(sweeper);
    },
    async stop() {
      stopped = true;
      wakeUp?.();
      await loop;
    },
  };
}
