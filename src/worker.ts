/**
 * The Temporal worker: registers the workflow bundle (`workflows/`) and every capability's activities on
 * `TEMPORAL_TASK_QUEUE` (platform decisions §1).
 */
import { bundleWorkflowCode, NativeConnection, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker';
import { createActivities, type Activities } from './activities';
import type { PlatformDeps } from './platform-deps';
import { temporalConnectionOptions } from './temporal/connection-options';

export const WORKFLOWS_PATH = require.resolve('../workflows');

/** Bundles `workflows/` once (webpack, seconds); pass the result to several workers to skip re-bundling. */
export async function bundleWorkflows(): Promise<WorkflowBundle> {
  return bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (message: string) => process.stderr.write(`${message}\n`),
};

let runtimeInstalled = false;

export interface RunningWorker {
  /** Stops polling, lets running activities finish, then closes the connection. */
  shutdown(): Promise<void>;
}

export async function startWorker(
  deps: PlatformDeps,
  options: {
    address: string;
    bundle?: WorkflowBundle;
    /** Wraps the activities before they are registered (fault-injection tests slow one step down). */
    wrapActivities?: (activities: Activities) => Activities;
  },
): Promise<RunningWorker> {
  if (!runtimeInstalled) {
    Runtime.install({
      logger: {
        log: () => undefined,
        trace: () => undefined,
        debug: () => undefined,
        info: () => undefined,
        warn: (message, meta) => deps.logger.warn({ temporal: meta }, message),
        error: (message, meta) => deps.logger.error({ temporal: meta }, message),
      },
    });
    runtimeInstalled = true;
  }
  const connection = await NativeConnection.connect({ address: options.address, ...temporalConnectionOptions(deps.config) });
  const worker = await Worker.create({
    connection,
    namespace: deps.config.TEMPORAL_NAMESPACE,
    taskQueue: deps.temporal.taskQueue,
    ...(options.bundle ? { workflowBundle: options.bundle } : { workflowsPath: WORKFLOWS_PATH }),
    activities: (options.wrapActivities ?? ((activities: Activities) => activities))(createActivities(deps)),
    shutdownGraceTime: `${deps.config.SHUTDOWN_GRACE_SECONDS}s`,
  });
  const running = worker.run();
  return {
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
