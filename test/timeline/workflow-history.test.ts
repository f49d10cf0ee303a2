/**
 * The timeline's workflow source against the run's real Temporal dev server, with the small workflows of
 * test/timeline/workflows.ts (bundled here) on a task queue of this file's own: every mapped kind in order, with its
 * attempts and failure types, across a continue-as-new; secrets redacted wherever they sit; the bounds; an unknown
 * or deleted workflow answers `gone`; an unreachable Temporal answers `unavailable` within the deadline.
 */
import { Context } from '@temporalio/activity';
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger, makeTelemetryFilterString, Runtime, Worker } from '@temporalio/worker';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { connectTemporal, type TemporalHandle } from '../../src/temporal/client';
import { workflowHistoryEntries, type WorkflowHistory } from '../../src/timeline/workflow-history';
import type { TimelineEntry } from '../../src/timeline/types';
import { readClusterState } from '../support/cluster';
import { approveUpdate, brokenWorkflow, failingWorkflow, pokeSignal, storyWorkflow, stuckWorkflow, type StoryActivities, type StoryInput } from './workflows';

const UI = 'http://ui.test:8233';

/** Every secret the workflows see; none may reach a timeline entry. */
const SECRETS = {
  input_password: 'PASSWORD-IN-WORKFLOW-INPUT',
  input_card: 'CARD-IN-WORKFLOW-INPUT',
  input_sealed: 'v2.k1.SEALEDIV.SEALEDCIPHERTEXT.SEALEDTAG',
  signal_token: 'TOKEN-IN-SIGNAL',
  rejected_otp: 'OTP-IN-REJECTED-UPDATE',
  accepted_otp: 'OTP-IN-UPDATE',
  activity_secret: 'SECRET-IN-ACTIVITY-INPUT',
  activity_card: 'CARD-IN-ACTIVITY-RESULT',
};

const activities: StoryActivities = {
  async flaky() {
    if (Context.current().info.attempt < 3) throw ApplicationFailure.retryable('upstream hiccup', 'HICCUP');
    return { ok: true, card_number: SECRETS.activity_card };
  },
  async doomed() {
    throw ApplicationFailure.nonRetryable('declined by the bank', 'DECLINED');
  },
  async localStep() {
    return { recorded: true };
  },
  async localRefused() {
    throw ApplicationFailure.nonRetryable('refused here', 'LOCAL_REFUSED');
  },
  async stuck() {
    throw ApplicationFailure.retryable('upstream down', 'UPSTREAM_DOWN');
  },
};

let env: TestWorkflowEnvironment;
let client: Client;
let temporal: TemporalHandle;
let worker: Worker;
let running: Promise<void>;
const taskQueue = `timeline-${randomBytes(6).toString('hex')}`;
const started: string[] = [];

beforeAll(async () => {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR' }), forward: {} } } });
  } catch {
    // Installed by an earlier file of this run.
  }
  const address = process.env.PAYMENTS_TEST_TEMPORAL_ADDRESS!;
  const namespace = readClusterState()?.namespace ?? 'default';
  env = await TestWorkflowEnvironment.createFromExistingServer({ address, namespace });
  // The platform's client: its close waits for the calls in flight (a read abandoned at its deadline among them),
  // whose retry timers would otherwise fire after the close and throw in a later test file.
  temporal = await connectTemporal(address, namespace, taskQueue);
  client = temporal.client;
  const bundle = await bundleWorkflowCode({ workflowsPath: require.resolve('./workflows'), logger: new DefaultLogger('ERROR') });
  worker = await Worker.create({ connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue, workflowBundle: bundle, activities });
  running = worker.run();
});

afterAll(async () => {
  try {
    for (const workflowId of started) {
      await client.workflow
        .getHandle(workflowId)
        .terminate('test file done')
        .catch(() => undefined);
    }
  } finally {
    worker?.shutdown();
    await running;
    await temporal?.close();
    await env?.teardown();
  }
});

