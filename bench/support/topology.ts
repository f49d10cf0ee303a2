/**
 * Benches against the production topology itself: with `BENCH_CLUSTER=<cluster.json>` (the file `payments cluster
 * up` writes while it runs, `<DATA_DIR>/cluster/cluster.json`), a bench drives the running cluster's façade port —
 * its two façade processes, which call its two api processes over h2c, whose workflows run on its two worker
 * processes — instead of starting the roles in its own process. The bench keeps only its client, its floor and the
 * dependencies it seeds and inspects the cluster with (database, ledger, keys, Temporal client), as the cluster's
 * test mode does (test/support/platform.ts).
 *
 * Each role process's RSS is read from /proc after the run (`rssByRole`), with the Temporal server's.
 */
import { readFileSync } from 'node:fs';
import type { ClusterState } from '../../src/cli/cluster';
import { loadConfig, type Config } from '../../src/config';
import { createLogger } from '../../src/logger';
import type { PlatformDeps } from '../../src/platform-deps';
import { createPlatformDeps } from '../../src/runtime';
import { rssMiBOf } from './harness';

/** The running cluster a bench drives, or undefined when BENCH_CLUSTER is unset. */
export interface BenchTopology {
  cluster: ClusterState;
  config: Config;
  deps: PlatformDeps;
  facadeUrl: string;
  /** RSS in MiB of every role process (`facade-1`, `api-2`, …) and of the Temporal server, read now. */
  rssByRole(): Record<string, number>;
  /** The cluster's processes by role (`facade`, `api`, `worker`, and `supervisor`, which holds the ports). */
  pidsByRole(): Record<string, number[]>;
  close(): Promise<void>;
}

/**
 * Connects to the cluster BENCH_CLUSTER describes, or answers undefined when it is unset.
 * @throws when the file cannot be read or the cluster's database and Temporal cannot be reached
 */
export async function startBenchTopology(): Promise<BenchTopology | undefined> {
  const file = process.env.BENCH_CLUSTER;
  if (!file) return undefined;
  const cluster = JSON.parse(readFileSync(file, 'utf8')) as ClusterState;
  const config = loadConfig({
    DATABASE_URL: cluster.databaseUrl,
    TEMPORAL_ADDRESS: cluster.temporalAddress,
    TEMPORAL_NAMESPACE: cluster.namespace,
    TEMPORAL_TASK_QUEUE: cluster.taskQueue,
    PLATFORM_KEY_DIR: cluster.platformKeyDir,
    PUBLIC_BASE_URL: cluster.facadeUrl,
    HTTP_PORT: '0',
    RPC_PORT: '0',
    LOG_LEVEL: 'silent',
    DATABASE_POOL_MAX: '4',
    // The cluster's Temporal frontend wants the operator's client certificate (mTLS).
    ...(cluster.temporalTls
      ? { TEMPORAL_TLS_CA: cluster.temporalTls.ca, TEMPORAL_TLS_CERT: cluster.temporalTls.cert, TEMPORAL_TLS_KEY: cluster.temporalTls.key, TEMPORAL_TLS_SERVER_NAME: cluster.temporalTls.serverName }
      : {}),
  });
  const stops: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const step of stops.reverse()) await step().catch(() => undefined);
  };
  const deps = await createPlatformDeps(config, createLogger('silent'), stops).catch(async (error: unknown) => {
    await close();
    throw error;
  });
  return {
    cluster,
    config,
    deps,
    facadeUrl: cluster.facadeUrl,
    rssByRole: () => {
      const rss: Record<string, number> = {};
      for (const child of cluster.processes) {
        const mib = rssMiBOf(child.pid);
        if (mib !== undefined) rss[`${child.role}-${child.index}`] = mib;
      }
      const server = cluster.temporalServerPid === undefined ? undefined : rssMiBOf(cluster.temporalServerPid);
      if (server !== undefined) rss['temporal-server'] = server;
      return rss;
    },
    pidsByRole: () => {
      const pids: Record<string, number[]> = { supervisor: [cluster.supervisorPid] };
      for (const child of cluster.processes) (pids[child.role] ??= []).push(child.pid);
      return pids;
    },
    close,
  };
}
