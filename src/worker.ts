/**
 * The Temporal worker: registers the workflow bundle (`workflows/`) and every capability's activities on
 * `TEMPORAL_TASK_QUEUE` (platform decisions §1).
 */
import { bundleWorkflowCode, NativeConnection, Runtime, Worker, type WorkflowBundle, type WorkflowBundlePath } from '@temporalio/worker';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createActivities, type Activities } from './activities';
import type { PlatformDeps } from './platform-deps';
import { temporalConnectionOptions } from './temporal/connection-options';

export const WORKFLOWS_PATH = require.resolve('../workflows');

/** The workflow bundle `npm run build` writes next to the compiled code (dist/workflow-bundle.js). */
export const PREBUILT_BUNDLE_FILE = 'workflow-bundle.js';

/**
 * The prebuilt bundle when this is compiled code that has one (`npm run build`), else undefined: the worker then
 * bundles `workflows/` at start (the sources under tsx, `npm start` and tests).
 */
export function prebuiltBundle(): WorkflowBundlePath | undefined {
  if (!__filename.endsWith('.js')) return undefined;
  const file = path.join(__dirname, '..', PREBUILT_BUNDLE_FILE);
  return existsSync(file) ? { codePath: file } : undefined;
}

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

/** Where the worker's workflow code comes from: the given bundle, the prebuilt one, or `workflows/` bundled now. */
function workflowSource(bundle: WorkflowBundle | undefined) {
  const prebuilt = bundle ? undefined : prebuiltBundle();
  if (bundle) return { workflowBundle: bundle };
  return prebuilt ? { workflowBundle: prebuilt } : { workflowsPath: WORKFLOWS_PATH };
}

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
    ...workflowSource(options.bundle),
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