function id(prefix: string): string {
  const workflowId = `${prefix}-${randomBytes(6).toString('hex').toUpperCase()}`;
  started.push(workflowId);
  return workflowId;
}

const storyInput = (): StoryInput => ({ round: 0, password: SECRETS.input_password, card_number: SECRETS.input_card, note: SECRETS.input_sealed });

/** Runs the story to its end (both runs); the rejected Update is sent before the accepted one. */
async function tellStory(): Promise<string> {
  const workflowId = id('STORY');
  const handle = await client.workflow.start(storyWorkflow, { taskQueue, workflowId, args: [storyInput()] });
  await handle.signal(pokeSignal, { token: SECRETS.signal_token, reason: 'nudge' });
  await expect(handle.executeUpdate(approveUpdate, { args: [{ approved: false, otp: SECRETS.rejected_otp }] })).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
  expect(await handle.executeUpdate(approveUpdate, { args: [{ approved: true, otp: SECRETS.accepted_otp }] })).toBe('approved');
  expect(await handle.result()).toEqual({ done: true, password: SECRETS.input_password });
  return workflowId;
}

function ok(answer: Awaited<ReturnType<typeof workflowHistoryEntries>>): WorkflowHistory {
  if (answer.state !== 'ok') throw new Error(`expected entries, got ${JSON.stringify(answer)}`);
  return answer;
}

const kinds = (entries: TimelineEntry[]) => entries.map((entry) => entry.kind);
const only = (entries: TimelineEntry[], kind: string) => entries.filter((entry) => entry.kind === kind);

/** Whether `wanted` appears in `list` in this order (other items between allowed). */
function inOrder(list: string[], wanted: string[]): boolean {
  let next = 0;
  for (const item of list) if (item === wanted[next]) next++;
  return next === wanted.length;
}

