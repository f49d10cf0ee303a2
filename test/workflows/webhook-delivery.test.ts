/**
 * WebhookDeliveryWorkflow with mocked activities on a real Temporal dev server (test/workflows/bed.ts): delivered at
 * once, retried with exponential backoff until delivered, given up (marked failed) past its retry window, started
 * after a failed inline first attempt, and its activity's failures. The backoff is read from the timers the run
 * started (their durations, never elapsed time); the retry settings come from the activity's answer, short here.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { WebhookAttemptResult, WebhookDeliveryActivities, WebhookRetrySettings } from '../../src/webhooks/contract';
import { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery';
import { failureOf, names, startWorkflowBed, timersOf, type WorkflowBed } from './bed';

/** 100 ms, doubling, at most 200 ms between attempts, for at most 500 ms of waiting. */
const RETRY: WebhookRetrySettings = { initial_seconds: 0.1, max_interval_seconds: 0.2, window_seconds: 0.5 };

const answer = (delivered: boolean, attempt = 1): WebhookAttemptResult => ({ delivered, attempt, retry: RETRY });

describe('WebhookDeliveryWorkflow', () => {
  let bed: WorkflowBed<WebhookDeliveryActivities>;

  beforeAll(async () => {
    bed = await startWorkflowBed<WebhookDeliveryActivities>({
      attemptWebhookDelivery: async () => answer(true),
      markWebhookFailed: async () => undefined,
    });
  });
  afterAll(() => bed.stop());

  async function start(answers: Partial<WebhookDeliveryActivities> = {}, input: { first_attempt_failed?: boolean; retry?: WebhookRetrySettings } = {}) {
    const { workflowId, calls } = bed.workflow('WH', answers);
    const handle = await bed.client.workflow.start(webhookDeliveryWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ webhook_id: workflowId, ...input }] });
    return { webhook_id: workflowId, handle, calls };
  }
  /** Answers not delivered for the first `failures` attempts, then delivered. */
  const failing = (failures: number) => {
    let attempts = 0;
    return { attemptWebhookDelivery: async () => answer(++attempts > failures, attempts) };
  };

  it('is done after one attempt the endpoint accepts', async () => {
    const { webhook_id, handle, calls } = await start();
    expect(await handle.result()).toEqual({ delivered: true, attempts: 1 });
    expect(calls.map(({ name, input }) => [name, input])).toEqual([['attemptWebhookDelivery', { webhook_id }]]);
    expect(await timersOf(handle)).toEqual([]);
  });

  it('backs off exponentially, capped at the maximum interval, until an attempt is delivered', async () => {
    const { handle, calls } = await start(failing(3));
    expect(await handle.result()).toEqual({ delivered: true, attempts: 4 });
    expect(names(calls)).toEqual(['attemptWebhookDelivery', 'attemptWebhookDelivery', 'attemptWebhookDelivery', 'attemptWebhookDelivery']);
    expect(await timersOf(handle)).toEqual([100, 200, 200]);
  });

  it('marks the event failed once the next wait would pass the retry window', async () => {
    const { webhook_id, handle, calls } = await start(failing(Infinity));
    // Waits of 100 + 200 + 200 ms fit the 500 ms window; a fourth of 200 ms would not.
    expect(await handle.result()).toEqual({ delivered: false, attempts: 4 });
    expect(names(calls)).toEqual(['attemptWebhookDelivery', 'attemptWebhookDelivery', 'attemptWebhookDelivery', 'attemptWebhookDelivery', 'markWebhookFailed']);
    expect(calls.at(-1)!.input).toEqual({ webhook_id });
    expect(await timersOf(handle)).toEqual([100, 200, 200]);
  });

  it('starts with the first backoff when the inline first attempt failed, and counts that attempt', async () => {
    const { handle, calls } = await start({}, { first_attempt_failed: true, retry: RETRY });
    expect(await handle.result()).toEqual({ delivered: true, attempts: 2 });
    expect(names(calls)).toEqual(['attemptWebhookDelivery']);
    expect(await timersOf(handle)).toEqual([100]);
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
    expect(calls.map(({ name, attempt }) => [name, attempt])).toEqual([
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
    expect(names(calls)).toEqual(['attemptWebhookDelivery']);
  });
});
