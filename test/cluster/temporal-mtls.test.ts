/**
 * The cluster's Temporal frontend speaks mTLS only (docs/security.md "Temporal"): a client with a certificate of the
 * cluster's CA is served (the Web UI with its own); a plaintext client, a TLS client without a certificate and a client whose certificate
 * another CA signed are refused, each within a bounded time. Only against a running cluster (npm run test:cluster).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { ensureClusterPki } from '../../src/temporal/cluster-pki';
import { temporalConnectionOptions, type TemporalConnectionOptions } from '../../src/temporal/connection-options';
import { loadConfig } from '../../src/config';
import { clusterTemporalSettings, readClusterState } from '../support/cluster';

const state = readClusterState();
// A cluster that runs its own Temporal server (not one given by TEMPORAL_ADDRESS) runs it with mTLS.
const describeCluster = state?.temporalServerPid ? describe : describe.skip;

/** Seconds a refused client may take to give up (its connect timeout). */
const CONNECT_SECONDS = 5;

/** What a client with `security` gets from the frontend: the namespace's name, or "refused". */
async function describeNamespace(security: TemporalConnectionOptions): Promise<string> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address: state!.temporalAddress, connectTimeout: `${CONNECT_SECONDS}s`, ...security });
    const answer = await connection.workflowService.describeNamespace({ namespace: state!.namespace });
    return answer.namespaceInfo?.name ?? 'no name';
  } catch {
    return 'refused';
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

describeCluster('the cluster’s Temporal frontend (mTLS)', () => {
  const operator = () => temporalConnectionOptions(loadConfig({ PAYMENTS_MODE: 'test', ...clusterTemporalSettings() }));

  it('serves a client presenting a certificate of the cluster’s CA', async () => {
    expect(await describeNamespace(operator())).toBe(state!.namespace);
  });

  it('serves the Web UI, which reaches the frontend with its own client certificate', async () => {
    if (!state!.uiUrl) return;
    const response = await fetch(`${state!.uiUrl}/api/v1/namespaces/${state!.namespace}`, { signal: AbortSignal.timeout(10_000) });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { namespaceInfo?: { name?: string } }).namespaceInfo?.name).toBe(state!.namespace);
  });

  it('refuses a plaintext client', async () => {
    expect(await describeNamespace({})).toBe('refused');
  });

  it('refuses a TLS client without a certificate, though it trusts the server', async () => {
    const { tls } = operator();
    expect(await describeNamespace({ tls: { serverNameOverride: tls!.serverNameOverride, serverRootCACertificate: tls!.serverRootCACertificate } })).toBe('refused');
  });

  it('refuses a client whose certificate another CA signed', async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'foreign-pki-'));
    try {
      const foreign = ensureClusterPki(path.join(directory, 'tls'));
      const { tls } = operator();
      const stranger = temporalConnectionOptions(
        loadConfig({ PAYMENTS_MODE: 'test', TEMPORAL_TLS_CA: state!.temporalTls!.ca, TEMPORAL_TLS_CERT: foreign.clients.operator.cert, TEMPORAL_TLS_KEY: foreign.clients.operator.key, TEMPORAL_TLS_SERVER_NAME: tls!.serverNameOverride! }),
      );
      expect(await describeNamespace(stranger)).toBe('refused');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
