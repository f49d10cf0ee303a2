/**
 * A workflow run's history events as timeline entries (source `workflow`). Pure: the reading is in
 * workflow-history.ts. Only what a reader of a payment's story needs becomes an entry; workflow-task bookkeeping,
 * patch markers and properties do not. Kinds:
 *
 *   workflow.started, workflow.completed, workflow.failed, workflow.timed_out, workflow.canceled,
 *   workflow.cancel_requested, workflow.terminated, workflow.continued_as_new, workflow_task.failed,
 *   workflow_task.timed_out
 *   timer.started, timer.fired, timer.canceled
 *   update.admitted, update.accepted, update.rejected, update.completed, update.failed
 *   signal.received
 *   activity.scheduled, activity.started, activity.completed, activity.failed, activity.timed_out,
 *   activity.cancel_requested, activity.canceled (a local activity, recorded as a marker: activity.completed or
 *   activity.failed with `local: true`); activity.pending (workflow-history.ts: an attempt still under way)
 *   child.initiated, child.start_failed, child.started, child.completed, child.failed, child.canceled,
 *   child.timed_out, child.terminated
 *   external.signal_initiated, external.signaled, external.signal_failed, external.cancel_initiated,
 *   external.cancel_requested, external.cancel_failed
 *   search_attributes.upserted
 *
 * Temporal writes one `activity.started` per activity, for its last attempt (with the attempt number and the
 * previous attempt's failure), once that attempt ended: earlier attempts leave no event of their own. Payloads
 * (inputs, results, signal and Update arguments) are decoded and redacted (redact.ts); a failure gives its type, and
 * its message only with `failureMessages` (operators: the message may name internals a payment's owner must not see).
 */
import type { Payload } from '@temporalio/common';
import { optionalTsToMs, tsToDate } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { decodePayload, decodePayloads, redact } from './redact';
import type { TimelineEntry } from './types';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
type Failure = temporal.api.failure.v1.IFailure;
const { enums } = temporal.api;

/** The run an event belongs to, and how to present it. */
export interface RunContext {
  namespace: string;
  workflowId: string;
  runId: string;
  /** TEMPORAL_UI_URL: with it every entry links to its run's page in the Web UI, at its event. */
  uiUrl?: string;
  /** Copy failure messages into `details.failure.message` (operators); without, types only. */
  failureMessages: boolean;
}

/** The name of the Temporal SDK core's local-activity marker. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';
const MAX_MESSAGE = 300;

/**
 * The Web UI page of a workflow run: `<ui>/namespaces/<ns>/workflows/<workflowId>/<runId>/history`, and with
 * `eventId` the event's own page under it (`…/history/events/<eventId>`, Temporal UI 2.x).
 */
export function temporalUiLink(uiUrl: string, namespace: string, workflowId: string, runId: string, eventId?: number): string {
  const run = `${uiUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}/${encodeURIComponent(runId)}/history`;
  return eventId === undefined ? run : `${run}/events/${eventId}`;
}

/** A protobuf int64 (Long, number or string) as a number. */
function int(value: unknown): number {
  if (value === null || value === undefined) return 0;
  return typeof value === 'number' ? value : Number(String(value));
}

/** A protobuf Duration in seconds (fractions kept), or undefined. */
function seconds(duration: temporal.api.history.v1.ITimerStartedEventAttributes['startToFireTimeout']): number | undefined {
  const ms = optionalTsToMs(duration);
  return ms === undefined ? undefined : ms / 1000;
}

/** `RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED` → `maximum_attempts_reached`; 0 / unknown → undefined. */
function enumName(table: Record<number, string>, value: number | null | undefined, prefix: string): string | undefined {
  if (!value) return undefined;
  const name = table[value];
  return name ? name.replace(prefix, '').toLowerCase() : String(value);
}

