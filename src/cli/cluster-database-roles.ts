/**
 * Least privilege on the cluster's PostgreSQL (docs/security.md "Least privilege"): `payments cluster up` connects as
 * the user of DATABASE_URL (the supervisor: it creates the databases, migrates them and sets up Temporal's schema),
 * and gives each process kind a role of its own, none of them a superuser:
 *
 *   <platform database>_api       the api processes: SELECT, INSERT, UPDATE, DELETE on the platform's tables and
 *                                 their sequences, but only SELECT on the audit trail (appended through
 *                                 append_audit_record, which stamps the role); no DDL, no migration bookkeeping
 *   <platform database>_worker    the worker processes: the same, except the service credentials (a worker never
 *                                 authenticates an RPC caller, so it can neither read their hashes nor mint one)
 *   <temporal database>_server    the Temporal server: the same on Temporal's two databases, nothing on the platform's
 *
 * Each database's CONNECT is taken from PUBLIC and given to its roles only. The grants are made again at every
 * start, after the migrations, so new tables are covered. Roles are created only when the supervisor may
 * (superuser, or CREATEROLE); otherwise every process keeps the supervisor's user, with a warning.
 *
 * Every start gives each role a fresh random password (sent as a SCRAM-SHA-256 verifier, so the plaintext never
 * reaches the server or its statement log) and hands it to that role's processes only, in their DATABASE_URL: the
 * roles log in whether the server trusts local connections or checks passwords (scram-sha-256 or md5 in pg_hba.conf).
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import type { Knex } from '../db/knex';
import { TEMPORAL_DATABASES, type TemporalDatabases } from '../temporal/server';

export interface ClusterDatabaseRoles {
  api: string;
  worker: string;
  temporal: string;
}

/** Tables the worker role gets nothing on. */
export const WORKER_EXCLUDED_TABLES = ['service_credentials'] as const;

/** Tables only the migrating user touches. */
const MIGRATION_TABLES = ['knex_migrations', 'knex_migrations_lock'];
/**
 * Tables the serving roles may read but never write directly: the audit trail. They append to it only through
 * AUDIT_APPEND_FUNCTION, which stamps their role on the row. Its trigger refuses UPDATE and DELETE too, but a trigger
 * is the owner's to drop; the privileges are the database's own word.
 */
export const APPEND_ONLY_TABLES = ['audit_records'] as const;
/** The one way a serving role writes an audit row (migration 043, SECURITY DEFINER). */
export const AUDIT_APPEND_FUNCTION = 'append_audit_record(text, text, text, text, jsonb, text)';

/** PostgreSQL's limit on identifiers. */
const IDENTIFIER_MAX = 63;

/** The role names for a platform database and Temporal databases (PostgreSQL roles are global to the server). */
export function clusterRoleNames(platformDatabase: string, temporalDatabases: TemporalDatabases = TEMPORAL_DATABASES): ClusterDatabaseRoles {
  const name = (base: string, suffix: string) => `${base.slice(0, IDENTIFIER_MAX - suffix.length)}${suffix}`;
  return { api: name(platformDatabase, '_api'), worker: name(platformDatabase, '_worker'), temporal: name(temporalDatabases.default, '_server') };
}

const identifier = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Whether the connected user may create roles (superuser or CREATEROLE). */
export async function mayCreateRoles(database: Knex): Promise<boolean> {
  const { rows } = (await database.raw('SELECT rolsuper OR rolcreaterole AS may FROM pg_roles WHERE rolname = current_user')) as { rows: Array<{ may: boolean }> };
  return Boolean(rows[0]?.may);
}

/** The SCRAM iteration count PostgreSQL itself uses for new verifiers. */
const SCRAM_ITERATIONS = 4096;

/**
 * A SCRAM-SHA-256 verifier of `password` as PostgreSQL stores it (RFC 5802, RFC 7677): `ALTER ROLE … PASSWORD` takes
 * it as is, so the plaintext never travels.
 */
