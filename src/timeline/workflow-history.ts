/**
 * The timeline's workflow source: the history of every run of a workflow id, read from Temporal, as timeline entries
 * (kinds in history-events.ts). A payment's workflow id is its business reference; one id may have several runs (a
 * continue-as-new, a late payin's new run after the first completed), each read and joined in time order.
 *
 * Bounded: at most `maxRuns` runs (the newest; older ones are left out and counted) and `maxEventsPerRun` events of
 * each (the first ones; a run cut short says so), every Temporal call under one deadline. It never throws for
 * Temporal's sake: a workflow id Temporal does not know (never started, or past the namespace's retention) answers
 * `gone`, and Temporal not answering within the deadline (or answering an error) answers `unavailable`, so the
 * timeline shows its other sources and says why this one is missing.
 */
import {
  isGrpcCancelledError,
  isGrpcDeadlineError,
  isGrpcServiceError,
  NamespaceNotFoundError,
  ServiceError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { failureTypeOf, historyEntries, temporalUiLink, type RunContext } from './history-events';
import type { TimelineEntry, TimelineSourceStatus } from './types';

export interface WorkflowHistoryOptions {
  /** The longest the whole read may take, seconds (fractions allowed); every Temporal call ends by then. */
  deadlineSeconds: number;
  /** TEMPORAL_UI_URL: with it, every entry links to its run's page in the Temporal Web UI. */
  uiUrl?: string;
  /** Events read per run at most (default 1000); a longer run's later events are left out. */
  maxEventsPerRun?: number;
  /** Runs read at most (default 10), the newest first; older runs are left out. */
  maxRuns?: number;
  /** Failure messages in the details (operators); without, failure types only (a payment's owner). Default false. */
  failureMessages?: boolean;
}

/** One run read, oldest first in `WorkflowHistory.runs`. */
export interface WorkflowRunSummary {
  run_id: string;
  /** `running`, `completed`, `failed`, `canceled`, `terminated`, `continued_as_new`, `timed_out`, or `unknown`. */
  status: string;
  /** ISO 8601 UTC, or null when only the history named the run. */
  started_at: string | null;
  closed_at: string | null;
  events_read: number;
  /** More events exist than `maxEventsPerRun`: the run's later events are not in the entries. */
  truncated: boolean;
}

export interface WorkflowHistory {
  state: 'ok';
  /** In time order (runs oldest first, each run's events in history order). */
  entries: TimelineEntry[];
  runs: WorkflowRunSummary[];
  /** Older runs known but not read (past `maxRuns`). */
  runs_left_out: number;
}

export const DEFAULT_MAX_EVENTS_PER_RUN = 1000;
export const DEFAULT_MAX_RUNS = 10;
/** Runs a visibility listing returns at most (a payment's workflow id has a handful). */
const LISTED_RUNS = 100;
const HISTORY_PAGE = 1000;
const GRPC_NOT_FOUND = 5;

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const { enums } = temporal.api;

/** The source's answer when the workflow id is unknown to Temporal. */
function gone(): TimelineSourceStatus {
  return { source: 'workflow', state: 'gone', reason: 'the workflow history is gone (past the Temporal namespace retention, or never started)' };
}

function unavailable(reason: string): TimelineSourceStatus {
  return { source: 'workflow', state: 'unavailable', reason };
}

/** Thrown inside the read when the deadline passes (the pending call is abandoned). */
class DeadlinePassed extends Error {}

interface RunFound {
  runId: string;
  status: string;
  startMs?: number;
  closeMs?: number;
}

function statusName(status: number | null | undefined): string {
  const name = status ? enums.v1.WorkflowExecutionStatus[status] : undefined;
  return name ? name.replace('WORKFLOW_EXECUTION_STATUS_', '').toLowerCase() : 'unknown';
}

function iso(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}

/** A workflow id a visibility query can quote as it is (payment references always can). */
function quotable(workflowId: string): boolean {
  return /^[\x20-\x7e]+$/.test(workflowId) && !/["\\]/.test(workflowId);
}

/** The workflow's runs Temporal knows: the newest run (describe) and every run the visibility store lists. */
async function findRuns(client: Client, workflowId: string): Promise<{ runs: Map<string, RunFound>; latest?: WorkflowExecutionDescription }> {
  const runs = new Map<string, RunFound>();
  // Both asked at once: a timeline's latency is the slower of the two, not their sum.
  const describing = client.workflow
    .getHandle(workflowId)
    .describe()
    .catch((error: unknown) => {
      if (error instanceof WorkflowNotFoundError) return undefined;
      throw error;
    });
  const listing = quotable(workflowId)
    ? client.workflowService.listWorkflowExecutions({ namespace: client.options.namespace, pageSize: LISTED_RUNS, query: `WorkflowId = "${workflowId}"` })
    : undefined;
  // Neither rejection goes unobserved when the other throws first.
  listing?.catch(() => undefined);
  const latest: WorkflowExecutionDescription | undefined = await describing;
  if (latest) runs.set(latest.runId, { runId: latest.runId, status: latest.status.name.toLowerCase(), startMs: latest.startTime.getTime(), closeMs: latest.closeTime?.getTime() });
  if (listing) {
    const listed = await listing;
    for (const execution of listed.executions ?? []) {
      const runId = execution.execution?.runId;
      if (!runId || runs.has(runId)) continue;
      runs.set(runId, { runId, status: statusName(execution.status), startMs: optionalTsToMs(execution.startTime), closeMs: optionalTsToMs(execution.closeTime) });
    }
  }
  return { runs, latest };
}

/** Up to `max` events of one run, page by page; `undefined` when the run's history is gone. */
async function readRun(client: Client, workflowId: string, runId: string, max: number): Promise<{ events: HistoryEvent[]; truncated: boolean } | undefined> {
  const events: HistoryEvent[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    let page: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryResponse;
    try {
      page = await client.workflowService.getWorkflowExecutionHistory({
        namespace: client.options.namespace,
        execution: { workflowId, runId },
        maximumPageSize: Math.min(HISTORY_PAGE, max - events.length),
        nextPageToken,
      });
    } catch (error) {
      if (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND) return undefined;
      throw error;
    }
    events.push(...(page.history?.events ?? []));
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken && events.length < max);
  return { events: events.slice(0, max), truncated: events.length > max || Boolean(nextPageToken) };
}

/** An attempt of an activity still under way (retrying, or waiting for its next attempt), from the run's description. */
function pendingActivityEntries(latest: WorkflowExecutionDescription, context: RunContext): TimelineEntry[] {
  const pending = latest.raw.pendingActivities ?? [];
  return pending.map((activity) => {
    const type = activity.activityType?.name ?? 'activity';
    const attempt = activity.attempt ?? 1;
    const lastFailure = activity.lastFailure ? failureTypeOf(activity.lastFailure) : undefined;
    const state = (enums.v1.PendingActivityState[activity.state ?? 0] ?? 'unspecified').replace('PENDING_ACTIVITY_STATE_', '').toLowerCase();
    const atMs = optionalTsToMs(activity.lastAttemptCompleteTime) ?? optionalTsToMs(activity.lastStartedTime) ?? optionalTsToMs(activity.scheduledTime) ?? latest.startTime.getTime();
    const nextAttemptMs = optionalTsToMs(activity.nextAttemptScheduleTime);
    return {
      at: new Date(atMs).toISOString(),
      source: 'workflow' as const,
      kind: 'activity.pending',
      summary: `activity ${type} ${state === 'started' ? 'running' : 'waiting'}, attempt ${attempt}${lastFailure ? ` after a failure: ${lastFailure}` : ''}`,
      details: {
        activity_type: type,
        activity_id: activity.activityId ?? null,
        attempt,
        state,
        ...(lastFailure ? { last_failure: { type: lastFailure } } : {}),
        ...(nextAttemptMs !== undefined ? { next_attempt_at: new Date(nextAttemptMs).toISOString() } : {}),
        workflow_id: context.workflowId,
        run_id: context.runId,
      },
      ...(context.uiUrl ? { link: temporalUiLink(context.uiUrl, context.namespace, context.workflowId, context.runId) } : {}),
    };
  });
}

async function readHistories(client: Client, workflowId: string, options: WorkflowHistoryOptions): Promise<WorkflowHistory | TimelineSourceStatus> {
  const maxRuns = options.maxRuns ?? DEFAULT_MAX_RUNS;
  const maxEvents = options.maxEventsPerRun ?? DEFAULT_MAX_EVENTS_PER_RUN;
  const { runs, latest } = await findRuns(client, workflowId);
  // Newest first: the cut keeps the newest runs.
  const queue = [...runs.values()].sort((a, b) => (b.startMs ?? 0) - (a.startMs ?? 0));
  const histories: Array<{ run: RunFound; events: HistoryEvent[]; truncated: boolean }> = [];
  const seen = new Set(queue.map((run) => run.runId));
  let leftOut = 0;
  for (let index = 0; index < queue.length; index++) {
    const run = queue[index]!;
    if (histories.length >= maxRuns) {
      leftOut++;
      continue;
    }
    const history = await readRun(client, workflowId, run.runId, maxEvents);
    if (!history) continue;
    histories.push({ run, ...history });
    // A run continued from another the visibility store does not list yet: read that one too.
    const previous = history.events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (previous && !seen.has(previous)) {
      seen.add(previous);
      queue.splice(index + 1, 0, { runId: previous, status: 'unknown' });
    }
  }
  if (histories.length === 0) return gone();

  const namespace = client.options.namespace;
  const context = (runId: string): RunContext => ({ namespace, workflowId, runId, uiUrl: options.uiUrl, failureMessages: options.failureMessages ?? false });
  const chronological = histories.reverse();
  const entries = chronological.flatMap(({ run, events }) => historyEntries(events, context(run.runId)));
  if (latest && latest.status.name === 'RUNNING' && chronological.some(({ run }) => run.runId === latest.runId)) {
    entries.push(...pendingActivityEntries(latest, context(latest.runId)));
  }
  // Stable: entries of one instant keep their history order.
  entries.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  return {
    state: 'ok',
    entries,
    runs: chronological.map(({ run, events, truncated }) => ({
      run_id: run.runId,
      status: run.status,
      started_at: iso(run.startMs),
      closed_at: iso(run.closeMs),
      events_read: events.length,
      truncated,
    })),
    runs_left_out: leftOut,
  };
}

/**
 * The timeline entries of every run of `workflowId` (source `workflow`), read through `client` within
 * `options.deadlineSeconds`.
 * @returns the entries and the runs read; `{ state: 'gone' }` when Temporal knows no run of the id (never started,
 *   or past the namespace's retention); `{ state: 'unavailable' }` when Temporal does not answer within the deadline,
 *   answers an error, or does not know the client's namespace
 * @throws only what is not Temporal's doing (a bug in the mapping)
 */
export async function workflowHistoryEntries(client: Client, workflowId: string, options: WorkflowHistoryOptions): Promise<WorkflowHistory | TimelineSourceStatus> {
  const ms = Math.max(1, options.deadlineSeconds * 1000);
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(new DeadlinePassed());
    }, ms);
  });
  const reading = client.connection.withAbortSignal(abort.signal, () => client.connection.withDeadline(Date.now() + ms, () => readHistories(client, workflowId, options)));
  // Abandoned at the deadline: its late rejection (the aborted call) is expected.
  reading.catch(() => undefined);
  try {
    return await Promise.race([reading, expired]);
  } catch (error) {
    const cause = (error as { cause?: unknown } | undefined)?.cause;
    const timedOut = [error, cause].some((candidate) => isGrpcDeadlineError(candidate) || isGrpcCancelledError(candidate));
    if (error instanceof DeadlinePassed || timedOut) return unavailable(`Temporal did not answer within ${options.deadlineSeconds} s`);
    if (error instanceof NamespaceNotFoundError) return unavailable('the Temporal namespace is unknown');
    if (error instanceof ServiceError || isGrpcServiceError(error)) return unavailable('Temporal could not be read');
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