/** The type a failure names: an ApplicationFailure's type, else its kind (`timeout:start_to_close`, `canceled`, …). */
export function failureTypeOf(failure: Failure | null | undefined): string | undefined {
  if (!failure) return undefined;
  if (failure.applicationFailureInfo) return failure.applicationFailureInfo.type || 'ApplicationFailure';
  if (failure.timeoutFailureInfo) return `timeout:${enumName(enums.v1.TimeoutType, failure.timeoutFailureInfo.timeoutType, 'TIMEOUT_TYPE_') ?? 'unknown'}`;
  if (failure.canceledFailureInfo) return 'canceled';
  if (failure.terminatedFailureInfo) return 'terminated';
  if (failure.serverFailureInfo) return 'server';
  // An activity's or child's failure wraps the cause that names the type.
  if (failure.activityFailureInfo || failure.childWorkflowExecutionFailureInfo) return failureTypeOf(failure.cause) ?? 'failure';
  return 'failure';
}

/** A failure as the details carry it: its type, non-retryable flag, message (with `failureMessages`) and cause's type. */
function failureDetails(failure: Failure | null | undefined, run: RunContext): Record<string, unknown> | undefined {
  if (!failure) return undefined;
  const details: Record<string, unknown> = { type: failureTypeOf(failure) };
  if (failure.applicationFailureInfo?.nonRetryable) details.non_retryable = true;
  if (run.failureMessages && failure.message) details.message = redact(failure.message.slice(0, MAX_MESSAGE));
  const cause = failure.activityFailureInfo || failure.childWorkflowExecutionFailureInfo ? failure.cause?.cause : failure.cause;
  if (cause) details.cause_type = failureTypeOf(cause);
  return details;
}

/** ` (attempt 3)` for a retried attempt, nothing for a first one. */
function attemptText(attempt: number | undefined): string {
  return attempt && attempt > 1 ? ` (attempt ${attempt})` : '';
}

/** The search attributes of an upsert or a start, decoded (JSON payloads), amounts as decimal strings. */
function searchAttributesOf(fields: Record<string, Payload> | null | undefined): Record<string, unknown> {
  const decoded: Record<string, unknown> = {};
  for (const [name, payload] of Object.entries(fields ?? {})) {
    const value = decodePayload(payload, name);
    decoded[name] = Array.isArray(value) && value.length === 1 ? value[0] : value;
  }
  return decoded;
}

/** What the earlier events of the run said, for the later ones that only point back at them. */
interface RunMemory {
  activities: Map<number, { type: string; id: string; attempt?: number }>;
  updates: Map<number, string>;
  children: Map<number, { type: string; id: string }>;
  externals: Map<number, string>;
}

/** The entry's kind, summary and details for one event, or undefined for an event the timeline leaves out. */
type Mapped = { kind: string; summary: string; details: Record<string, unknown> } | undefined;

