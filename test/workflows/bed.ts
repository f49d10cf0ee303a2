/**
 * A test bed for one workflow test file: the workflows run on the run's real Temporal dev server (started by
 * test/support/global-setup.ts with `TestWorkflowEnvironment.createLocal()` and the cached Temporal CLI; reached here
 * through `createFromExistingServer`), from the run's workflow bundle, on a task queue of the file's own, with
 * **mocked activities**: plain functions that record each call and answer what the test scripted for its workflow.
 * Activities are the workflows' I/O, so a mock is the right seam here; the integration tests run the same workflows
 * with the real activities, PostgreSQL and Temporal.
 *
 *   const bed = await startWorkflowBed<PayinActivities>({ settlePayin: async () => ({ webhook_id: null }), … });
 *   const { workflowId, calls } = bed.workflow('PAYIN', { settlePayin: async () => { throw … } });
 *   afterAll(() => bed.stop());
 */
import { Context } from '@temporalio/activity';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, makeTelemetryFilterString, Runtime, Worker } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connectTemporal } from '../../src/temporal/client';
import { failureType } from '../../src/temporal/failures';
import { readClusterState } from '../support/cluster';

/** One activity call as the worker received it. `attempt` counts from 1 (retries of the same call). */
export interface ActivityCall {
  name: string;
  input: unknown;
  attempt: number;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type ActivityFunction = (...args: any[]) => Promise<unknown>;
/** An activity interface of a flow's contract (`PayinActivities`, …): every member an async function. */
type ActivityFunctions<A> = { [K in keyof A]: ActivityFunction };

export interface WorkflowBed<A extends ActivityFunctions<A>> {
  client: Client;
  taskQueue: string;
  /**
   * A fresh workflow id (`prefix-…`) whose activities answer with `answers`, else with the file's defaults; `calls`
   * receives every activity call of that workflow (every run of it), in order.
   */
  workflow(prefix: string, answers?: Partial<A>): { workflowId: string; calls: ActivityCall[] };
  /**
   * A second task queue that no worker polls until `release()`: messages sent to a workflow started there meanwhile
   * reach it together, in its first activation.
   */
  heldQueue(): { taskQueue: string; release(): Promise<void> };
  /** Terminates what the file left running, stops the worker and closes the connections. */
  stop(): Promise<void>;
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is unset: run tests through jest (global-setup)`);
  return value;
}

let runtimeInstalled = false;

/** Starts the file's worker with `defaults` as every activity's answer unless a workflow scripted its own. */
export async function startWorkflowBed<A extends ActivityFunctions<A>>(defaults: A): Promise<WorkflowBed<A>> {
  if (!runtimeInstalled) {
    // Quiet: the tests send malformed messages on purpose (the workflows log them) and terminate running workflows.
    Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR' }), forward: {} } } });
    runtimeInstalled = true;
  }
  const address = required('PAYMENTS_TEST_TEMPORAL_ADDRESS');
  const namespace = readClusterState()?.namespace ?? 'default';
  const env = await TestWorkflowEnvironment.createFromExistingServer({ address, namespace });
  const taskQueue = `workflows-${randomBytes(6).toString('hex')}`;
  // The tests' client is the platform's (src/temporal/client.ts), not the environment's: its close waits for the
  // calls in flight, whose retry timers would otherwise fire after the close and throw in a later test file.
  const temporal = await connectTemporal(address, namespace, taskQueue);
  const scripts = new Map<string, { answers: Partial<A>; calls: ActivityCall[] }>();

  const activities = Object.fromEntries(
    (Object.keys(defaults) as Array<keyof A & string>).map((name) => [
      name,
      async (...args: unknown[]) => {
        const info = Context.current().info;
        const script = scripts.get(info.workflowExecution?.workflowId ?? '');
        script?.calls.push({ name, input: args[0], attempt: info.attempt });
        const answer: ActivityFunction = script?.answers[name] ?? defaults[name];
        return answer(...args);
      },
    ]),
  );
  const code = readFileSync(required('PAYMENTS_TEST_WORKFLOW_BUNDLE'), 'utf8');
  const workers: Array<{ worker: Worker; running: Promise<void> }> = [];
  const startWorker = async (queue: string) => {
    const worker = await Worker.create({ connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: queue, workflowBundle: { code }, activities });
    workers.push({ worker, running: worker.run() });
  };
  await startWorker(taskQueue);

  return {
    client: temporal.client,
    taskQueue,
    workflow(prefix, answers = {}) {
      const workflowId = `${prefix}-${randomBytes(8).toString('hex').toUpperCase()}`;
      const calls: ActivityCall[] = [];
      scripts.set(workflowId, { answers, calls });
      return { workflowId, calls };
    },
    heldQueue() {
      const queue = `${taskQueue}-held-${randomBytes(4).toString('hex')}`;
      return { taskQueue: queue, release: () => startWorker(queue) };
    },
    async stop() {
      try {
        for (const workflowId of scripts.keys()) {
          const handle = temporal.client.workflow.getHandle(workflowId);
          const status = await handle.describe().then((description) => description.status.name, () => undefined);
          if (status === 'RUNNING') await handle.terminate('test file done');
        }
      } finally {
        for (const { worker } of workers) worker.shutdown();
        await Promise.all(workers.map(({ running }) => running));
        await temporal.close();
        await env.teardown();
      }
    },
  };
}

/** A promise with its resolve, for holding an activity until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** Polls `probe` until it returns a value other than undefined or false. @throws after `timeoutMs` */
export async function eventually<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The names of the activities called, in order. */
export function names(calls: ActivityCall[]): string[] {
  return calls.map((call) => call.name);
}

/** An ISO 8601 instant `ms` from now: a workflow's expiry in its input. */
export function inMs(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

/** The `ApplicationFailure.type` a failed Temporal call carries anywhere in its cause chain, or undefined. */
export async function failureOf(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (error) {
    return failureType(error) ?? `untyped: ${(error as Error).name}`;
  }
  throw new Error('the call succeeded');
}

/** Every timer a workflow's history started, in milliseconds, in order (the durations it chose, not elapsed time). */
export async function timersOf(handle: WorkflowHandle): Promise<number[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((event) => {
    const timeout = event.timerStartedEventAttributes?.startToFireTimeout;
    return timeout ? [Number(timeout.seconds ?? 0) * 1000 + Math.round((timeout.nanos ?? 0) / 1e6)] : [];
  });
}

/** Whether a workflow's history holds an event of this type (EventType name without its prefix, e.g. 'TIMER_FIRED'). */
export async function historyHas(handle: WorkflowHandle, type: string): Promise<boolean> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).some((event) => String(temporal.api.enums.v1.EventType[event.eventType ?? 0]) === `EVENT_TYPE_${type}`);
}