export function scramSha256Verifier(password: string, salt: Buffer = randomBytes(16)): string {
  const salted = pbkdf2Sync(password, salt, SCRAM_ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${SCRAM_ITERATIONS}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/** Role name → the password this start gave it. */
export type ClusterRolePasswords = Record<string, string>;

/**
 * Creates every role of `roles` that does not exist yet (login, no superuser, no role or database creation), takes
 * from an existing one any privilege a role of the cluster must not have, and gives each a fresh random password.
 * @returns each role's new password (hex, 48 characters), for that role's processes only
 */
export async function ensureRoles(database: Knex, roles: ClusterDatabaseRoles): Promise<ClusterRolePasswords> {
  const passwords: ClusterRolePasswords = {};
  for (const role of new Set(Object.values(roles))) {
    const found = await database.raw('SELECT 1 FROM pg_roles WHERE rolname = ?', [role]);
    if (!found.rowCount) {
      try {
        await database.raw(`CREATE ROLE ${identifier(role)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`);
      } catch (error) {
        // Another cluster starting on the same server created it meanwhile.
        if ((error as { code?: string }).code !== '42710') throw error;
      }
    }
    const password = randomBytes(24).toString('hex');
    // The verifier is base64 and `$:` only: nothing to escape in the literal.
    await database.raw(
      `ALTER ROLE ${identifier(role)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '${scramSha256Verifier(password)}'`,
    );
    passwords[role] = password;
  }
  return passwords;
}

/**
 * Grants `roles` the platform database's tables (connected to it as the migrating user, after the migrations).
 * The temporal role gets no CONNECT on it.
 */
export async function grantPlatformDatabase(database: Knex, databaseName: string, roles: ClusterDatabaseRoles): Promise<void> {
  const [api, worker] = [identifier(roles.api), identifier(roles.worker)];
  const statements = [
    `REVOKE CONNECT ON DATABASE ${identifier(databaseName)} FROM PUBLIC`,
    `GRANT CONNECT ON DATABASE ${identifier(databaseName)} TO ${api}, ${worker}`,
    'REVOKE CREATE ON SCHEMA public FROM PUBLIC',
    `GRANT USAGE ON SCHEMA public TO ${api}, ${worker}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${api}, ${worker}`,
    `GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${api}, ${worker}`,
    `REVOKE ALL ON ${MIGRATION_TABLES.join(', ')} FROM ${api}, ${worker}`,
    `REVOKE ALL ON ${WORKER_EXCLUDED_TABLES.join(', ')} FROM ${worker}`,
    `REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON ${APPEND_ONLY_TABLES.join(', ')} FROM ${api}, ${worker}`,
    // The audit trail is appended only through the function that stamps the calling role (migration 043).
    `REVOKE ALL ON FUNCTION ${AUDIT_APPEND_FUNCTION} FROM PUBLIC`,
    `GRANT EXECUTE ON FUNCTION ${AUDIT_APPEND_FUNCTION} TO ${api}, ${worker}`,
  ];
  await database.transaction(async (trx) => {
    for (const statement of statements) await trx.raw(statement);
  });
}

/** Grants the Temporal server's role one of Temporal's databases (connected to it, after its schema is set up). */
export async function grantTemporalDatabase(database: Knex, databaseName: string, role: string): Promise<void> {
  const temporal = identifier(role);
  const statements = [
    `REVOKE CONNECT ON DATABASE ${identifier(databaseName)} FROM PUBLIC`,
    `GRANT CONNECT ON DATABASE ${identifier(databaseName)} TO ${temporal}`,
    'REVOKE CREATE ON SCHEMA public FROM PUBLIC',
    `GRANT USAGE ON SCHEMA public TO ${temporal}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${temporal}`,
    `GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${temporal}`,
  ];
  await database.transaction(async (trx) => {
    for (const statement of statements) await trx.raw(statement);
  });
}

/** `url` with its user replaced by `role` and its password by the role's (none when `password` is empty). */
export function urlForRole(url: string, role: string, password = ''): string {
  const parsed = new URL(url);
  parsed.username = encodeURIComponent(role);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

export { withoutPassword } from '../db/login';
