/**
 * `payments health [--roles …]`: the container healthcheck (Dockerfile HEALTHCHECK, docker-compose), one probe per
 * role this host runs (docs/operations.md "Health checks"), each bounded in time:
 *
 *   facade   GET /healthz on HTTP_PORT answers 200 (which asks the api role for the database and Temporal)
 *   api      HealthService/Check over the RPC on RPC_PORT answers `ok` (database and Temporal reached), presenting
 *            what a façade presents (RPC_TOKEN / RPC_TOKEN_FILE, RPC_CLIENT_TLS_*)
 *   worker   the Temporal server saw a poll of a worker of this host (identity `<pid>@<hostname>`, the SDK's) on
 *            TEMPORAL_TASK_QUEUE, for workflow and for activity tasks, within `poll_seconds` (a live worker's long
 *            polls last at most about a minute, so a longer silence is a dead or stuck worker)
 *
 * Resolves with one line per role; `ok` is false when any probe failed. Never throws for a failed probe.
 */
import os from 'node:os';
import type { Config } from '../config';
import { createPlatformClients, rpcClientCredentials } from '../rpc/clients';
import type { Role } from './roles';
import { connectTemporal } from '../temporal/client';
import { temporalConnectionOptions } from '../temporal/connection-options';

/** Longest one probe may take, seconds (Docker's own timeout for the whole check is larger). */
export const HEALTH_PROBE_TIMEOUT_SECONDS = 5;
/** How recent a worker's last poll must be, seconds: more than a long poll (about 60 s) lasts. */
export const WORKER_POLL_FRESH_SECONDS = 90;

export interface HealthReport {
  ok: boolean;
  lines: string[];
}

/** The address this host reaches a listener bound to `host` at. */
function localHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

const withTimeout = <T>(work: Promise<T>, seconds: number, what: string): Promise<T> =>
  Promise.race([work, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${seconds} s`)), seconds * 1000).unref())]);

async function probeFacade(config: Config): Promise<string> {
  const url = `http://${localHost(config.HTTP_HOST)}:${config.HTTP_PORT}/healthz`;
  const response = await fetch(url, { signal: AbortSignal.timeout(HEALTH_PROBE_TIMEOUT_SECONDS * 1000) });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`${url} answered ${response.status} ${body.slice(0, 200)}`);
  return `${url} answered 200`;
}

async function probeApi(config: Config): Promise<string> {
  const url = `${config.RPC_TLS_CERT ? 'https' : 'http'}://${localHost(config.RPC_HOST)}:${config.RPC_PORT}`;
  const clients = createPlatformClients(url, { timeoutMs: HEALTH_PROBE_TIMEOUT_SECONDS * 1000, credentials: rpcClientCredentials(config) });
  const answer = await clients.health.check({});
  const checks = Object.entries(answer.checks).map(([name, value]) => `${name} ${value}`).join(', ');
  if (answer.status !== 'ok') throw new Error(`HealthService at ${url} answered ${answer.status}: ${checks}`);
  return `HealthService at ${url} answered ok (${checks})`;
}

async function probeWorker(config: Config, pollSeconds: number): Promise<string> {
  const address = config.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const temporal = await connectTemporal(address, config.TEMPORAL_NAMESPACE, config.TEMPORAL_TASK_QUEUE, temporalConnectionOptions(config));
  try {
    const host = `@${os.hostname()}`;
    const ages: string[] = [];
    // TaskQueueType: 1 workflow, 2 activity.
    for (const [type, name] of [[1, 'workflow'], [2, 'activity']] as const) {
      const described = await temporal.connection.workflowService.describeTaskQueue({
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: { name: config.TEMPORAL_TASK_QUEUE },
        taskQueueType: type,
      });
      const latest = Math.max(
        0,
        ...(described.pollers ?? [])
          .filter((poller) => poller.identity?.endsWith(host))
          .map((poller) => Number(poller.lastAccessTime?.seconds ?? 0) * 1000 + Math.floor((poller.lastAccessTime?.nanos ?? 0) / 1e6)),
      );
      if (!latest) throw new Error(`no worker of this host (${os.hostname()}) polls the ${name} tasks of ${config.TEMPORAL_TASK_QUEUE} at ${address}`);
      const age = Math.max(0, Math.round((Date.now() - latest) / 1000));
      if (age > pollSeconds) throw new Error(`the last ${name} poll of a worker of this host on ${config.TEMPORAL_TASK_QUEUE} was ${age} s ago (more than ${pollSeconds} s)`);
      ages.push(`${name} ${age} s ago`);
    }
    return `polls ${config.TEMPORAL_TASK_QUEUE} at ${address} (${ages.join(', ')})`;
  } finally {
    await temporal.close();
  }
}

/** Probes each of `roles` with `config`. */
export async function checkHealth(config: Config, roles: Role[], options: { pollSeconds?: number } = {}): Promise<HealthReport> {
  const probes: Record<Role, () => Promise<string>> = {
    facade: () => probeFacade(config),
    api: () => probeApi(config),
    worker: () => probeWorker(config, options.pollSeconds ?? WORKER_POLL_FRESH_SECONDS),
  };
  const lines = await Promise.all(
    roles.map(async (role) => {
      try {
        return { ok: true, line: `${role}: ok: ${await withTimeout(probes[role](), HEALTH_PROBE_TIMEOUT_SECONDS * 2, role)}` };
      } catch (error) {
        return { ok: false, line: `${role}: failing: ${String((error as Error).message ?? error).split('\n')[0]}` };
      }
    }),
  );
  return { ok: lines.every((entry) => entry.ok), lines: lines.map((entry) => entry.line) };
}
