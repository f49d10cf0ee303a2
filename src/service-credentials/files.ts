/**
 * Where `payments admin …` finds the service credential it presents to the RPC server (src/rpc/auth.ts), first hit
 * wins:
 *
 *   1. PAYMENTS_ADMIN_TOKEN                         the token itself
 *   2. PAYMENTS_ADMIN_CREDENTIALS                   a credentials file
 *   3. <DATA_DIR or .data>/admin-credentials.json   the file `npm start` writes for the dev stack
 *
 * A credentials file is `{ "credential_id", "token", "scopes" }`, created 0600. The token is never printed by the CLI
 * except by the commands that create it.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const ADMIN_CREDENTIALS_FILE = 'admin-credentials.json';

export interface CredentialsFile {
  credential_id: string;
  token: string;
  scopes: string[];
}

/** The credentials file's path for `environment` (PAYMENTS_ADMIN_CREDENTIALS, else under DATA_DIR or .data). */
export function adminCredentialsPath(environment: NodeJS.ProcessEnv = process.env): string {
  return environment.PAYMENTS_ADMIN_CREDENTIALS || path.join(environment.DATA_DIR || '.data', ADMIN_CREDENTIALS_FILE);
}

/** Reads a credentials file; undefined when it is missing or not one. */
export function readCredentialsFile(file: string): CredentialsFile | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<CredentialsFile>;
    return typeof parsed.token === 'string' && typeof parsed.credential_id === 'string'
      ? { credential_id: parsed.credential_id, token: parsed.token, scopes: parsed.scopes ?? [] }
      : undefined;
  } catch {
    return undefined;
  }
}

/** Writes a credentials file, mode 0600 (its directory is created 0700 when missing). */
export function writeCredentialsFile(file: string, credentials: CredentialsFile): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** The admin CLI's token (see the order above), or undefined when none is found. */
export function adminToken(environment: NodeJS.ProcessEnv = process.env): string | undefined {
  if (environment.PAYMENTS_ADMIN_TOKEN) return environment.PAYMENTS_ADMIN_TOKEN;
  return readCredentialsFile(adminCredentialsPath(environment))?.token;
}
