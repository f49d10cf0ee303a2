/**
 * Secrets as files (docs/operations.md "Secrets as files"): `<NAME>_FILE` for the secret variables, and
 * DATABASE_PASSWORD_FILE for DATABASE_URL's password (docker-compose's Docker secrets), each refused in one line
 * naming the variable when it cannot be used.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig, SECRET_FILE_VARIABLES } from '../../src/config';

describe('secrets as files', () => {
  let directory: string;
  const file = (name: string, content: string) => {
    const at = path.join(directory, name);
    writeFileSync(at, content, { mode: 0o600 });
    return at;
  };
  beforeAll(() => {
    directory = mkdtempSync(path.join(os.tmpdir(), 'payments-secret-files-'));
  });
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('reads each secret variable from its _FILE, without the trailing newline (RPC_TOKEN_FILE keeps its own meaning)', () => {
    expect([...SECRET_FILE_VARIABLES]).toEqual(['DATABASE_URL', 'TEMPORAL_API_KEY', 'UPSTREAM_API_KEY', 'UPSTREAM_WEBHOOK_SECRET']);
    const config = loadConfig({
      PAYMENTS_MODE: 'test',
      DATABASE_URL_FILE: file('url', 'postgres://u:p@db:5432/payments\n'),
      TEMPORAL_API_KEY_FILE: file('temporal', 'temporal-key\n'),
      UPSTREAM_API_KEY_FILE: file('api-key', 'k'.repeat(24) + '\n'),
      UPSTREAM_WEBHOOK_SECRET_FILE: file('webhook', 's'.repeat(24)),
      RPC_TOKEN_FILE: file('credentials.json', '{"token":"pps_x"}'),
    });
    expect(config.RPC_TOKEN).toBeUndefined();
    expect(config).toMatchObject({
      DATABASE_URL: 'postgres://u:p@db:5432/payments',
      TEMPORAL_API_KEY: 'temporal-key',
      UPSTREAM_API_KEY: 'k'.repeat(24),
      UPSTREAM_WEBHOOK_SECRET: 's'.repeat(24),
    });
  });

  it('treats an empty file as unset (an optional secret left empty), and live mode checks what a file holds', () => {
    expect(loadConfig({ UPSTREAM_API_KEY_FILE: file('empty', '') }).UPSTREAM_API_KEY).toBeUndefined();
    expect(() => loadConfig({ UPSTREAM_API_KEY_FILE: file('short', 'short\n') })).toThrow('invalid configuration: UPSTREAM_API_KEY: is shorter than 16 characters');
  });

  it('puts DATABASE_PASSWORD_FILE into DATABASE_URL, encoded', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://payments_api@postgres:5432/payments', DATABASE_PASSWORD_FILE: file('password', 'p@ss:w/rd\n') });
    expect(config.DATABASE_URL).toBe('postgres://payments_api:p%40ss%3Aw%2Frd@postgres:5432/payments');
    expect(decodeURIComponent(new URL(config.DATABASE_URL!).password)).toBe('p@ss:w/rd');
  });

  it.each([
    [{ UPSTREAM_API_KEY: 'k'.repeat(24), UPSTREAM_API_KEY_FILE: 'x' }, 'UPSTREAM_API_KEY_FILE: set UPSTREAM_API_KEY or UPSTREAM_API_KEY_FILE, not both'],
    [{ TEMPORAL_API_KEY_FILE: '/nonexistent/key' }, 'TEMPORAL_API_KEY_FILE: cannot read /nonexistent/key: ENOENT'],
    [{ DATABASE_PASSWORD_FILE: '/nonexistent/password' }, 'DATABASE_PASSWORD_FILE: needs DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://u:already@db/payments', DATABASE_PASSWORD_FILE: 'x' }, 'DATABASE_PASSWORD_FILE: DATABASE_URL holds a password already'],
    [{ DATABASE_URL: 'postgres://u@db/payments', DATABASE_PASSWORD_FILE: '/nonexistent/password' }, 'DATABASE_PASSWORD_FILE: cannot read /nonexistent/password: ENOENT'],
  ])('refuses %j in one line naming the variable', (environment, message) => {
    expect(() => loadConfig(environment)).toThrow(ConfigError);
    expect(() => loadConfig(environment)).toThrow(`invalid configuration: ${message}`);
  });

  it('refuses an empty password file', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@db/payments', DATABASE_PASSWORD_FILE: file('blank', '\n') })).toThrow('invalid configuration: DATABASE_PASSWORD_FILE: ');
  });
});
