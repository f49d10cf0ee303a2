/**
 * The start-up check of DATABASE_URL's user, password and database: a server that refuses them will refuse them
 * again on every retry, so start-up stops at once with one line naming DATABASE_URL (never its password), whereas a
 * server that cannot be reached yet is waited for (the roles start degraded, docs/operations.md "Start-up").
 */
import pg from 'pg';
import { ConfigError } from '../config';

/**
 * PostgreSQL's SQLSTATEs of a refused login: 28P01 invalid_password, 28000 invalid_authorization_specification (an
 * unknown role, no pg_hba.conf entry), 3D000 invalid_catalog_name (the database does not exist).
 */
export const LOGIN_REFUSED_CODES: Readonly<Record<string, string>> = {
  '28P01': 'the password was refused',
  '28000': 'the user was refused',
  '3D000': 'the database does not exist',
};

/** Longest the check waits for the server to answer, seconds (an unreachable server is not this check's concern). */
const LOGIN_CHECK_TIMEOUT_SECONDS = 5;

/** `url` without its password (for files, logs and start-up messages). */
export function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1@');
  }
}

/**
 * The one-line ConfigError a refused login deserves, or undefined when `error` is something else (unreachable,
 * timeout). The server's own words are kept (they name the user or database, never the password).
 */
export function loginRefusal(error: unknown, url: string): ConfigError | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !(code in LOGIN_REFUSED_CODES)) return undefined;
  const detail = (error as Error).message.split('\n')[0];
  return new ConfigError('DATABASE_URL', `${LOGIN_REFUSED_CODES[code]} (${code}: ${detail}) by ${withoutPassword(url)}: check the user, password and database name`);
}

/**
 * Logs in once to `url`. Resolves when the server accepts the login, and also when it cannot be reached or does not
 * answer within LOGIN_CHECK_TIMEOUT_SECONDS (the caller waits for it as before).
 * @throws ConfigError DATABASE_URL when the server refuses the user, the password or the database (loginRefusal)
 */
export async function checkDatabaseLogin(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: LOGIN_CHECK_TIMEOUT_SECONDS * 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    const refusal = loginRefusal(error, url);
    if (refusal) throw refusal;
    return;
  } finally {
    await client.end().catch(() => undefined);
  }
}