function workflowEvent(event: HistoryEvent, run: RunContext): Mapped {
  const started = event.workflowExecutionStartedEventAttributes;
  if (started) {
    const type = started.workflowType?.name ?? 'workflow';
    const continued = started.continuedExecutionRunId || undefined;
    return {
      kind: 'workflow.started',
      summary: `${type} started${continued ? ` (continued from run ${continued})` : ''}${attemptText(started.attempt ?? undefined)}`,
      details: {
        workflow_type: type,
        task_queue: started.taskQueue?.name ?? null,
        input: decodePayloads(started.input?.payloads),
        attempt: started.attempt ?? 1,
        ...(continued ? { continued_from_run_id: continued } : {}),
        ...(started.firstExecutionRunId && started.firstExecutionRunId !== run.runId ? { first_run_id: started.firstExecutionRunId } : {}),
        ...(started.searchAttributes?.indexedFields ? { search_attributes: searchAttributesOf(started.searchAttributes.indexedFields) } : {}),
      },
    };
  }
  const completed = event.workflowExecutionCompletedEventAttributes;
  if (completed) return { kind: 'workflow.completed', summary: 'workflow completed', details: { result: decodePayloads(completed.result?.payloads) } };
  const failed = event.workflowExecutionFailedEventAttributes;
  if (failed) {
    const failure = failureDetails(failed.failure, run);
    return { kind: 'workflow.failed', summary: `workflow failed: ${failure?.type ?? 'failure'}`, details: { failure, retry_state: enumName(enums.v1.RetryState, failed.retryState, 'RETRY_STATE_') } };
  }
  const timedOut = event.workflowExecutionTimedOutEventAttributes;
  if (timedOut) return { kind: 'workflow.timed_out', summary: 'workflow timed out', details: { retry_state: enumName(enums.v1.RetryState, timedOut.retryState, 'RETRY_STATE_') } };
  if (event.workflowExecutionCanceledEventAttributes) return { kind: 'workflow.canceled', summary: 'workflow canceled', details: {} };
  const cancelRequested = event.workflowExecutionCancelRequestedEventAttributes;
  if (cancelRequested) return { kind: 'workflow.cancel_requested', summary: 'workflow cancellation requested', details: { cause: cancelRequested.cause || null } };
  const terminated = event.workflowExecutionTerminatedEventAttributes;
  if (terminated) {
    return { kind: 'workflow.terminated', summary: 'workflow terminated', details: { reason: terminated.reason ? redact(terminated.reason.slice(0, MAX_MESSAGE)) : null } };
  }
  const continuedAsNew = event.workflowExecutionContinuedAsNewEventAttributes;
  if (continuedAsNew) {
    return {
      kind: 'workflow.continued_as_new',
      summary: `workflow continued as new run ${continuedAsNew.newExecutionRunId ?? ''}`.trimEnd(),
      details: {
        new_run_id: continuedAsNew.newExecutionRunId ?? null,
        input: decodePayloads(continuedAsNew.input?.payloads),
        initiator: enumName(enums.v1.ContinueAsNewInitiator, continuedAsNew.initiator, 'CONTINUE_AS_NEW_INITIATOR_'),
      },
    };
  }
  const taskFailed = event.workflowTaskFailedEventAttributes;
  if (taskFailed) {
    const cause = enumName(enums.v1.WorkflowTaskFailedCause, taskFailed.cause, 'WORKFLOW_TASK_FAILED_CAUSE_') ?? 'unspecified';
    return { kind: 'workflow_task.failed', summary: `workflow task failed: ${cause}`, details: { cause, failure: failureDetails(taskFailed.failure, run) } };
  }
  const taskTimedOut = event.workflowTaskTimedOutEventAttributes;
  if (taskTimedOut) {
    return { kind: 'workflow_task.timed_out', summary: 'workflow task timed out', details: { timeout_type: enumName(enums.v1.TimeoutType, taskTimedOut.timeoutType, 'TIMEOUT_TYPE_') } };
  }
  return undefined;
}

function timerEvent(event: HistoryEvent): Mapped {
  const started = event.timerStartedEventAttributes;
  if (started) {
    const timerId = started.timerId ?? '';
    const fireIn = seconds(started.startToFireTimeout);
    return { kind: 'timer.started', summary: `timer ${timerId} started: fires in ${fireIn ?? '?'} s`, details: { timer_id: timerId, fire_in_seconds: fireIn ?? null } };
  }
  const fired = event.timerFiredEventAttributes;
  if (fired) return { kind: 'timer.fired', summary: `timer ${fired.timerId ?? ''} fired`, details: { timer_id: fired.timerId ?? null, started_event_id: int(fired.startedEventId) } };
  const canceled = event.timerCanceledEventAttributes;
  if (canceled) return { kind: 'timer.canceled', summary: `timer ${canceled.timerId ?? ''} canceled`, details: { timer_id: canceled.timerId ?? null, started_event_id: int(canceled.startedEventId) } };
  return undefined;
}

