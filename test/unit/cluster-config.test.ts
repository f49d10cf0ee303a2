/**
 * The pure parts of `payments cluster up`: the Temporal server configuration it writes (mTLS included), the ports it
 * derives, the settings it reads, the server's shard-count warning it reports, which code its children run, the
 * certificates it makes and the database roles it names.
 */
import crypto from 'node:crypto';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import forge from 'node-forge';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { childCommand, clusterConnectionBudget, clusterOptionsFromEnvironment } from '../../src/cli/cluster';
import { clusterRoleNames, urlForRole } from '../../src/cli/cluster-database-roles';
import { ensureClusterPki, exportClusterPki, TEMPORAL_CLIENTS, temporalClientSettings } from '../../src/temporal/cluster-pki';
import { loadConfig } from '../../src/config';
import { findShardMismatch, postgresEndpoint, temporalServerConfig, temporalServerConnectionsMax, temporalServerPorts } from '../../src/temporal/server';

describe('the Temporal server configuration', () => {
  const endpoint = postgresEndpoint('postgres://temporal%40ops:p%3Ass@db.internal:6543/payments');

  it('reads host, port, user and password from DATABASE_URL (its database aside)', () => {
    expect(endpoint).toEqual({ host: 'db.internal', port: 6543, user: 'temporal@ops', password: 'p:ss' });
    expect(postgresEndpoint('postgres://127.0.0.1/payments')).toEqual({ host: '127.0.0.1', port: 5432, user: 'postgres', password: '' });
  });

  it('is YAML with postgres12 stores, the shard count, every service port and an absolute dynamic config path', () => {
    const text = temporalServerConfig({
      endpoint,
      frontendPort: 27233,
      historyShards: 4,
      dynamicConfigFile: '/var/cluster/config/dynamicconfig.yaml',
      logFile: '/var/cluster/temporal-server.log',
      databases: { default: 'temporal_x', visibility: 'temporal_visibility_x' },
    });
    const config = parse(text);
    expect(config.persistence.numHistoryShards).toBe(4);
    expect(config.persistence.datastores['postgres-default'].sql).toMatchObject({ pluginName: 'postgres12', databaseName: 'temporal_x', connectAddr: 'db.internal:6543', user: 'temporal@ops', password: 'p:ss' });
    expect(config.persistence.datastores['postgres-visibility'].sql).toMatchObject({ pluginName: 'postgres12', databaseName: 'temporal_visibility_x' });
    expect(config.services.frontend.rpc).toMatchObject({ grpcPort: 27233, membershipPort: 26933, httpPort: 27243, bindOnLocalHost: true });
    expect(config.services.history.rpc.grpcPort).toBe(27234);
    expect(config.services.matching.rpc.grpcPort).toBe(27235);
    expect(config.services.worker.rpc.grpcPort).toBe(27239);
    expect(config.clusterMetadata.clusterInformation.active.rpcAddress).toBe('127.0.0.1:27233');
    expect(path.isAbsolute(config.dynamicConfigClient.filepath)).toBe(true);
    expect(new Set(Object.values(temporalServerPorts(7233))).size).toBe(9);
  });

  it('asks every caller of the frontend and of the internode ports for a certificate of the cluster CA, and serves no plaintext HTTP port', () => {
    const tls = { ca: '/c/tls/ca.pem', cert: '/c/tls/temporal-server.pem', key: '/c/tls/temporal-server-key.pem', serverName: 'localhost' };
    const config = parse(temporalServerConfig({ endpoint, frontendPort: 27233, historyShards: 4, dynamicConfigFile: '/d.yaml', logFile: '/l.log', tls }));
    for (const group of ['frontend', 'internode']) {
      expect(config.global.tls[group]).toEqual({
        server: { certFile: tls.cert, keyFile: tls.key, requireClientAuth: true, clientCaFiles: [tls.ca] },
        client: { serverName: 'localhost', rootCaFiles: [tls.ca] },
      });
    }
    expect(config.services.frontend.rpc.httpPort).toBeUndefined();
    // Without TLS (development only) no tls section at all.
    expect(parse(temporalServerConfig({ endpoint, frontendPort: 27233, historyShards: 4, dynamicConfigFile: '/d.yaml', logFile: '/l.log' })).global.tls).toBeUndefined();
  });

  it('finds the server warning that a changed shard count was ignored', () => {
    const line = JSON.stringify({ level: 'warn', msg: 'Supplied configuration key/value mismatches persisted cluster metadata.', key: 'persistence.numHistoryShards', 'ignored-value': 8, value: 4 });
    expect(findShardMismatch(`not json\n${line}\n`)).toEqual({ configured: 8, persisted: 4 });
    expect(findShardMismatch('{"level":"warn","msg":"other"}\n')).toBeUndefined();
  });
});

