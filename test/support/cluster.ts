/**
 * The running cluster a test run is pointed at (`npm run test:cluster`, scripts/test-cluster.ts): PAYMENTS_TEST_CLUSTER
 * names the cluster.json `payments cluster up` writes while it is up (src/cli/cluster.ts). cluster.json holds no
 * secret, only the files that do: the sandbox upstream's key and secret are read from their file here, and the
 * cluster's Temporal frontend wants the operator's client certificate (clusterTemporalSettings).
 */
import { readFileSync } from 'node:fs';
import type { RpcClientCredentials } from '../../src/rpc/clients';
import type { ClusterState as WrittenClusterState } from '../../src/cli/cluster';
import type { SandboxCredentials } from '../../src/sandbox/upstream';

/** cluster.json, with the sandbox upstream's API key and notification secret read from their file. */
export interface ClusterState extends Omit<WrittenClusterState, 'upstream'> {
  upstream?: { payinUrl: string; credentialsFile: string; apiKey: string; webhookSecret: string };
}

/** The cluster's state, or undefined when the run is not against a cluster. @throws when a file cannot be read */
export function readClusterState(): ClusterState | undefined {
  const file = process.env.PAYMENTS_TEST_CLUSTER;
  if (!file) return undefined;
  const written = JSON.parse(readFileSync(file, 'utf8')) as WrittenClusterState;
  if (!written.upstream) return { ...written, upstream: undefined };
  const credentials = JSON.parse(readFileSync(written.upstream.credentialsFile, 'utf8')) as SandboxCredentials;
  return { ...written, upstream: { ...written.upstream, apiKey: credentials.api_key, webhookSecret: credentials.webhook_secret } };
}

/**
 * The TEMPORAL_TLS_* settings of the operator's client certificate when the run is against a cluster that runs its
 * Temporal server with mTLS (every client of it needs one), else nothing.
 */
export function clusterTemporalSettings(): Record<string, string> {
  const tls = readClusterState()?.temporalTls;
  if (!tls) return {};
  return { TEMPORAL_TLS_CA: tls.ca, TEMPORAL_TLS_CERT: tls.cert, TEMPORAL_TLS_KEY: tls.key, TEMPORAL_TLS_SERVER_NAME: tls.serverName };
}

/**
 * The operator's client certificate of the cluster's internal RPC (PEM texts), which speaks mTLS only: every network
 * client of it presents one besides its service credential. Undefined when the run is not against a cluster.
 */
export function clusterRpcTls(): RpcClientCredentials['tls'] {
  const tls = readClusterState()?.rpcTls;
  if (!tls) return undefined;
  return { ca: readFileSync(tls.ca, 'utf8'), cert: readFileSync(tls.cert, 'utf8'), key: readFileSync(tls.key, 'utf8') };
}
