/** Temporal client connection for services (start workflows, send updates and signals). */
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type ClientInterceptors,
  type ConnectionLike,
  type WorkflowHandleWithStartDetails,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import type { TemporalConnectionOptions } from './connection-options';

export interface TemporalHandle {
  client: Client;
  connection: Connection;
  taskQueue: string;
  close(): Promise<void>;
  /**
   * A client on the connection of the worker polling `taskQueue` in this same process (the api and worker roles run
   * together, as in `npm start`), set by the composition root; absent when the worker runs elsewhere.
   */
  colocated?: { client: Client; connection: ConnectionLike };
}

/**
 * Starts a workflow, eagerly when a worker of its task queue runs in this process: the server then hands the first
 * workflow task back in the start's own answer to that worker (no task-queue dispatch, no poll round trip), and
 * falls back to a normal start when the worker has no free slot. (withRequestDeadline covers both connections.)
 * @throws what `WorkflowClient.start` throws (e.g. WorkflowExecutionAlreadyStartedError)
 */
export function startWorkflow<T extends Workflow>(temporal: TemporalHandle, workflow: T, options: WorkflowStartOptions<T>): Promise<WorkflowHandleWithStartDetails<T>> {
  return temporal.colocated
    ? temporal.colocated.client.workflow.start(workflow, { ...options, requestEagerStart: true })
    : temporal.client.workflow.start(workflow, options);
}

/** Thrown when no Temporal frontend answers at the configured address: one line naming TEMPORAL_ADDRESS and it. */
export class TemporalUnreachableError extends Error {
  constructor(address: string, cause: unknown) {
    super(`Temporal is unreachable at ${address} (TEMPORAL_ADDRESS): ${String((cause as Error)?.message ?? cause).split('\n')[0]}`);
    this.name = 'TemporalUnreachableError';
  }
}

/** `connect()`, its failure to reach `address` rethrown as TemporalUnreachableError. */
export async function reachTemporal<T>(address: string, connect: () => Promise<T>): Promise<T> {
  try {
    return await connect();
  } catch (error) {
    throw new TemporalUnreachableError(address, error);
  }
}

/**
 * Connects to `address` (host:port) with `security` (TLS, API key; see connection-options.ts).
 * `interceptors`: the client's (tracing, src/tracing.ts).
 * @throws TemporalUnreachableError when the server cannot be reached within 10 s
 */
export async function connectTemporal(
  address: string,
  namespace: string,
  taskQueue: string,
  security: TemporalConnectionOptions = {},
  interceptors?: ClientInterceptors,
): Promise<TemporalHandle> {
  const calls = callsInFlight();
  // The client's own retry interceptor, inside the count: a call waiting out a retry's backoff is still in flight.
  const connection = await reachTemporal(address, () =>
    Connection.connect({ address, connectTimeout: '10s', ...security, interceptors: [calls.interceptor, makeGrpcRetryInterceptor(defaultGrpcRetryOptions())] }),
  );
  // Connection.connect runs its first call in the connection's AsyncLocalStorage, which (Node 20) switches on a
  // promise hook for every promise the process creates from then on: about a tenth of the api role's CPU (bench
  // `wallet`). Only a request that waits on Temporal switches it on again (withRequestDeadline's withDeadline,
  // src/temporal/deadline.ts), so a process serving no such request (Area C money movements, say) never pays it.
  connection.callContextStorage.disable();
  const client = new Client({ connection, namespace, interceptors });
  return {
    client,
    connection,
    taskQueue,
    close: async () => {
      await calls.settled(CLOSE_DRAIN_MS);
      await connection.close();
    },
  };
}

/** Longest a close waits for the calls in flight to end, milliseconds (a request's calls carry their own deadline). */
const CLOSE_DRAIN_MS = 5_000;

/**
 * Counts the gRPC calls in flight on a connection. Closing a connection does not cancel the retry timers of its
 * calls: a retry firing after the close throws "Channel has been shut down" from a timer, where no caller can catch
 * it, and takes the process down on its way out. So a close first waits for the calls in flight to end (bounded).
 */
function callsInFlight(): { interceptor: Interceptor; settled(timeout_ms: number): Promise<void> } {
  let count = 0;
  let idle: Array<() => void> = [];
  const ended = () => {
    count -= 1;
    if (count > 0) return;
    for (const resolve of idle) resolve();
    idle = [];
  };
  const interceptor: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        count += 1;
        let done = false;
        next(metadata, {
          onReceiveStatus(status, nextStatus) {
            if (!done) {
              done = true;
              ended();
            }
            nextStatus(status);
          },
        });
      },
    });
  const settled = (timeout_ms: number) =>
    count === 0
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, timeout_ms);
          idle.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
  return { interceptor, settled };
}
