/**
 * The cluster's internal RPC speaks mTLS only (docs/security.md "Internal RPC"): a caller with a certificate of the
 * cluster's RPC CA is served; a plaintext call, a TLS call without a certificate and one whose certificate another CA
 * signed are refused before any service reads them, even with a valid operator credential. Only against a running
 * cluster (npm run test:cluster).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDatabase, type Knex } from '../../src/db/knex';
import { createPlatformClients, type RpcClientCredentials } from '../../src/rpc/clients';
import { createServiceCredential } from '../../src/service-credentials';
import { ensureClusterPki } from '../../src/temporal/cluster-pki';
import { clusterRpcTls, readClusterState } from '../support/cluster';

const state = readClusterState();
const describeCluster = state ? describe : describe.skip;

describeCluster('the cluster’s internal RPC (mTLS)', () => {
  const cluster = state!;
  let database: Knex;
  let token: string;

  /** What CheckLedger answers over `rpcUrl` with the operator's credential and `tls`: "ok" or "refused". */
  async function checkLedger(rpcUrl: string, tls: RpcClientCredentials['tls'], httpVersion: '1.1' | '2' = '2'): Promise<string> {
    const clients = createPlatformClients(rpcUrl, { httpVersion, timeoutMs: 10_000, credentials: { token, tls } });
    return clients.admin.checkLedger({}).then(
      () => 'ok',
      () => 'refused',
    );
  }

  beforeAll(async () => {
    database = createDatabase(cluster.databaseUrl, 1);
    token = (await createServiceCredential(database, { name: 'rpc mtls test', scopes: ['admin'] })).token;
  });
  afterAll(() => database.destroy());

  it('is served over https to a caller with a certificate of the cluster’s RPC CA', async () => {
    expect(cluster.rpcUrl).toMatch(/^https:\/\//);
    expect(await checkLedger(cluster.rpcUrl, clusterRpcTls())).toBe('ok');
  });

  it('refuses a plaintext call, over HTTP/1.1 and h2c, though its credential is valid', async () => {
    const plaintext = cluster.rpcUrl.replace(/^https:/, 'http:');
    expect(await checkLedger(plaintext, undefined, '1.1')).toBe('refused');
    expect(await checkLedger(plaintext, undefined, '2')).toBe('refused');
  });

  it('refuses a TLS call without a client certificate, though it trusts the server', async () => {
    expect(await checkLedger(cluster.rpcUrl, { ca: readFileSync(cluster.rpcTls.ca, 'utf8') })).toBe('refused');
  });

  it('refuses a client certificate another CA signed', async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'foreign-rpc-pki-'));
    try {
      const foreign = ensureClusterPki(directory);
      const tls = { ca: readFileSync(cluster.rpcTls.ca, 'utf8'), cert: readFileSync(foreign.rpc.clients.operator.cert, 'utf8'), key: readFileSync(foreign.rpc.clients.operator.key, 'utf8') };
      expect(await checkLedger(cluster.rpcUrl, tls)).toBe('refused');
      // Nor is the cluster's Temporal CA the RPC's: its operator certificate opens Temporal, not the RPC.
      if (cluster.temporalTls) {
        const temporal = { ca: readFileSync(cluster.rpcTls.ca, 'utf8'), cert: readFileSync(cluster.temporalTls.cert, 'utf8'), key: readFileSync(cluster.temporalTls.key, 'utf8') };
        expect(await checkLedger(cluster.rpcUrl, temporal)).toBe('refused');
      }
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
