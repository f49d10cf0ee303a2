/**
 * Least privilege in the cluster topology (docs/security.md "Least privilege"): cluster.json, the credentials files,
 * the sandbox secrets and the private keys are 0600 in a 0700 directory, and cluster.json holds none of their
 * secrets; the façade processes hold no database URL, key directory, Temporal certificate or upstream secret; the api,
 * worker and Temporal server processes connect as roles of their own without superuser, the worker without the
 * service credentials and the Temporal server without the platform's database. Only against a running cluster
 * (npm run test:cluster).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { readCredentialsFile } from '../../src/service-credentials/files';
import { readClusterState } from '../support/cluster';

const state = readClusterState();
const describeCluster = state ? describe : describe.skip;

/** The environment of a running process (same user: /proc/<pid>/environ). */
function environmentOf(pid: number): Record<string, string> {
  return Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
  );
}

const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);

describeCluster('least privilege in the cluster', () => {
  const cluster = state!;
  const directory = path.dirname(cluster.adminCredentialsFile);

  it('keeps its state, credentials, sandbox secrets and private keys 0600 in a 0700 directory', () => {
    expect(mode(directory)).toBe('700');
    const files = ['cluster.json', 'admin-credentials.json', 'facade-credentials.json', ...(cluster.upstream ? ['sandbox-upstream.json'] : [])];
    for (const name of files) expect([name, mode(path.join(directory, name))]).toEqual([name, '600']);
    if (cluster.temporalTls) {
      const tls = path.dirname(cluster.temporalTls.key);
      expect(mode(tls)).toBe('700');
      for (const name of readdirSync(tls).filter((file) => file.endsWith('-key.pem'))) expect([name, mode(path.join(tls, name))]).toEqual([name, '600']);
    }
  });

  it('writes no secret into cluster.json: only the files that hold them', () => {
    const text = readFileSync(path.join(directory, 'cluster.json'), 'utf8');
    const secrets = [readCredentialsFile(cluster.adminCredentialsFile)!.token, readCredentialsFile(path.join(directory, 'facade-credentials.json'))!.token];
    if (cluster.upstream) secrets.push(cluster.upstream.apiKey, cluster.upstream.webhookSecret);
    for (const secret of secrets) expect(text.includes(secret)).toBe(false);
    expect(text).not.toMatch(/PRIVATE KEY|pps_/);
    expect(new URL(cluster.databaseUrl).password).toBe('');
  });

  it('gives the façade processes no database URL, keys, Temporal settings or upstream secret, and the workers no notification secret', () => {
    const facades = cluster.processes.filter((child) => child.role === 'facade');
    expect(facades.length).toBeGreaterThan(0);
    for (const facade of facades) {
      const environment = environmentOf(facade.pid);
      for (const name of ['DATABASE_URL', 'PLATFORM_KEY_DIR', 'TEMPORAL_ADDRESS', 'TEMPORAL_TLS_KEY', 'UPSTREAM_API_KEY', 'UPSTREAM_WEBHOOK_SECRET']) {
        expect([name, environment[name] ?? '']).toEqual([name, '']);
      }
      expect(environment.RPC_TOKEN_FILE).toBe(path.join(directory, 'facade-credentials.json'));
      // It reaches the api over mTLS with a certificate of its own, never the CA's key.
      expect(environment.RPC_URL).toMatch(/^https:\/\//);
      expect(environment.RPC_CLIENT_TLS_CERT).toMatch(/rpc-facade\.pem$/);
      expect(Object.values(environment).some((value) => value.endsWith('ca-key.pem'))).toBe(false);
    }
    // The workers check no notification: no notification secret. They request refunds, so they hold the provider's API key.
    for (const worker of cluster.processes.filter((child) => child.role === 'worker')) {
      const environment = environmentOf(worker.pid);
      expect(['UPSTREAM_WEBHOOK_SECRET', environment.UPSTREAM_WEBHOOK_SECRET ?? '']).toEqual(['UPSTREAM_WEBHOOK_SECRET', '']);
      if (cluster.upstream) expect(environment.UPSTREAM_API_KEY).toBe(cluster.upstream.apiKey);
    }
  });

  describe('database roles', () => {
    const roles = cluster.databaseRoles;
    const describeRoles = roles ? describe : describe.skip;
    let admin: pg.Client;
    beforeAll(async () => {
      admin = new pg.Client({ connectionString: cluster.databaseUrl });
      await admin.connect();
    });
    afterAll(() => admin.end());

    /** Runs `sql` on `database` as `role`; answers "ok" or the error's SQLSTATE. */
    async function as(role: string, database: string, sql: string): Promise<string> {
      const url = new URL(cluster.databaseUrl);
      url.username = role;
      url.pathname = `/${database}`;
      const client = new pg.Client({ connectionString: url.toString() });
      try {
        await client.connect();
        await client.query(sql);
        return 'ok';
      } catch (error) {
        return (error as { code?: string }).code ?? 'error';
      } finally {
        await client.end().catch(() => undefined);
      }
    }

    describeRoles('', () => {
      const platform = () => new URL(cluster.databaseUrl).pathname.slice(1);

      it('are none of them superusers, and the processes connect as them', async () => {
        const { rows } = await admin.query('SELECT rolname, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = ANY($1) ORDER BY rolname', [Object.values(roles!)]);
        expect(rows).toHaveLength(3);
        for (const row of rows) expect(row).toMatchObject({ rolsuper: false, rolcreaterole: false, rolcreatedb: false });
        const userOf = (role: 'api' | 'worker') => cluster.processes.filter((child) => child.role === role).map((child) => new URL(environmentOf(child.pid).DATABASE_URL!).username);
        expect(new Set(userOf('api'))).toEqual(new Set([roles!.api]));
        expect(new Set(userOf('worker'))).toEqual(new Set([roles!.worker]));
        if (cluster.temporalDatabases) {
          const { rows: temporal } = await admin.query('SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = $1', [cluster.temporalDatabases.default]);
          expect(temporal.map((row: { usename: string }) => row.usename)).toEqual([roles!.temporal]);
        }
      });

      it('lets the api and worker roles move records but change no schema; the worker reads no service credentials', async () => {
        expect(await as(roles!.api, platform(), 'SELECT count(*) FROM service_credentials')).toBe('ok');
        expect(await as(roles!.api, platform(), 'CREATE TABLE intruder (id int)')).toBe('42501');
        expect(await as(roles!.api, platform(), 'DROP TABLE payins')).toBe('42501');
        expect(await as(roles!.api, platform(), 'DELETE FROM knex_migrations')).toBe('42501');
        expect(await as(roles!.worker, platform(), 'SELECT count(*) FROM service_credentials')).toBe('42501');
        expect(await as(roles!.worker, platform(), 'SELECT count(*) FROM payins')).toBe('ok');
        // The audit trail is append-only for the serving roles by privilege, not only by its trigger.
        expect(await as(roles!.api, platform(), 'SELECT count(*) FROM audit_records')).toBe('ok');
        expect(await as(roles!.api, platform(), 'UPDATE audit_records SET outcome = outcome')).toBe('42501');
        expect(await as(roles!.worker, platform(), 'DELETE FROM audit_records')).toBe('42501');
        // Nor may they write a row of their own choosing: only through the function that stamps their role.
        const forged = "INSERT INTO audit_records (credential_id, caller_address, procedure, arguments, outcome) VALUES ('cred_someone', '10.0.0.1', 'x/Y', '{}', 'ok')";
        expect(await as(roles!.api, platform(), forged)).toBe('42501');
        expect(await as(roles!.worker, platform(), forged)).toBe('42501');
        expect(await as(roles!.api, platform(), "SELECT append_audit_record('cred_cluster_test', '127.0.0.1', NULL, 'x/LeastPrivilege', '{}'::jsonb, 'ok')")).toBe('ok');
        const { rows } = await admin.query("SELECT database_role FROM audit_records WHERE procedure = 'x/LeastPrivilege'");
        expect(rows.map((row: { database_role: string }) => row.database_role)).toContain(roles!.api);
      });

      it('keeps the Temporal server’s role out of the platform’s database, and the platform’s roles out of Temporal’s', async () => {
        expect(await as(roles!.temporal, platform(), 'SELECT 1')).toBe('42501');
        if (cluster.temporalDatabases) {
          for (const database of Object.values(cluster.temporalDatabases)) {
            expect(await as(roles!.api, database, 'SELECT 1')).toBe('42501');
            expect(await as(roles!.temporal, database, 'SELECT count(*) FROM schema_version')).toBe('ok');
            expect(await as(roles!.temporal, database, 'CREATE TABLE intruder (id int)')).toBe('42501');
          }
        }
      });
    });
  });
});
