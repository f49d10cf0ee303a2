/**
 * Least privilege in docker-compose (docs/security.md "Least privilege"), read as data (no Docker engine here): the
 * internet-facing façade gets no database URL, no keys and no Temporal settings; the api, the worker, the migrations
 * and the Temporal server each connect as a role of their own, none the superuser, with passwords the operator sets
 * (none written in the file); Temporal speaks mTLS to every party, each mounting only its own certificate; only the
 * façades' load balancer is published beyond 127.0.0.1.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { composeFile, COMPOSE_SECRETS } from '../support/deployment-files';

const services = composeFile(COMPOSE_SECRETS).services;
const environment = (name: string) => Object.fromEntries(Object.entries(services[name]!.environment ?? {}).map(([key, value]) => [key, value === null || value === undefined ? '' : String(value)]));
const volumes = (name: string) => (services[name]!.volumes ?? []).map((volume) => (typeof volume === 'string' ? volume : `${(volume as { source: string }).source}:${(volume as { target: string }).target}:${(volume as { volume?: { subpath?: string } }).volume?.subpath ?? ''}`));
const databaseUser = (name: string) => new URL(environment(name).DATABASE_URL!).username;

describe('docker-compose: least privilege', () => {
  it('gives the façade no database URL, no keys, no Temporal settings and no upstream secret', () => {
    const facade = environment('payments-facade');
    for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_TLS_KEY', 'UPSTREAM_API_KEY', 'UPSTREAM_WEBHOOK_SECRET']) expect([name, facade[name]]).toEqual([name, undefined]);
    expect(volumes('payments-facade')).toEqual(['rpc-credentials:/credentials:ro']);
    expect(facade.RPC_TOKEN_FILE).toBe('/credentials/facade.json');
  });

  it('gives the worker what its refund requests need (the provider URLs and API key), never the notification secret', () => {
    const worker = environment('payments-worker');
    expect(Object.keys(worker)).toEqual(expect.arrayContaining(['UPSTREAM_PAYIN_URL', 'UPSTREAM_REFUND_URL', 'UPSTREAM_API_KEY', 'PUBLIC_BASE_URL']));
    expect(worker.UPSTREAM_WEBHOOK_SECRET).toBeUndefined();
    expect(Object.keys(environment('payments-api'))).toEqual(expect.arrayContaining(['UPSTREAM_REFUND_URL', 'UPSTREAM_WEBHOOK_SECRET']));
  });

  it('connects the api, the worker, the migrations and Temporal as roles of their own, none the superuser', () => {
    const users = {
      api: databaseUser('payments-api'),
      worker: databaseUser('payments-worker'),
      migrate: databaseUser('payments-migrate'),
      credentials: databaseUser('payments-credentials'),
      temporal: environment('temporal').POSTGRES_USER,
    };
    expect(users).toEqual({ api: 'payments_api', worker: 'payments_worker', migrate: 'payments_owner', credentials: 'payments_owner', temporal: 'temporal' });
    expect(services['payments-migrate']!.command).toEqual(['migrate', '--api-role', 'payments_api', '--worker-role', 'payments_worker']);
    // Each role's password is its own, from the operator's environment.
    expect(new URL(environment('payments-api').DATABASE_URL!).password).toBe(COMPOSE_SECRETS.PAYMENTS_API_DB_PASSWORD);
    expect(new URL(environment('payments-worker').DATABASE_URL!).password).toBe(COMPOSE_SECRETS.PAYMENTS_WORKER_DB_PASSWORD);
    const script = readFileSync(path.join(__dirname, '..', '..', 'compose', 'postgres-roles.sh'), 'utf8');
    for (const role of ['payments_owner', 'payments_api', 'payments_worker', 'temporal']) expect(script).toMatch(new RegExp(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD`));
  });

  it('writes no password into the file: without the operator’s, compose refuses to start', () => {
    expect(() => composeFile({})).toThrow(/is required: set the database passwords in \.env first/);
    const text = readFileSync(path.join(__dirname, '..', '..', 'docker-compose.yml'), 'utf8');
    expect(text).not.toMatch(/postgres:\/\/[^:@\s]+:[^$@\s][^@\s]*@/);
  });

  it('runs Temporal with mTLS: client certificates required, and every party mounts only its own certificate', () => {
    const temporal = environment('temporal');
    expect(temporal).toMatchObject({ TEMPORAL_TLS_REQUIRE_CLIENT_AUTH: 'true', TEMPORAL_TLS_CLIENT1_CA_CERT: '/tls/ca.pem', TEMPORAL_TLS_FRONTEND_CERT: '/tls/cert.pem' });
    expect(volumes('temporal')).toEqual(['temporal-tls:/tls:server']);
    for (const [service, party] of [['payments-api', 'api'], ['payments-worker', 'worker'], ['temporal-ui', 'ui'], ['temporal-namespace', 'operator']] as const) {
      expect(volumes(service).filter((volume) => volume.startsWith('temporal-'))).toEqual([`temporal-tls:/tls:${party}`]);
    }
    for (const service of ['payments-api', 'payments-worker', 'temporal-ui']) {
      expect(environment(service)).toMatchObject({ TEMPORAL_TLS_CA: '/tls/ca.pem', TEMPORAL_TLS_CERT: '/tls/cert.pem', TEMPORAL_TLS_KEY: '/tls/key.pem' });
      expect(environment(service).TEMPORAL_ALLOW_INSECURE).toBeUndefined();
    }
    // The CA's key is in a volume only the certificates' one-shot mounts.
    const pkiUsers = Object.keys(services).filter((name) => volumes(name).some((volume) => volume.startsWith('temporal-pki:')));
    expect(pkiUsers).toEqual(['temporal-certificates']);
  });

  it('publishes only the façades’ load balancer beyond this host', () => {
    const published = Object.entries(services).flatMap(([name, service]) => (service.ports ?? []).map((port) => [name, String(port)] as const));
    for (const [name, port] of published) {
      if (name === 'payments-facade-lb') expect(port).toBe('3000:3000');
      else expect([name, port]).toEqual([name, expect.stringMatching(/^127\.0\.0\.1:/)]);
    }
  });
});
