/**
 * The running cluster a test run is pointed at (`npm run test:cluster`, scripts/test-cluster.ts): PAYMENTS_TEST_CLUSTER
 * names the cluster.json `payments cluster up` writes while it is up (src/cli/cluster.ts).
 */
import { readFileSync } from 'node:fs';
import type { ClusterState } from '../../src/cli/cluster';

export type { ClusterState } from '../../src/cli/cluster';

/** The cluster's state, or undefined when the run is not against a cluster. @throws when the file cannot be read */
export function readClusterState(): ClusterState | undefined {
  const file = process.env.PAYMENTS_TEST_CLUSTER;
  if (!file) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as ClusterState;
}