function updateEvent(event: HistoryEvent, run: RunContext, memory: RunMemory): Mapped {
  const admitted = event.workflowExecutionUpdateAdmittedEventAttributes;
  if (admitted) {
    const name = admitted.request?.input?.name ?? 'update';
    return { kind: 'update.admitted', summary: `Update ${name} admitted`, details: { name, update_id: admitted.request?.meta?.updateId ?? null, args: decodePayloads(admitted.request?.input?.args?.payloads) } };
  }
  const accepted = event.workflowExecutionUpdateAcceptedEventAttributes;
  if (accepted) {
    const name = accepted.acceptedRequest?.input?.name ?? 'update';
    memory.updates.set(int(event.eventId), name);
    return {
      kind: 'update.accepted',
      summary: `Update ${name} accepted`,
      details: { name, update_id: accepted.acceptedRequest?.meta?.updateId ?? accepted.protocolInstanceId ?? null, args: decodePayloads(accepted.acceptedRequest?.input?.args?.payloads) },
    };
  }
  const rejected = event.workflowExecutionUpdateRejectedEventAttributes;
  if (rejected) {
    const name = rejected.rejectedRequest?.input?.name ?? 'update';
    const failure = failureDetails(rejected.failure, run);
    return {
      kind: 'update.rejected',
      summary: `Update ${name} rejected: ${failure?.type ?? 'failure'}`,
      details: { name, update_id: rejected.rejectedRequest?.meta?.updateId ?? rejected.protocolInstanceId ?? null, args: decodePayloads(rejected.rejectedRequest?.input?.args?.payloads), failure },
    };
  }
  const completed = event.workflowExecutionUpdateCompletedEventAttributes;
  if (completed) {
    const name = memory.updates.get(int(completed.acceptedEventId)) ?? 'update';
    const update_id = completed.meta?.updateId ?? null;
    const failure = completed.outcome?.failure;
    if (failure) {
      const details = failureDetails(failure, run);
      return { kind: 'update.failed', summary: `Update ${name} failed: ${details?.type ?? 'failure'}`, details: { name, update_id, failure: details } };
    }
    return { kind: 'update.completed', summary: `Update ${name} completed`, details: { name, update_id, result: decodePayloads(completed.outcome?.success?.payloads) } };
  }
  const signaled = event.workflowExecutionSignaledEventAttributes;
  if (signaled) {
    const name = signaled.signalName ?? 'signal';
    return { kind: 'signal.received', summary: `signal ${name} received`, details: { name, args: decodePayloads(signaled.input?.payloads) } };
  }
  return undefined;
}

function activityEvent(event: HistoryEvent, run: RunContext, memory: RunMemory): Mapped {
  const scheduled = event.activityTaskScheduledEventAttributes;
  if (scheduled) {
    const activity = { type: scheduled.activityType?.name ?? 'activity', id: scheduled.activityId ?? '' };
    memory.activities.set(int(event.eventId), activity);
    return {
      kind: 'activity.scheduled',
      summary: `activity ${activity.type} scheduled`,
      details: { activity_type: activity.type, activity_id: activity.id, input: decodePayloads(scheduled.input?.payloads), start_to_close_seconds: seconds(scheduled.startToCloseTimeout) ?? null },
    };
  }
  const started = event.activityTaskStartedEventAttributes;
  if (started) {
    const activity = memory.activities.get(int(started.scheduledEventId)) ?? { type: 'activity', id: '' };
    activity.attempt = started.attempt ?? 1;
    const lastFailure = failureDetails(started.lastFailure, run);
    return {
      kind: 'activity.started',
      summary: `activity ${activity.type} started${attemptText(activity.attempt)}${lastFailure ? ` after a failure: ${lastFailure.type}` : ''}`,
      details: { activity_type: activity.type, activity_id: activity.id, attempt: activity.attempt, ...(lastFailure ? { last_failure: lastFailure } : {}) },
    };
  }
  const completed = event.activityTaskCompletedEventAttributes;
  const failed = event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes;
  const attributes = completed ?? failed ?? event.activityTaskCancelRequestedEventAttributes ?? event.activityTaskCanceledEventAttributes;
  if (!attributes) return undefined;
  const what = completed
    ? 'completed'
    : event.activityTaskFailedEventAttributes
      ? 'failed'
      : event.activityTaskTimedOutEventAttributes
        ? 'timed_out'
        : event.activityTaskCancelRequestedEventAttributes
          ? 'cancel_requested'
          : 'canceled';
  const activity = memory.activities.get(int(attributes.scheduledEventId)) ?? { type: 'activity', id: '' };
  const details: Record<string, unknown> = { activity_type: activity.type, activity_id: activity.id, ...(activity.attempt ? { attempt: activity.attempt } : {}) };
  if (completed) details.result = decodePayloads(completed.result?.payloads);
  const failure = failureDetails(failed?.failure, run);
  if (failure) details.failure = failure;
  if (failed?.retryState) details.retry_state = enumName(enums.v1.RetryState, failed.retryState, 'RETRY_STATE_');
  return {
    kind: `activity.${what}`,
    summary: `activity ${activity.type} ${what.replace('_', ' ')}${attemptText(activity.attempt)}${failure ? `: ${failure.type}` : ''}`,
    details,
  };
}

