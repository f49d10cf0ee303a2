/**
 * Transactional outbox of PayinWorkflow starts (docs/payins.md "Workflow start: transactional outbox").
 *
 * B1 writes the payin and its `payin_workflow_outbox` row in one statement and answers without waiting for
 * Temporal. The dispatcher (one per api-role process, built by the composition root) starts the workflows: it takes
 * up to `batch_size` rows with `FOR UPDATE SKIP LOCKED` (so several api processes share the work and never start
 * the same payin twice at once), starts their PayinWorkflows concurrently, deletes the rows it started and commits.
 * It runs when B1 wakes it after a commit and otherwise every `poll_interval_ms` (rows left by a crashed process, or
 * by a failed start).
 *
 * Idempotent by workflow id (= invoice_reference, `WorkflowIdReusePolicy.REJECT_DUPLICATE`): a workflow that
 * already exists or existed (started by an earlier dispatch or by an upstream notification's signal-with-start)
 * counts as started. The PayinWorkflow's expiry timer runs to the payin's `expires_at`, so a late start does not
 * lengthen the payin's life. A payin already `failed` (upstream refused it) gets no workflow.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { PlatformDeps } from '../../platform-deps';
import { startWorkflow } from '../../temporal/client';
import { payinWorkflow } from '../../../workflows/payin';
import type { PayinWorkflowInput } from './contract';
import { deleteOutboxRows, takeOutboxBatch, type OutboxRow } from './store';

export interface PayinOutboxOptions {
  /** Rows taken per transaction (default 200). */
  batch_size?: number;
  /** Workflow starts in flight at once (default 32). */
  concurrency?: number;
  /** Pause between sweeps when nothing woke the dispatcher, in milliseconds (default 1000). */
  poll_interval_ms?: number;
}

export interface PayinOutboxDispatcher {
  /** Asks for a sweep now (cheap; coalesces). */
  wake(): void;
  /** Sweeps until the outbox is empty (tests, shutdown); resolves with the number of workflows started. */
  drain(): Promise<number>;
  /** Finishes the sweep in progress, then stops. */
  stop(): Promise<void>;
}

/** Input of the PayinWorkflow of a payin: the expiry timer runs to `expires_at`. */
export function payinWorkflowInputOf(
  deps: Pick<PlatformDeps, 'config'>,
  row: { invoice_reference: string; expires_at?: Date | null },
): PayinWorkflowInput {
  return {
    invoice_reference: row.invoice_reference,
    ttl_seconds: deps.config.PAYIN_TTL_SECONDS,
    ...(row.expires_at ? { expires_at: row.expires_at.toISOString() } : {}),
  };
}

/** Starts the outbox dispatcher of this process (api role, built by the composition root). */
export function startPayinOutboxDispatcher(deps: PlatformDeps, options: PayinOutboxOptions = {}): PayinOutboxDispatcher {
  const batchSize = options.batch_size ?? 200;
  const concurrency = options.concurrency ?? 32;
  const pollIntervalMs = options.poll_interval_ms ?? 1000;
  let stopped = false;
  let woken = false;
  let wakeUp: (() => void) | undefined;

  /** One transaction: take a batch, start its workflows, delete what was started. Returns [taken, done, started]. */
  async function sweepOnce(): Promise<[number, number, number]> {
    return deps.database.transaction(async (trx) => {
      const rows = await takeOutboxBatch(trx, batchSize);
      const done: string[] = [];
      let started = 0;
      let next = 0;
      const startOne = async (row: OutboxRow) => {
        if (row.status === 'failed') {
          done.push(row.id);
          return;
        }
        try {
          await startWorkflow(deps.temporal, payinWorkflow, {
            taskQueue: deps.temporal.taskQueue,
            workflowId: row.invoice_reference,
            workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
            args: [payinWorkflowInputOf(deps, row)],
          });
          started += 1;
          done.push(row.id);
        } catch (error) {
          if (error instanceof WorkflowExecutionAlreadyStartedError) {
            done.push(row.id);
            return;
          }
          deps.logger.warn({ invoice_reference: row.invoice_reference, err: (error as Error).message }, 'payin workflow start failed; retried');
        }
      };
      await Promise.all(
        Array.from({ length: Math.min(concurrency, rows.length) }, async () => {
          while (next < rows.length) await startOne(rows[next++]!);
        }),
      );
      await deleteOutboxRows(trx, done);
      return [rows.length, done.length, started];
    });
  }

  /** Sweeps until a batch comes back short or a start failed. */
  async function sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const [taken, done, started] = await sweepOnce();
      total += started;
      if (taken < batchSize || done < taken || stopped) return total;
    }
  }

  let running: Promise<number> = Promise.resolve(0);
  const loop = (async () => {
    while (!stopped) {
      woken = false;
      running = sweep().catch((error: unknown) => {
        deps.logger.error({ err: error }, 'payin outbox sweep failed');
        return 0;
      });
      await running;
      if (stopped) break;
      if (!woken) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pollIntervalMs);
          wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wakeUp = undefined;
      }
    }
  })();

  return {
    wake() {
      woken = true;
      wakeUp?.();
    },
    async drain() {
      await running;
      return sweep();
    },
    async stop() {
      stopped = true;
      wakeUp?.();
      await loop;
    },
  };
}