describe('workflowHistoryEntries', () => {
  let story: string;
  let history: WorkflowHistory;

  beforeAll(async () => {
    story = await tellStory();
    history = ok(await workflowHistoryEntries(client, story, { deadlineSeconds: 10, uiUrl: UI, failureMessages: true }));
  });

  it('reads every run of the workflow id, oldest first, across a continue-as-new', () => {
    expect(history.runs.map((run) => run.status)).toEqual(['continued_as_new', 'completed']);
    expect(history.runs_left_out).toBe(0);
    expect(history.runs.every((run) => !run.truncated && run.events_read > 0)).toBe(true);
    const [first, second] = history.runs;
    const cut = only(history.entries, 'workflow.continued_as_new');
    expect(cut).toHaveLength(1);
    expect(cut[0]!.details).toMatchObject({ run_id: first!.run_id, new_run_id: second!.run_id });
    const starts = only(history.entries, 'workflow.started');
    expect(starts.map((entry) => entry.details.run_id)).toEqual([first!.run_id, second!.run_id]);
    expect(starts[1]!.details.continued_from_run_id).toBe(first!.run_id);
    expect(starts[0]!.summary).toBe('storyWorkflow started');
  });

  it('maps each meaningful event to its kind, in order', () => {
    const all = kinds(history.entries);
    expect(all[0]).toBe('workflow.started');
    expect(inOrder(all, ['timer.started', 'timer.started', 'timer.fired', 'timer.canceled'])).toBe(true);
    expect(inOrder(all, ['update.accepted', 'update.completed', 'activity.scheduled'])).toBe(true);
    expect(only(history.entries, 'signal.received')).toHaveLength(1);
    // From the first activity on, the story runs one step after another.
    expect(all.slice(all.indexOf('activity.scheduled'))).toEqual([
      'activity.scheduled',
      'activity.started',
      'activity.completed',
      'activity.scheduled',
      'activity.started',
      'activity.failed',
      'activity.completed',
      'activity.failed',
      'child.initiated',
      'child.started',
      'child.completed',
      'search_attributes.upserted',
      'workflow.continued_as_new',
      'workflow.started',
      'workflow.completed',
    ]);
    // Workflow-task bookkeeping is not part of the story.
    expect(all.some((kind) => kind.startsWith('workflow_task.'))).toBe(false);
  });

  it('gives timers their durations, Updates and signals their names, children their ids', () => {
    const timers = only(history.entries, 'timer.started');
    expect(timers.map((entry) => entry.details.fire_in_seconds)).toEqual([3600, 0.01]);
    expect(timers[0]!.summary).toBe(`timer ${String(timers[0]!.details.timer_id)} started: fires in 3600 s`);
    expect(only(history.entries, 'timer.fired')[0]!.details.timer_id).toBe(timers[1]!.details.timer_id);
    expect(only(history.entries, 'timer.canceled')[0]!.details.timer_id).toBe(timers[0]!.details.timer_id);
    expect(only(history.entries, 'update.accepted')[0]).toMatchObject({ summary: 'Update approve accepted', details: { name: 'approve', args: { approved: true } } });
    expect(only(history.entries, 'update.completed')[0]).toMatchObject({ summary: 'Update approve completed', details: { name: 'approve', result: 'approved' } });
    expect(only(history.entries, 'signal.received')[0]).toMatchObject({ summary: 'signal poke received', details: { name: 'poke', args: { reason: 'nudge' } } });
    expect(only(history.entries, 'child.completed')[0]).toMatchObject({ details: { workflow_type: 'childWorkflow', child_workflow_id: `${story}-child`, result: 'hello child' } });
    expect(only(history.entries, 'search_attributes.upserted')[0]).toMatchObject({ summary: 'PaymentStatus → story_told', details: { search_attributes: { PaymentStatus: 'story_told' } } });
  });

  it('gives activities their attempt and failure type, local ones from their markers', () => {
    const activityEntries = history.entries.filter((entry) => entry.kind.startsWith('activity.'));
    const flaky = activityEntries.filter((entry) => entry.details.activity_type === 'flaky');
    expect(flaky.map((entry) => [entry.kind, entry.details.attempt])).toEqual([
      ['activity.scheduled', undefined],
      ['activity.started', 3],
      ['activity.completed', 3],
    ]);
    expect(flaky[1]!.details.last_failure).toEqual({ type: 'HICCUP', message: 'upstream hiccup' });
    expect(flaky[1]!.summary).toBe('activity flaky started (attempt 3) after a failure: HICCUP');
    const doomed = activityEntries.filter((entry) => entry.details.activity_type === 'doomed');
    expect(doomed.at(-1)).toMatchObject({
      kind: 'activity.failed',
      summary: 'activity doomed failed: DECLINED',
      details: { attempt: 1, failure: { type: 'DECLINED', non_retryable: true, message: 'declined by the bank' }, retry_state: 'non_retryable_failure' },
    });
    expect(activityEntries.filter((entry) => entry.details.local)).toMatchObject([
      { kind: 'activity.completed', summary: 'local activity localStep completed', details: { activity_type: 'localStep', attempt: 1, result: { recorded: true } } },
      { kind: 'activity.failed', summary: 'local activity localRefused failed: LOCAL_REFUSED', details: { activity_type: 'localRefused', failure: { type: 'LOCAL_REFUSED', non_retryable: true } } },
    ]);
  });

  it('never copies a secret: fields named as secrets and sealed values under any name are redacted', () => {
    const text = JSON.stringify(history);
    for (const secret of Object.values(SECRETS)) expect(text).not.toContain(secret);
    // The fields are there, redacted (the check above is not vacuous).
    expect(history.entries[0]!.details.input).toEqual({ round: 0, password: '[redacted]', card_number: '[redacted]', note: '[redacted]' });
    expect(only(history.entries, 'signal.received')[0]!.details.args).toEqual({ token: '[redacted]', reason: 'nudge' });
    expect(only(history.entries, 'update.accepted')[0]!.details.args).toEqual({ approved: true, otp: '[redacted]' });
    expect(only(history.entries, 'activity.scheduled')[0]!.details.input).toEqual({ secret: '[redacted]' });
    expect(only(history.entries, 'activity.completed')[0]!.details.result).toEqual({ ok: true, card_number: '[redacted]' });
    expect(only(history.entries, 'workflow.completed')[0]!.details.result).toEqual({ done: true, password: '[redacted]' });
    for (const entry of history.entries) expect(entry.summary).not.toMatch(/redacted|PASSWORD|CARD-|TOKEN-|OTP-|SECRET-/);
  });

  it('does not show the rejected Update as accepted (Temporal keeps no history of a rejection)', () => {
    // A validator's rejection is answered to the caller and never written to the history: the request journal, not
    // this source, tells of it.
    expect(only(history.entries, 'update.accepted')).toHaveLength(1);
    expect(only(history.entries, 'update.rejected')).toHaveLength(0);
  });

  it('stamps every entry with its time (ISO 8601 UTC, milliseconds), in order, its ids and its Web UI link', () => {
    const times = history.entries.map((entry) => entry.at);
    for (const at of times) expect(at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect([...times].sort()).toEqual(times);
    for (const entry of history.entries) {
      expect(entry.source).toBe('workflow');
      // JSON-safe as it is: what JSON would drop or change is not there.
      expect(JSON.parse(JSON.stringify(entry.details))).toStrictEqual(entry.details);
      expect(entry.link).toBe(`${UI}/namespaces/default/workflows/${encodeURIComponent(story)}/${String(entry.details.run_id)}/history/events/${String(entry.details.event_id)}`);
      expect(entry.details.workflow_id).toBe(story);
    }
  });

  it('carries no link without a UI URL, and failure types without their messages unless asked', async () => {
    const plain = ok(await workflowHistoryEntries(client, story, { deadlineSeconds: 10 }));
    expect(plain.entries.some((entry) => 'link' in entry)).toBe(false);
    expect(JSON.stringify(plain)).not.toContain('declined by the bank');
    expect(only(plain.entries, 'activity.failed')[0]!.details.failure).toEqual({ type: 'DECLINED', non_retryable: true });
  });

  it('bounds the read: the newest runs first, at most N events each', async () => {
    const newest = ok(await workflowHistoryEntries(client, story, { deadlineSeconds: 10, maxRuns: 1 }));
    expect(newest.runs.map((run) => run.status)).toEqual(['completed']);
    expect(newest.runs_left_out).toBe(1);
    expect(kinds(newest.entries)).toEqual(['workflow.started', 'workflow.completed']);

    const short = ok(await workflowHistoryEntries(client, story, { deadlineSeconds: 10, maxEventsPerRun: 5 }));
    expect(short.runs.map((run) => [run.events_read, run.truncated])).toEqual([
      [5, true],
      [5, false],
    ]);
    expect(short.entries.length).toBeLessThan(history.entries.length);
    expect(short.entries[0]!.kind).toBe('workflow.started');
  });

  it('tells a failed workflow by its failure type', async () => {
    const workflowId = id('FAILING');
    await expect(client.workflow.execute(failingWorkflow, { taskQueue, workflowId })).rejects.toThrow();
    const failed = ok(await workflowHistoryEntries(client, workflowId, { deadlineSeconds: 10 }));
    expect(failed.entries.at(-1)).toMatchObject({ kind: 'workflow.failed', summary: 'workflow failed: STORY_FAILED', details: { failure: { type: 'STORY_FAILED', non_retryable: true } } });
  });

  it('shows the attempt of an activity still retrying, then the termination with its reason', async () => {
    const workflowId = id('STUCK');
    const handle = await client.workflow.start(stuckWorkflow, { taskQueue, workflowId });
    let pending: TimelineEntry | undefined;
    for (let tries = 0; tries < 200 && !pending; tries++) {
      const read = ok(await workflowHistoryEntries(client, workflowId, { deadlineSeconds: 10 }));
      pending = read.entries.find((entry) => entry.kind === 'activity.pending' && Number(entry.details.attempt) >= 2);
      if (!pending) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(pending).toMatchObject({ details: { activity_type: 'stuck', last_failure: { type: 'UPSTREAM_DOWN' } } });
    expect(pending!.summary).toMatch(/^activity stuck (running|waiting), attempt \d+ after a failure: UPSTREAM_DOWN$/);
    await handle.terminate('operator gave up');
    const ended = ok(await workflowHistoryEntries(client, workflowId, { deadlineSeconds: 10 }));
    expect(ended.entries.at(-1)).toMatchObject({ kind: 'workflow.terminated', details: { reason: 'operator gave up' } });
    expect(only(ended.entries, 'activity.pending')).toHaveLength(0);
  });

  it('answers gone for a workflow id Temporal does not know', async () => {
    expect(await workflowHistoryEntries(client, `NEVER-STARTED-${randomBytes(4).toString('hex')}`, { deadlineSeconds: 10 })).toEqual({
      source: 'workflow',
      state: 'gone',
      reason: expect.stringContaining('gone'),
    });
  });

  it('tells a failing workflow task by its cause and failure type', async () => {
    const workflowId = id('BROKEN');
    await client.workflow.start(brokenWorkflow, { taskQueue, workflowId });
    let failedTask: TimelineEntry | undefined;
    for (let tries = 0; tries < 200 && !failedTask; tries++) {
      const read = ok(await workflowHistoryEntries(client, workflowId, { deadlineSeconds: 10, failureMessages: true }));
      failedTask = read.entries.find((entry) => entry.kind === 'workflow_task.failed');
      if (!failedTask) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(failedTask).toMatchObject({
      summary: 'workflow task failed: workflow_worker_unhandled_failure',
      details: { cause: 'workflow_worker_unhandled_failure', failure: { message: 'a bug in the workflow code' } },
    });
  });

  describe('Temporal unreachable', () => {
    const servers: net.Server[] = [];
    const sockets: net.Socket[] = [];
    afterAll(async () => {
      // Its connections first: a server closes once they have ended.
      for (const socket of sockets) socket.destroy();
      for (const server of servers) await new Promise((resolve) => server.close(resolve));
    });

    /** A TCP port that accepts connections and never answers: the read waits until its deadline. */
    async function blackHole(): Promise<string> {
      const server = net.createServer((socket) => sockets.push(socket));
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    }

    /** A port nothing listens on. */
    async function closedPort(): Promise<string> {
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as net.AddressInfo).port;
      await new Promise((resolve) => server.close(resolve));
      return `127.0.0.1:${port}`;
    }

    // The test's own timeout is the bound: without the deadline the read against a black hole never ends.
    it('answers unavailable when the server never answers, at its deadline', async () => {
      // Without the SDK's retries, as below: nothing it scheduled may outlive the connection closed below.
      const connection = Connection.lazy({ address: await blackHole(), interceptors: [] });
      try {
        const answer = await workflowHistoryEntries(new Client({ connection }), 'PAYIN-ANY', { deadlineSeconds: 0.5 });
        expect(answer).toEqual({ source: 'workflow', state: 'unavailable', reason: 'Temporal did not answer within 0.5 s' });
      } finally {
        await connection.close();
      }
    }, 15_000);

    it('answers unavailable when nothing listens at the address', async () => {
      // Without the SDK's retries: a retry it scheduled would otherwise outlive the connection closed below.
      const connection = Connection.lazy({ address: await closedPort(), interceptors: [] });
      try {
        expect(await workflowHistoryEntries(new Client({ connection }), 'PAYIN-ANY', { deadlineSeconds: 1 })).toMatchObject({ source: 'workflow', state: 'unavailable' });
      } finally {
        await connection.close();
      }
    }, 15_000);
  });
});
