/**
 * The shipped deployment files read as data (no Docker engine here): the Dockerfile's runtime environment and
 * docker-compose.yml as `docker compose` would read it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';

const ROOT = path.join(__dirname, '..', '..');

/** The environment the Dockerfile's runtime stage sets (its last stage's ENV lines, `NAME=value` pairs). */
export function dockerImageEnvironment(): Record<string, string> {
  const text = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const stages = text.split(/^FROM /m);
  const environment: Record<string, string> = {};
  for (const line of stages.at(-1)!.split('\n')) {
    const match = /^ENV\s+(.*)$/.exec(line.trim());
    if (!match) continue;
    for (const pair of match[1]!.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) environment[pair[1]!] = pair[2]!.replace(/^"|"$/g, '');
  }
  return environment;
}

/**
 * docker-compose.yml as `docker compose` reads it with `variables` in the shell: anchors merged, `${NAME}`,
 * `${NAME:-default}` and `${NAME:?message}` interpolated ($$ is a literal $).
 */
export interface ComposeService {
  image?: string;
  environment?: Record<string, string>;
  volumes?: string[];
  profiles?: string[];
  command?: string[];
  entrypoint?: string[];
  ports?: string[];
  restart?: string;
  secrets?: string[];
  configs?: Array<{ source: string; target: string }>;
  healthcheck?: { test?: string[]; disable?: boolean; interval?: string; retries?: number };
  depends_on?: Record<string, { condition: string }> | string[];
}

export function composeFile(variables: Record<string, string> = {}): {
  services: Record<string, ComposeService>;
  configs: Record<string, { content?: string; file?: string }>;
  secrets: Record<string, { file: string }>;
} {
  const text = readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
  const interpolated = text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g, (whole, name: string | undefined, operator: string | undefined, argument: string | undefined) => {
    if (whole === '$$') return '$$';
    const value = variables[name!];
    if (operator?.endsWith('?') && !value) throw new Error(`compose: ${name} is required: ${argument}`);
    if (operator?.endsWith('-') && !value) return argument ?? '';
    return value ?? '';
  });
  return parse(interpolated, { merge: true }) as ReturnType<typeof composeFile>;
}

/**
 * What an operator writes before `docker compose up` (the top of docker-compose.yml): the files under ./secrets, by
 * secret name. The upstream ones stay empty (no provider: Area B answers 422).
 */
export const COMPOSE_SECRETS: Record<string, string> = {
  postgres_password: 'p'.repeat(24),
  payments_owner_db_password: 'o'.repeat(24),
  payments_api_db_password: 'a'.repeat(24),
  payments_worker_db_password: 'w'.repeat(24),
  temporal_db_password: 't'.repeat(24),
  grafana_admin_password: 'g'.repeat(24),
  upstream_api_key: '',
  upstream_webhook_secret: '',
};

let secretsDirectory: string | undefined;

/** COMPOSE_SECRETS written once to a directory of this process, standing in for /run/secrets. */
function writtenSecrets(): string {
  if (secretsDirectory) return secretsDirectory;
  secretsDirectory = mkdtempSync(path.join(os.tmpdir(), 'payments-compose-secrets-'));
  for (const [name, value] of Object.entries(COMPOSE_SECRETS)) writeFileSync(path.join(secretsDirectory, name), `${value}\n`, { mode: 0o600 });
  process.once('exit', () => rmSync(secretsDirectory!, { recursive: true, force: true }));
  return secretsDirectory;
}

/**
 * The payments roles of the compose file (services built from the Dockerfile's image) with their environment, the
 * paths of their secrets (/run/secrets/<name>) pointing at COMPOSE_SECRETS written to files, so that loadConfig
 * reads them as the container would.
 */
export function composeRoles(variables: Record<string, string> = {}): Array<{ name: string; environment: Record<string, string>; profiles?: string[] }> {
  const services = composeFile(variables).services;
  const secrets = writtenSecrets();
  return Object.entries(services)
    .filter(([name]) => name.startsWith('payments-') && name !== 'payments-facade-lb')
    .map(([name, service]) => ({
      name,
      environment: Object.fromEntries(
        Object.entries(service.environment ?? {}).map(([key, value]) => [key, value === null || value === undefined ? '' : String(value).replace(/^\/run\/secrets\//, `${secrets}/`)]),
      ),
      profiles: service.profiles,
    }));
}