/** A local activity's marker: its type, attempt and result or failure (the SDK core's `core_local_activity`). */
function markerEvent(event: HistoryEvent, run: RunContext): Mapped {
  const marker = event.markerRecordedEventAttributes;
  if (!marker || marker.markerName !== LOCAL_ACTIVITY_MARKER) return undefined;
  const data = (decodePayload(marker.details?.data?.payloads?.[0]) ?? {}) as { activity_type?: string; activity_id?: string; attempt?: number };
  const type = data.activity_type ?? 'activity';
  const failure = failureDetails(marker.failure, run);
  const details: Record<string, unknown> = { activity_type: type, activity_id: data.activity_id ?? null, attempt: data.attempt ?? 1, local: true };
  if (failure) details.failure = failure;
  else details.result = decodePayloads(marker.details?.result?.payloads);
  return failure
    ? { kind: 'activity.failed', summary: `local activity ${type} failed${attemptText(data.attempt)}: ${failure.type}`, details }
    : { kind: 'activity.completed', summary: `local activity ${type} completed${attemptText(data.attempt)}`, details };
}

function childEvent(event: HistoryEvent, run: RunContext, memory: RunMemory): Mapped {
  const initiated = event.startChildWorkflowExecutionInitiatedEventAttributes;
  if (initiated) {
    const child = { type: initiated.workflowType?.name ?? 'workflow', id: initiated.workflowId ?? '' };
    memory.children.set(int(event.eventId), child);
    return { kind: 'child.initiated', summary: `child workflow ${child.type} ${child.id} requested`, details: { workflow_type: child.type, child_workflow_id: child.id, input: decodePayloads(initiated.input?.payloads) } };
  }
  const startFailed = event.startChildWorkflowExecutionFailedEventAttributes;
  if (startFailed) {
    const cause = enumName(enums.v1.StartChildWorkflowExecutionFailedCause, startFailed.cause, 'START_CHILD_WORKFLOW_EXECUTION_FAILED_CAUSE_') ?? 'unspecified';
    return { kind: 'child.start_failed', summary: `child workflow ${startFailed.workflowId ?? ''} not started: ${cause}`, details: { child_workflow_id: startFailed.workflowId ?? null, cause } };
  }
  const outcomes: Array<[string, { initiatedEventId?: unknown; workflowExecution?: temporal.api.common.v1.IWorkflowExecution | null } | null | undefined]> = [
    ['started', event.childWorkflowExecutionStartedEventAttributes],
    ['completed', event.childWorkflowExecutionCompletedEventAttributes],
    ['failed', event.childWorkflowExecutionFailedEventAttributes],
    ['canceled', event.childWorkflowExecutionCanceledEventAttributes],
    ['timed_out', event.childWorkflowExecutionTimedOutEventAttributes],
    ['terminated', event.childWorkflowExecutionTerminatedEventAttributes],
  ];
  const found = outcomes.find(([, attributes]) => attributes);
  if (!found) return undefined;
  const [what, attributes] = found;
  const child = memory.children.get(int(attributes!.initiatedEventId)) ?? { type: 'workflow', id: attributes!.workflowExecution?.workflowId ?? '' };
  const details: Record<string, unknown> = { workflow_type: child.type, child_workflow_id: child.id, child_run_id: attributes!.workflowExecution?.runId ?? null };
  const failure = failureDetails(event.childWorkflowExecutionFailedEventAttributes?.failure, run);
  if (failure) details.failure = failure;
  if (event.childWorkflowExecutionCompletedEventAttributes) details.result = decodePayloads(event.childWorkflowExecutionCompletedEventAttributes.result?.payloads);
  return { kind: `child.${what}`, summary: `child workflow ${child.type} ${child.id} ${what.replace('_', ' ')}${failure ? `: ${failure.type}` : ''}`, details };
}