describe('cluster settings', () => {
  const config = loadConfig({ DATA_DIR: '/srv/payments' });

  it('defaults to two processes per role, 4 shards, 7233 and the UI on 8233, under DATA_DIR/cluster', () => {
    expect(clusterOptionsFromEnvironment(config, {})).toEqual({
      workers: 2,
      apis: 2,
      facades: 2,
      temporalPort: 7233,
      historyShards: 4,
      uiPort: 8233,
      respawnSeconds: 2,
      directory: '/srv/payments/cluster',
      temporalDatabases: { default: 'temporal', visibility: 'temporal_visibility' },
      temporalMaxConns: 8,
      demoData: false,
    });
  });

  it('takes every setting from the environment and refuses a bad number', () => {
    const options = clusterOptionsFromEnvironment(config, { CLUSTER_WORKERS: '3', TEMPORAL_NUM_HISTORY_SHARDS: '512', TEMPORAL_UI_PORT: '0', TEMPORAL_DATABASE: 'tdb', CLUSTER_DEMO_DATA: 'true' });
    expect(options).toMatchObject({ workers: 3, historyShards: 512, uiPort: 0, temporalDatabases: { default: 'tdb', visibility: 'temporal_visibility' }, demoData: true });
    expect(() => clusterOptionsFromEnvironment(config, { CLUSTER_APIS: 'two' })).toThrow('CLUSTER_APIS');
    expect(() => clusterOptionsFromEnvironment(config, { TEMPORAL_FRONTEND_PORT: '1000' })).toThrow('TEMPORAL_FRONTEND_PORT');
    // Temporal's SQL schema keeps membership ports (300 below the frontend's) in a smallint.
    expect(() => clusterOptionsFromEnvironment(config, { TEMPORAL_FRONTEND_PORT: '37317' })).toThrow('smallint');
    expect(clusterOptionsFromEnvironment(config, { TEMPORAL_FRONTEND_PORT: '33061' }).temporalPort).toBe(33_061);
  });
});

describe('the PostgreSQL connection budget', () => {
  const config = loadConfig({ DATA_DIR: '/srv/payments' });
  /** A default PostgreSQL accepts this many ordinary connections: max_connections 100 − superuser_reserved 3. */
  const DEFAULT_POSTGRES_ACCEPTS = 97;

  it('counts each Temporal service’s pools on both stores, as the server opens them', () => {
    const config = parse(temporalServerConfig({ endpoint: postgresEndpoint('postgres://127.0.0.1/p'), frontendPort: 7233, historyShards: 4, dynamicConfigFile: '/d.yaml', logFile: '/l.log', maxConns: 20 }));
    const services = Object.keys(config.services).length;
    const perService = config.persistence.datastores['postgres-default'].sql.maxConns + config.persistence.datastores['postgres-visibility'].sql.maxConns;
    expect(temporalServerConnectionsMax(20)).toBe(services * perService);
    expect(temporalServerConnectionsMax(20)).toBe(96);
  });

  it('keeps the default cluster within a default PostgreSQL server, with room for operators', () => {
    const budget = clusterConnectionBudget(clusterOptionsFromEnvironment(config, {}), true);
    expect(budget).toEqual({ roles: 4 * 11 + 5, temporal: 4 * (8 + 2), total: 89 });
    expect(budget.total).toBeLessThanOrEqual(DEFAULT_POSTGRES_ACCEPTS);
    // Pools of 20 per Temporal service (the earlier default) could open 145: "too many clients" under load.
    expect(clusterConnectionBudget(clusterOptionsFromEnvironment(config, { TEMPORAL_SQL_MAX_CONNS: '20' }), true).total).toBe(145);
  });

  it('leaves the Temporal server out when the cluster uses one it does not run', () => {
    const options = clusterOptionsFromEnvironment(config, { CLUSTER_WORKERS: '3', CLUSTER_APIS: '3' });
    expect(clusterConnectionBudget(options, false)).toEqual({ roles: 6 * 11 + 5, temporal: 0, total: 71 });
  });
});

