/**
 * WebhookDeliveryWorkflow with mocked activities on a real Temporal dev server (test/workflows/bed.ts): it waits for
 * its turn (no earlier webhook of its subject pending: the predecessor's signal, or a recheck on its backoff), then is
 * delivered at once, retried with exponential backoff until delivered, given up (marked failed) past its retry
 * window, started after a failed inline first attempt, and its activity's failures. The backoff is read from the
 * timers the run started (their durations, never elapsed time) and from the next retry each attempt is told to
 * record; the retry settings are the run's input, short here.
 */
import { ApplicationFailure } from '@temporalio/common';
import { predecessorSettledSignal, type WebhookAttemptResult, type WebhookDeliveryActivities, type WebhookRetrySettings } from '../../src/webhooks/contract';
import { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery';
import { eventually, failureOf, names, startWorkflowBed, timersOf, type WorkflowBed } from './bed';

/** 100 ms, doubling, at most 200 ms between attempts, for at most 500 ms of waiting. */
const RETRY: WebhookRetrySettings = { initial_seconds: 0.1, max_interval_seconds: 0.2, window_seconds: 0.5 };

const answer = (delivered: boolean, attempt = 1): WebhookAttemptResult => ({ delivered, attempt });

describe('WebhookDeliveryWorkflow', () => {
  let bed: WorkflowBed<WebhookDeliveryActivities>;

  beforeAll(async () => {
    bed = await startWorkflowBed<WebhookDeliveryActivities>({
      pendingPredecessor: async () => ({ webhook_id: null }),
      attemptWebhookDelivery: async () => answer(true),
      markWebhookFailed: async () => undefined,
    });
  });
  afterAll(() => bed.stop());

  async function start(answers: Partial<WebhookDeliveryActivities> = {}, input: { first_attempt_failed?: boolean; turn_checks_per_run?: number } = {}) {
    const { workflowId, calls } = bed.workflow('WH', answers);
    const handle = await bed.client.workflow.start(webhookDeliveryWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ webhook_id: workflowId, retry: RETRY, ...input }] });
    return { webhook_id: workflowId, handle, calls };
  }
  /** Answers not delivered for the first `failures` attempts, then delivered. */
  const failing = (failures: number) => {
    let attempts = 0;
    return { attemptWebhookDelivery: async () => answer(++attempts > failures, attempts) };
  };
  const attemptsOf = (calls: Array<{ name: string; input: unknown }>) => calls.filter((call) => call.name === 'attemptWebhookDelivery').map((call) => call.input);

  it('checks its turn, then is done after one attempt the endpoint accepts', async () => {
    const { webhook_id, handle, calls } = await start();
    expect(await handle.result()).toEqual({ delivered: true, attempts: 1 });
    expect(calls.map(({ name, input }) => [name, input])).toEqual([
      ['pendingPredecessor', { webhook_id }],
      ['attemptWebhookDelivery', { webhook_id, next_retry_seconds: 0.1 }],
    ]);
    expect(await timersOf(handle)).toEqual([]);
  });

  it('backs off exponentially, capped at the maximum interval, until an attempt is delivered; each attempt told when the next is due', async () => {
    const { webhook_id, handle, calls } = await start(failing(3));
    expect(await handle.result()).toEqual({ delivered: true, attempts: 4 });
    expect(names(calls)).toEqual(['pendingPredecessor', 'attemptWebhookDelivery', 'attemptWebhookDelivery', 'attemptWebhookDelivery', 'attemptWebhookDelivery']);
    expect(await timersOf(handle)).toEqual([100, 200, 200]);
    // Waits of 100 + 200 + 200 ms fit the 500 ms window; the fourth attempt is the last.
    expect(attemptsOf(calls)).toEqual([0.1, 0.2, 0.2, null].map((next_retry_seconds) => ({ webhook_id, next_retry_seconds })));
  });

  it('marks the event failed once the next wait would pass the retry window', async () => {
    const { webhook_id, handle, calls } = await start(failing(Infinity));
    expect(await handle.result()).toEqual({ delivered: false, attempts: 4 });
    expect(names(calls)).toEqual(['pendingPredecessor', 'attemptWebhookDelivery', 'attemptWebhookDelivery', 'attemptWebhookDelivery', 'attemptWebhookDelivery', 'markWebhookFailed']);
    expect(calls.at(-1)!.input).toEqual({ webhook_id });
    expect(await timersOf(handle)).toEqual([100, 200, 200]);
  });

  it('starts with the first backoff when the inline first attempt failed (made on its turn), and counts that attempt', async () => {
    const { webhook_id, handle, calls } = await start({}, { first_attempt_failed: true });
    expect(await handle.result()).toEqual({ delivered: true, attempts: 2 });
    expect(calls.map(({ name, input }) => [name, input])).toEqual([['attemptWebhookDelivery', { webhook_id, next_retry_seconds: 0.2 }]]);
    expect(await timersOf(handle)).toEqual([100]);
  });

  it('waits while an earlier webhook of its subject is pending, and attempts once the predecessor’s signal says it ended', async () => {
    let predecessorPending = true;
    const { handle, calls } = await start({ pendingPredecessor: async () => ({ webhook_id: predecessorPending ? 'WH-EARLIER' : null }) });
    await eventually(() => calls.length >= 1);
    // Longer than any recheck of this run so far: still waiting, nothing attempted.
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(names(calls).filter((name) => name === 'attemptWebhookDelivery')).toEqual([]);
    predecessorPending = false;
    await handle.signal(predecessorSettledSignal);
    expect(await handle.result()).toEqual({ delivered: true, attempts: 1 });
    expect(names(calls).at(-1)).toBe('attemptWebhookDelivery');
    expect(names(calls).slice(0, -1).every((name) => name === 'pendingPredecessor')).toBe(true);
  });

  it('rechecks its turn on a backoff when no signal comes (its sender died), doubling to the maximum interval', async () => {
    let checks = 0;
    const { handle, calls } = await start({ pendingPredecessor: async () => ({ webhook_id: ++checks <= 3 ? 'WH-EARLIER' : null }) });
    expect(await handle.result()).toEqual({ delivered: true, attempts: 1 });
    expect(names(calls)).toEqual(['pendingPredecessor', 'pendingPredecessor', 'pendingPredecessor', 'pendingPredecessor', 'attemptWebhookDelivery']);
    expect(await timersOf(handle)).toEqual([100, 200, 200]);
  });

  it('continues as new after its bound of turn checks, keeping its input, and attempts once its turn comes', async () => {
    let checks = 0;
    const { handle, calls } = await start({ pendingPredecessor: async () => ({ webhook_id: ++checks <= 3 ? 'WH-EARLIER' : null }) }, { turn_checks_per_run: 2 });
    // Run 1: two checks (one wait between them), then continue-as-new; run 2: one more wait, then its turn and the attempt.
    expect(await handle.result()).toEqual({ delivered: true, attempts: 1 });
    expect(names(calls)).toEqual(['pendingPredecessor', 'pendingPredecessor', 'pendingPredecessor', 'pendingPredecessor', 'attemptWebhookDelivery']);
    const description = await handle.describe();
    expect(description.runId).not.toBe(handle.firstExecutionRunId);
  });

  it('retries an attempt whose activity failed on an infrastructure fault (one attempt, two executions)', async () => {
    let executions = 0;
    const { handle, calls } = await start({
      attemptWebhookDelivery: async () => {
        if (++executions === 1) throw new Error('database connection lost');
        return answer(true);
      },
    });
    expect(await handle.result()).toEqual({ delivered: true, attempts: 1 });
    expect(calls.filter((call) => call.name === 'attemptWebhookDelivery').map(({ name, attempt }) => [name, attempt])).toEqual([
      ['attemptWebhookDelivery', 1],
      ['attemptWebhookDelivery', 2],
    ]);
  });

  it('fails with the activity failure itself when the activity refuses for good', async () => {
    const { handle, calls } = await start({
      attemptWebhookDelivery: async () => {
        throw ApplicationFailure.nonRetryable('no such event', 'WEBHOOK_NOT_FOUND');
      },
    });
    expect(await failureOf(handle.result())).toBe('WEBHOOK_NOT_FOUND');
    expect(names(calls)).toEqual(['pendingPredecessor', 'attemptWebhookDelivery']);
  });
});
