/**
 * Transactional outbox of PayinWorkflow starts (issue 5, docs/payins.md "Workflow start: transactional outbox").
 *
 * B1 writes the payin and its `payin_workflow_outbox` row in one database transaction and answers without waiting
 * for Temporal. The dispatcher (one per api-role process) starts the workflows: it takes up to `batch_size` rows
 * with `FOR UPDATE SKIP LOCKED` (so several api processes share the work and never start the same payin twice at
 * once), starts their PayinWorkflows concurrently, deletes the rows it started and commits. It runs when B1 wakes
 * it after a commit and otherwise every `poll_interval_ms` (rows left by a crashed process, or by a failed start).
 *
 * Idempotent by workflow id (= invoice_reference, `WorkflowIdReusePolicy.REJECT_DUPLICATE`): a workflow that
 * already exists or existed (started by an earlier dispatch or by an upstream notification's signal-with-start)
 * counts as started. The PayinWorkflow's expiry timer runs to the payin's `expires_at` (created_at +
 * PAYIN_TTL_SECONDS), so a late start does not lengthen the payin's life. A payin already `failed` (upstream
 * refused it) gets no workflow.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { payinWorkflow, PayinWorkflowInput } from '../../workflows/payin';
import type { PlatformDeps } from '../platform';

export const PAYIN_OUTBOX_TABLE = 'payin_workflow_outbox';

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
export function payinWorkflowInputOf(deps: PlatformDeps, row: { invoice_reference: string; expires_at?: Date | null }): PayinWorkflowInput {
  return {
    invoice_reference: row.invoice_reference,
    ttl_seconds: deps.config.PAYIN_TTL_SECONDS,
    ...(row.expires_at ? { expires_at: row.expires_at.toISOString() } : {}),
  };
}

const dispatchers = new WeakMap<PlatformDeps, PayinOutboxDispatcher>();

/** Wakes the dispatcher running with these deps, if any (B1 after its commit). */
export function wakePayinOutbox(deps: PlatformDeps): void {
  dispatchers.get(deps)?.wake();
}

/** Starts the outbox dispatcher of this process (api role, src/runtime.ts). */
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
      const rows = (await trx(`${PAYIN_OUTBOX_TABLE} as outbox`)
        .join('payins', 'payins.invoice_reference', 'outbox.invoice_reference')
        .select('outbox.id', 'outbox.invoice_reference', 'payins.status', 'payins.expires_at')
        .orderBy('outbox.id')
        .limit(batchSize)
        .forUpdate('outbox')
        .skipLocked()) as Array<{ id: string; invoice_reference: string; status: string; expires_at: Date | null }>;
      const done: string[] = [];
      let started = 0;
      let next = 0;
      const startOne = async (row: (typeof rows)[number]) => {
        if (row.status === 'failed') {
          done.push(row.id);
          return;
        }
        try {
          await deps.temporal.client.workflow.start<typeof payinWorkflow>('payinWorkflow', {
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
      if (done.length > 0) await trx(PAYIN_OUTBOX_TABLE).whereIn('id', done).delete();
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

  const dispatcher: PayinOutboxDispatcher = {
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
      dispatchers.delete(deps);
    },
  };
  dispatchers.set(deps, dispatcher);
  return dispatcher;
}
