/**
 * The shipped deployment files read as data (no Docker engine here): the Dockerfile's runtime environment and
 * docker-compose.yml as `docker compose` would read it.
 */
import { readFileSync } from 'node:fs';
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
export function composeFile(variables: Record<string, string> = {}): { services: Record<string, { environment?: Record<string, string>; volumes?: string[]; profiles?: string[]; command?: string[]; ports?: string[] }> } {
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

/** The payments roles of the compose file (services built from the Dockerfile's image) with their environment. */
export function composeRoles(variables: Record<string, string> = {}): Array<{ name: string; environment: Record<string, string>; profiles?: string[] }> {
  const services = composeFile(variables).services;
  return Object.entries(services)
    .filter(([name]) => name.startsWith('payments-') && name !== 'payments-facade-lb')
    .map(([name, service]) => ({ name, environment: Object.fromEntries(Object.entries(service.environment ?? {}).map(([key, value]) => [key, value === null || value === undefined ? '' : String(value)])), profiles: service.profiles }));
}

/** What an operator sets before `docker compose up` (docs/operations.md): the database roles' passwords. */
export const COMPOSE_SECRETS = {
  POSTGRES_PASSWORD: 'p'.repeat(24),
  PAYMENTS_OWNER_DB_PASSWORD: 'o'.repeat(24),
  PAYMENTS_API_DB_PASSWORD: 'a'.repeat(24),
  PAYMENTS_WORKER_DB_PASSWORD: 'w'.repeat(24),
  TEMPORAL_DB_PASSWORD: 't'.repeat(24),
};

