/**
 * Small workflows for the workflow-history source's tests (bundled by test/timeline/workflow-history.test.ts): between
 * them every kind of event the timeline maps, with secrets in their inputs, arguments and results.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  defineSignal,
  defineUpdate,
  executeChild,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { PAYMENT_STATUS } from '../../workflows/search-attributes';

export interface StoryActivities {
  /** Fails until its third attempt, then answers a result holding a card number. */
  flaky(input: { secret: string }): Promise<{ ok: true; card_number: string }>;
  /** Fails for good (non-retryable, type DECLINED). */
  doomed(): Promise<void>;
  /** A local step that answers. */
  localStep(input: { amount_units: string }): Promise<{ recorded: boolean }>;
  /** A local step that fails for good (type LOCAL_REFUSED). */
  localRefused(): Promise<void>;
  /** Fails every attempt (retryable, type UPSTREAM_DOWN), with a long backoff: stays pending. */
  stuck(): Promise<void>;
}

export interface StoryInput {
  round: number;
  password: string;
  card_number: string;
  /** A sealed value under a name that says nothing. */
  note: string;
}

export const approveUpdate = defineUpdate<string, [{ approved: boolean; otp: string }]>('approve');
export const pokeSignal = defineSignal<[{ token: string; reason: string }]>('poke');

const { flaky, doomed } = proxyActivities<StoryActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '50 milliseconds', backoffCoefficient: 1, maximumAttempts: 5 },
});
const { localStep, localRefused } = proxyLocalActivities<StoryActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 1 },
});
const { stuck } = proxyActivities<StoryActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '50 milliseconds', backoffCoefficient: 1, maximumInterval: '1 hour' },
});

/** A child: answers at once. */
export async function childWorkflow(name: string): Promise<string> {
  return `hello ${name}`;
}

/**
 * Round 0: a timer that is canceled once another fired, a signal, an Update (its validator rejects `approved: false`),
 * an activity retried to its third attempt, one that fails for good, two local activities (one fails), a child, a
 * search attribute upsert, then continue-as-new. Round 1: completes.
 */
export async function storyWorkflow(input: StoryInput): Promise<{ done: boolean; password: string }> {
  if (input.round > 0) return { done: true, password: input.password };
  let poked = false;
  let approved = false;
  setHandler(pokeSignal, () => {
    poked = true;
  });
  setHandler(
    approveUpdate,
    async () => {
      approved = true;
      return 'approved';
    },
    {
      validator: ({ approved }) => {
        if (!approved) throw ApplicationFailure.nonRetryable('not approved', 'NOT_APPROVED');
      },
    },
  );
  // An hour's timer, canceled once a short one fired (a timer canceled in the activation that started it never
  // reaches the history).
  const scope = new CancellationScope();
  const long = scope.run(() => sleep(3_600_000));
  await sleep(10);
  scope.cancel();
  try {
    await long;
  } catch (error) {
    if (!isCancellation(error)) throw error;
  }
  await condition(() => poked && approved);
  await flaky({ secret: 'SECRET-IN-ACTIVITY-INPUT' });
  try {
    await doomed();
  } catch {
    // The failure is the point.
  }
  await localStep({ amount_units: '3000000' });
  try {
    await localRefused();
  } catch {
    // The failure is the point.
  }
  await executeChild(childWorkflow, { args: ['child'], workflowId: `${workflowInfo().workflowId}-child` });
  upsertSearchAttributes([{ key: PAYMENT_STATUS, value: 'story_told' }]);
  return continueAsNew<typeof storyWorkflow>({ ...input, round: input.round + 1 });
}

/** Fails with type STORY_FAILED. */
export async function failingWorkflow(): Promise<void> {
  throw ApplicationFailure.nonRetryable('the story ends badly', 'STORY_FAILED');
}

/** Retries an activity until the test terminates it. */
export async function stuckWorkflow(): Promise<void> {
  await stuck();
}

/** Fails its workflow task (an unexpected error, not a workflow failure), retried until the test terminates it. */
export async function brokenWorkflow(): Promise<void> {
  throw new TypeError('a bug in the workflow code');
}
