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

const services = composeFile().services;
const script = (name: string) => readFileSync(path.join(__dirname, '..', '..', 'compose', name), 'utf8');
const environment = (name: string) => Object.fromEntries(Object.entries(services[name]!.environment ?? {}).map(([key, value]) => [key, value === null || value === undefined ? '' : String(value)]));
const volumes = (name: string) => (services[name]!.volumes ?? []).map((volume) => (typeof volume === 'string' ? volume : `${(volume as { source: string }).source}:${(volume as { target: string }).target}:${(volume as { volume?: { subpath?: string } }).volume?.subpath ?? ''}`));
const databaseUser = (name: string) => new URL(environment(name).DATABASE_URL!).username;

describe('docker-compose: least privilege', () => {
  it('gives the façade no database URL, no keys, no Temporal settings and no upstream secret', () => {
    const facade = environment('payments-facade');
    for (const name of ['DATABASE_URL', 'DATABASE_PASSWORD_FILE', 'TEMPORAL_ADDRESS', 'TEMPORAL_TLS_KEY', 'UPSTREAM_API_KEY', 'UPSTREAM_API_KEY_FILE', 'UPSTREAM_WEBHOOK_SECRET', 'UPSTREAM_WEBHOOK_SECRET_FILE']) {
      expect([name, facade[name]]).toEqual([name, undefined]);
    }
    expect(services['payments-facade']!.secrets).toBeUndefined();
    expect(volumes('payments-facade')).toEqual(['rpc-credentials:/credentials:ro', 'temporal-tls:/rpc-tls:rpc-facade']);
    expect(facade.RPC_TOKEN_FILE).toBe('/credentials/facade.json');
  });

  it('runs the internal RPC over mTLS: the api requires a certificate of the RPC CA, the façade presents its own', () => {
    const api = environment('payments-api');
    expect([api.RPC_TLS_CERT, api.RPC_TLS_KEY, api.RPC_TLS_CLIENT_CA]).toEqual(['/rpc-tls/cert.pem', '/rpc-tls/key.pem', '/rpc-tls/ca.pem']);
    expect(volumes('payments-api')).toContain('temporal-tls:/rpc-tls:rpc-server');
    const facade = environment('payments-facade');
    expect(facade.RPC_URL).toBe('https://payments-api:8080');
    expect([facade.RPC_CLIENT_TLS_CERT, facade.RPC_CLIENT_TLS_KEY, facade.RPC_CLIENT_TLS_CA]).toEqual(['/rpc-tls/cert.pem', '/rpc-tls/key.pem', '/rpc-tls/ca.pem']);
    // The api's certificate names the host the façades dial.
    expect(services['temporal-certificates']!.command).toEqual(expect.arrayContaining(['--host', 'payments-api']));
  });

  it('gives the worker what its refund requests need (the provider URLs and API key), never the notification secret', () => {
    const worker = environment('payments-worker');
    expect(Object.keys(worker)).toEqual(expect.arrayContaining(['UPSTREAM_PAYIN_URL', 'UPSTREAM_REFUND_URL', 'UPSTREAM_API_KEY_FILE', 'PUBLIC_BASE_URL']));
    expect([worker.UPSTREAM_WEBHOOK_SECRET, worker.UPSTREAM_WEBHOOK_SECRET_FILE]).toEqual([undefined, undefined]);
    expect(services['payments-worker']!.secrets).not.toContain('upstream_webhook_secret');
    expect(Object.keys(environment('payments-api'))).toEqual(expect.arrayContaining(['UPSTREAM_REFUND_URL', 'UPSTREAM_WEBHOOK_SECRET_FILE']));
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
    // Each role's password is its own secret, mounted in that role's containers only.
    for (const [service, secret] of [['payments-api', 'payments_api_db_password'], ['payments-worker', 'payments_worker_db_password'], ['payments-migrate', 'payments_owner_db_password']] as const) {
      expect([service, environment(service).DATABASE_PASSWORD_FILE]).toEqual([service, `/run/secrets/${secret}`]);
      expect(services[service]!.secrets!.filter((name) => name.endsWith('_db_password'))).toEqual([secret]);
    }
    const script = readFileSync(path.join(__dirname, '..', '..', 'compose', 'postgres-roles.sh'), 'utf8');
    for (const role of ['payments_owner', 'payments_api', 'payments_worker', 'temporal']) expect(script).toMatch(new RegExp(`CREATE ROLE ${role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD`));
  });

  it('keeps every password and secret in Docker secrets (files), none in the file or in an environment', () => {
    const text = readFileSync(path.join(__dirname, '..', '..', 'docker-compose.yml'), 'utf8');
    expect(text).not.toMatch(/postgres:\/\/[^:@\s]+:[^@\s]*@/);
    const compose = composeFile({});
    expect(Object.values(compose.secrets).map((secret) => secret.file).sort()).toEqual(Object.keys(COMPOSE_SECRETS).map((name) => `./secrets/${name}`).sort());
    const secretNames = /PASSWORD|SECRET|API_KEY|TOKEN$/;
    for (const [name, service] of Object.entries(compose.services)) {
      const inline = Object.entries(service.environment ?? {}).filter(([key, value]) => secretNames.test(key) && !key.endsWith('_FILE') && key !== 'RPC_TOKEN_FILE' && value);
      expect([name, inline]).toEqual([name, []]);
      for (const [key, value] of Object.entries(service.environment ?? {})) {
        if (/_FILE$/.test(key) && String(value).startsWith('/run/secrets/')) expect([name, service.secrets]).toEqual([name, expect.arrayContaining([String(value).slice('/run/secrets/'.length)])]);
      }
    }
    expect(environment('postgres').POSTGRES_PASSWORD_FILE).toBe('/run/secrets/postgres_password');
    expect(script('postgres-roles.sh')).toContain('/run/secrets/$1');
  });

  it('runs Temporal with mTLS: client certificates required, and every party mounts only its own certificate', () => {
    const temporal = environment('temporal');
    expect(temporal).toMatchObject({ TEMPORAL_TLS_REQUIRE_CLIENT_AUTH: 'true', TEMPORAL_TLS_CLIENT1_CA_CERT: '/tls/ca.pem', TEMPORAL_TLS_FRONTEND_CERT: '/tls/cert.pem' });
    expect(volumes('temporal')).toEqual(['temporal-tls:/tls:server']);
    for (const [service, party] of [['payments-api', 'api'], ['payments-worker', 'worker'], ['temporal-ui', 'ui'], ['temporal-namespace', 'operator']] as const) {
      // Temporal's certificate only (the api also mounts the RPC's, below).
      expect(volumes(service).filter((volume) => volume.startsWith('temporal-tls:/tls:'))).toEqual([`temporal-tls:/tls:${party}`]);
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

describe('docker-compose: running it', () => {
  const oneShots = ['temporal-certificates', 'temporal-schema', 'temporal-namespace', 'payments-migrate', 'payments-credentials'];

  it('restarts every long-running service unless stopped (PostgreSQL and Temporal too), and never a one-shot', () => {
    for (const [name, service] of Object.entries(services)) {
      expect([name, service.restart]).toEqual([name, oneShots.includes(name) ? 'no' : 'unless-stopped']);
    }
    expect(services.postgres!.restart).toBe('unless-stopped');
    expect(services.temporal!.restart).toBe('unless-stopped');
  });

  it('checks each role container with payments health for its own role', () => {
    for (const [service, role] of [['payments-api', 'api'], ['payments-worker', 'worker'], ['payments-facade', 'facade']] as const) {
      expect([service, services[service]!.command, environment(service).PAYMENTS_ROLES]).toEqual([service, ['serve'], role]);
      expect(services[service]!.healthcheck?.test).toEqual(['CMD', 'node', 'bin/payments', 'health']);
    }
    // The api's probe calls its own RPC as any caller must: with a credential (the façades').
    expect(environment('payments-api').RPC_TOKEN_FILE).toBe('/credentials/facade.json');
    expect(volumes('payments-api')).toContain('rpc-credentials:/credentials:ro');
  });

  it('has nginx find a restarted façade: Docker’s resolver and a variable in proxy_pass', () => {
    const nginx = composeFile().configs['facade-lb']!.content!;
    expect(nginx).toMatch(/resolver 127\.0\.0\.11 valid=\d+s/);
    expect(nginx).toMatch(/set \$\$facades payments-facade:3000;/);
    expect(nginx).toMatch(/proxy_pass http:\/\/\$\$facades;/);
    expect(nginx).not.toMatch(/^\s*upstream\s/m);
  });

  it('wires Prometheus, the OpenTelemetry collector and Grafana to the roles', () => {
    const compose = composeFile();
    for (const role of ['payments-api', 'payments-worker', 'payments-facade']) {
      expect([role, environment(role).METRICS_PORT, environment(role).METRICS_HOST, environment(role).OTEL_EXPORTER_OTLP_ENDPOINT]).toEqual([role, '9464', '0.0.0.0', 'http://otel-collector:4318']);
    }
    expect(environment('payments-worker').TEMPORAL_METRICS_PORT).toBe('9465');
    const prometheus = compose.configs.prometheus!.content!;
    expect(prometheus).toContain('names: [payments-api, payments-worker, payments-facade]');
    expect(prometheus).toMatch(/port: 9464[\s\S]*names: \[payments-worker\][\s\S]*port: 9465/);
    expect(compose.configs['otel-collector']!.content).toMatch(/endpoint: 0\.0\.0\.0:4318/);
    expect(compose.configs['grafana-datasource']!.content).toContain('url: http://prometheus:9090');
    expect(compose.configs['grafana-dashboard']!.file).toBe('./docs/grafana-dashboard.json');
    expect(services.grafana!.configs!.map((config) => config.source)).toEqual(['grafana-datasource', 'grafana-dashboards', 'grafana-dashboard']);
    expect(environment('grafana').GF_SECURITY_ADMIN_PASSWORD__FILE).toBe('/run/secrets/grafana_admin_password');
  });
});