describe('the children’s code', () => {
  it('is the compiled dist/ when it exists, else the sources through tsx', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'cluster-child-'));
    expect(childCommand(root)).toEqual({ exec: path.join(root, 'src', 'cli', 'main.ts'), execArgv: ['--import', 'tsx'], compiled: false });
    mkdirSync(path.join(root, 'dist', 'src', 'cli'), { recursive: true });
    writeFileSync(path.join(root, 'dist', 'src', 'cli', 'main.js'), '');
    const compiled = { exec: path.join(root, 'dist', 'src', 'cli', 'main.js'), execArgv: [], compiled: true };
    expect(childCommand(root)).toEqual(compiled);
    expect(childCommand(path.join(root, 'dist'))).toEqual(compiled);
  });
});

describe('the Temporal server binaries', () => {
  const saved = { PATH: process.env.PATH, XDG_CACHE_HOME: process.env.XDG_CACHE_HOME, TEMPORAL_SERVER_PATH: process.env.TEMPORAL_SERVER_PATH, TEMPORAL_SQL_TOOL_PATH: process.env.TEMPORAL_SQL_TOOL_PATH };
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it('are built once with go install into the per-user cache, then found there', async () => {
    const { ensureTemporalServer, findTemporalServer } = await import('../../src/temporal/server-binary');
    const home = mkdtempSync(path.join(os.tmpdir(), 'cluster-go-'));
    const bin = path.join(home, 'bin');
    mkdirSync(bin);
    // A stand-in `go`: records its arguments and GOBIN, and "installs" two executables there.
    writeFileSync(
      path.join(bin, 'go'),
      `#!/bin/sh\necho "$@ GOBIN=$GOBIN" >> "${home}/go.log"\nfor name in server sql; do printf '#!/bin/sh\\nexit 0\\n' > "$GOBIN/$name"; chmod +x "$GOBIN/$name"; done\n`,
      { mode: 0o755 },
    );
    process.env.PATH = `${bin}:${process.env.PATH}`;
    process.env.XDG_CACHE_HOME = path.join(home, 'cache');
    delete process.env.TEMPORAL_SERVER_PATH;
    delete process.env.TEMPORAL_SQL_TOOL_PATH;
    const directory = path.join(home, 'cache', 'payments-platform', 'temporal-server-v1.32.1');
    expect(findTemporalServer()).toBeUndefined();
    const lines: string[] = [];
    expect(ensureTemporalServer((line) => lines.push(line))).toEqual({ server: path.join(directory, 'server'), sql: path.join(directory, 'sql') });
    expect(lines.join('\n')).toContain('go install');
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(path.join(home, 'go.log'), 'utf8').trim()).toBe(
      `install go.temporal.io/server/cmd/server@v1.32.1 go.temporal.io/server/cmd/tools/sql@v1.32.1 GOBIN=${directory}`,
    );
    // Found in the cache from then on: no second build.
    expect(findTemporalServer()).toEqual({ server: path.join(directory, 'server'), sql: path.join(directory, 'sql') });
    ensureTemporalServer();
    expect(readFileSync(path.join(home, 'go.log'), 'utf8').trim().split('\n')).toHaveLength(1);
  });
});