function externalEvent(event: HistoryEvent, memory: RunMemory): Mapped {
  const signal = event.signalExternalWorkflowExecutionInitiatedEventAttributes;
  if (signal) {
    const target = signal.workflowExecution?.workflowId ?? '';
    memory.externals.set(int(event.eventId), target);
    return { kind: 'external.signal_initiated', summary: `signal ${signal.signalName ?? ''} sent to ${target}`, details: { target_workflow_id: target, name: signal.signalName ?? null, args: decodePayloads(signal.input?.payloads) } };
  }
  const cancel = event.requestCancelExternalWorkflowExecutionInitiatedEventAttributes;
  if (cancel) {
    const target = cancel.workflowExecution?.workflowId ?? '';
    memory.externals.set(int(event.eventId), target);
    return { kind: 'external.cancel_initiated', summary: `cancellation of ${target} requested`, details: { target_workflow_id: target } };
  }
  const outcomes: Array<[string, string, { initiatedEventId?: unknown } | null | undefined]> = [
    ['external.signaled', 'delivered to', event.externalWorkflowExecutionSignaledEventAttributes],
    ['external.signal_failed', 'not delivered to', event.signalExternalWorkflowExecutionFailedEventAttributes],
    ['external.cancel_requested', 'cancellation delivered to', event.externalWorkflowExecutionCancelRequestedEventAttributes],
    ['external.cancel_failed', 'cancellation not delivered to', event.requestCancelExternalWorkflowExecutionFailedEventAttributes],
  ];
  const found = outcomes.find(([, , attributes]) => attributes);
  if (!found) return undefined;
  const target = memory.externals.get(int(found[2]!.initiatedEventId)) ?? '';
  return { kind: found[0], summary: `${found[0].startsWith('external.signal') ? 'signal ' : ''}${found[1]} ${target}`.trim(), details: { target_workflow_id: target } };
}

function searchAttributeEvent(event: HistoryEvent): Mapped {
  const upsert = event.upsertWorkflowSearchAttributesEventAttributes;
  if (!upsert) return undefined;
  const attributes = searchAttributesOf(upsert.searchAttributes?.indexedFields);
  // TemporalChangeVersion is the SDK's own (patch markers): not part of the payment's story.
  delete attributes.TemporalChangeVersion;
  const names = Object.keys(attributes);
  if (names.length === 0) return undefined;
  const text = names.map((name) => `${name} → ${typeof attributes[name] === 'object' ? JSON.stringify(attributes[name]) : String(attributes[name])}`).join(', ');
  return { kind: 'search_attributes.upserted', summary: text, details: { search_attributes: attributes } };
}

/** `details` without the keys whose value is undefined (an event without a retry state, say): JSON-safe as it is. */
function definedOnly(details: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(details).filter(([, value]) => value !== undefined));
}

/**
 * The entries of one run's events (in history order), each with its time, the run and event ids in its details, and
 * its Web UI link when `run.uiUrl` is set. Events the timeline leaves out (workflow-task bookkeeping, other markers)
 * give none.
 */
export function historyEntries(events: HistoryEvent[], run: RunContext): TimelineEntry[] {
  const memory: RunMemory = { activities: new Map(), updates: new Map(), children: new Map(), externals: new Map() };
  const entries: TimelineEntry[] = [];
  for (const event of events) {
    const mapped =
      workflowEvent(event, run) ??
      timerEvent(event) ??
      updateEvent(event, run, memory) ??
      activityEvent(event, run, memory) ??
      markerEvent(event, run) ??
      childEvent(event, run, memory) ??
      externalEvent(event, memory) ??
      searchAttributeEvent(event);
    if (!mapped || !event.eventTime) continue;
    const eventId = int(event.eventId);
    entries.push({
      at: tsToDate(event.eventTime).toISOString(),
      source: 'workflow',
      kind: mapped.kind,
      summary: mapped.summary,
      // Without the facts the event lacks; the run's ids last, so no event's own details stand in for them.
      details: { ...definedOnly(mapped.details), workflow_id: run.workflowId, run_id: run.runId, event_id: eventId },
      ...(run.uiUrl ? { link: temporalUiLink(run.uiUrl, run.namespace, run.workflowId, run.runId, eventId) } : {}),
    });
  }
  return entries;
}
