/**
 * Deadlines on the Temporal calls a request waits for (a workflow Update, a start, a signal): with the worker or the
 * server down, the request answers its area's system error within REQUEST_TIMEOUT_SECONDS instead of hanging, and
 * a retry is safe (every flow's steps are idempotent).
 */
import { isGrpcDeadlineError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { COMMON_REASONS, reasonError } from '../errors';
import type { Config } from '../config';
import type { TemporalHandle } from './client';

/** True when `error` is a Temporal call that ran out of its deadline. */
export function isDeadlineExceeded(error: unknown): boolean {
  return error instanceof WorkflowUpdateRPCTimeoutOrCancelledError || isGrpcDeadlineError(error);
}

/**
 * The share of REQUEST_TIMEOUT_SECONDS a service gives its Temporal call: the rest is the service's own answer (and
 * its compensation) travelling back before the façade's deadline on the whole RPC ends.
 */
const TEMPORAL_SHARE_OF_REQUEST = 0.75;

/** The longest a request's Temporal call may take, seconds: three quarters of REQUEST_TIMEOUT_SECONDS. */
export function requestDeadlineSeconds(config: Pick<Config, 'REQUEST_TIMEOUT_SECONDS'>): number {
  return config.REQUEST_TIMEOUT_SECONDS * TEMPORAL_SHARE_OF_REQUEST;
}

/**
 * Runs `call` with the request's Temporal deadline: `seconds` from now (at most, and by default,
 * requestDeadlineSeconds).
 * @throws DomainError DEADLINE_EXCEEDED when the deadline passes first; anything else `call` throws.
 */
export async function withRequestDeadline<T>(deps: { temporal: TemporalHandle; config: Pick<Config, 'REQUEST_TIMEOUT_SECONDS'> }, call: () => Promise<T>, seconds?: number): Promise<T> {
  try {
    const deadline_ms = Date.now() + Math.min(seconds ?? Infinity, requestDeadlineSeconds(deps.config)) * 1000;
    // Each connection keeps its own deadline: cover the co-located worker's too (eager starts go through it).
    const colocated = deps.temporal.colocated?.connection;
    return await deps.temporal.connection.withDeadline(deadline_ms, colocated ? () => colocated.withDeadline(deadline_ms, call) : call);
  } catch (error) {
    if (isDeadlineExceeded(error)) throw reasonError(COMMON_REASONS, 'DEADLINE_EXCEEDED', 'the workflow did not answer within the request deadline');
    throw error;
  }
}