describe('the cluster’s Temporal certificates', () => {
  it('are a CA, a server certificate for the names asked and a client certificate per party, private keys 0600, kept across starts', () => {
    const directory = path.join(mkdtempSync(path.join(os.tmpdir(), 'cluster-pki-')), 'tls');
    const pki = ensureClusterPki(directory, ['temporal']);
    const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);
    expect(mode(directory)).toBe('700');
    for (const file of [pki.server.key, ...TEMPORAL_CLIENTS.map((client) => pki.clients[client].key), path.join(directory, 'ca-key.pem')]) expect([file, mode(file)]).toEqual([file, '600']);
    const ca = forge.pki.certificateFromPem(readFileSync(pki.ca, 'utf8'));
    const server = forge.pki.certificateFromPem(readFileSync(pki.server.cert, 'utf8'));
    expect(ca.verify(server)).toBe(true);
    const names = (server.getExtension('subjectAltName') as { altNames: Array<{ value?: string; ip?: string }> }).altNames.map((name) => name.ip ?? name.value);
    expect(names).toEqual(['localhost', '127.0.0.1', 'temporal']);
    expect(server.getExtension('extKeyUsage')).toMatchObject({ serverAuth: true, clientAuth: true });
    const api = forge.pki.certificateFromPem(readFileSync(pki.clients.api.cert, 'utf8'));
    const usage = api.getExtension('extKeyUsage') as { clientAuth?: boolean; serverAuth?: boolean };
    expect([ca.verify(api), api.subject.getField('CN').value, Boolean(usage.clientAuth), Boolean(usage.serverAuth)]).toEqual([true, 'api', true, false]);
    // A second start keeps them; a server certificate lacking a newly asked name is made again under the same CA.
    const before = readFileSync(pki.clients.api.cert, 'utf8');
    ensureClusterPki(directory, ['temporal']);
    expect(readFileSync(pki.clients.api.cert, 'utf8')).toBe(before);
    ensureClusterPki(directory, ['temporal', 'temporal.internal']);
    expect(ca.verify(forge.pki.certificateFromPem(readFileSync(pki.server.cert, 'utf8')))).toBe(true);
    expect(readFileSync(pki.clients.api.cert, 'utf8')).toBe(before);
    expect(temporalClientSettings(pki, 'worker')).toEqual({ TEMPORAL_TLS_CA: pki.ca, TEMPORAL_TLS_CERT: pki.clients.worker.cert, TEMPORAL_TLS_KEY: pki.clients.worker.key, TEMPORAL_TLS_SERVER_NAME: 'localhost' });
  });

  it('makes certificates OpenSSL loads whatever their random serial (strict DER: no padding byte)', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'cluster-pki-der-'));
    // The worst serial: random bytes that start with zeros (an all-zero draw stands for the 1 in 256 that start so).
    const real = crypto.randomBytes;
    const draws = jest.spyOn(crypto, 'randomBytes').mockImplementation(((size: number) => (size <= 16 ? Buffer.alloc(size) : real(size))) as typeof crypto.randomBytes);
    let pki: ReturnType<typeof ensureClusterPki>;
    try {
      pki = ensureClusterPki(path.join(root, 'pki'));
    } finally {
      draws.mockRestore();
    }
    const refused: string[] = [];
    for (const file of [pki.ca, pki.server.cert, ...Object.values(pki.clients).map((pair) => pair.cert), pki.rpc.ca, pki.rpc.server.cert, ...Object.values(pki.rpc.clients).map((pair) => pair.cert)]) {
      try {
        new crypto.X509Certificate(readFileSync(file));
      } catch (error) {
        refused.push(`${path.basename(file)}: ${(error as Error).message}`);
      }
    }
    expect(refused).toEqual([]);
  });

  it('copies to each party only its own certificate and key (docker-compose mounts one subdirectory each)', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'cluster-pki-export-'));
    const pki = ensureClusterPki(path.join(root, 'pki'), ['temporal']);
    exportClusterPki(pki, path.join(root, 'tls'));
    expect(readdirSync(path.join(root, 'tls')).sort()).toEqual(['api', 'operator', 'rpc-facade', 'rpc-operator', 'rpc-server', 'server', 'ui', 'worker']);
    // The RPC's parties get the RPC CA, not Temporal's.
    expect(readFileSync(path.join(root, 'tls', 'rpc-facade', 'ca.pem'), 'utf8')).toBe(readFileSync(pki.rpc.ca, 'utf8'));
    expect(readFileSync(path.join(root, 'tls', 'rpc-facade', 'ca.pem'), 'utf8')).not.toBe(readFileSync(pki.ca, 'utf8'));
    expect(readdirSync(path.join(root, 'tls', 'api')).sort()).toEqual(['ca.pem', 'cert.pem', 'key.pem']);
    expect(readFileSync(path.join(root, 'tls', 'api', 'key.pem'), 'utf8')).toBe(readFileSync(pki.clients.api.key, 'utf8'));
    expect(readFileSync(path.join(root, 'tls', 'server', 'cert.pem'), 'utf8')).toBe(readFileSync(pki.server.cert, 'utf8'));
  });
});

describe('the cluster’s database roles', () => {
  it('are named after the databases, within PostgreSQL’s 63 characters', () => {
    expect(clusterRoleNames('payments')).toEqual({ api: 'payments_api', worker: 'payments_worker', temporal: 'temporal_server' });
    expect(clusterRoleNames('payments_cluster_42', { default: 'temporal_cluster_42', visibility: 'temporal_visibility_cluster_42' })).toEqual({
      api: 'payments_cluster_42_api',
      worker: 'payments_cluster_42_worker',
      temporal: 'temporal_cluster_42_server',
    });
    expect(clusterRoleNames('p'.repeat(80)).worker).toHaveLength(63);
    expect(urlForRole('postgres://postgres:secret@db:5432/payments', 'payments_api')).toBe('postgres://payments_api@db:5432/payments');
    expect(urlForRole('postgres://postgres:secret@db:5432/payments', 'payments_api', 'f00d')).toBe('postgres://payments_api:f00d@db:5432/payments');
  });
});
