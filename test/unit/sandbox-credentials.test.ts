/**
 * Test mode's sandbox upstream has no secret in the source: its API key and notification secret are random values
 * made once per data directory (0600) and kept there, so two stacks never share one and a restart keeps its own.
 */
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { SANDBOX_CREDENTIALS_FILE, sandboxCredentials, startConfiguredSandbox } from '../../src/sandbox/upstream';

describe('the sandbox upstream’s secrets', () => {
  it('are random per data directory, 0600, and kept across starts', () => {
    const [one, two] = [mkdtempSync(path.join(os.tmpdir(), 'sandbox-a-')), mkdtempSync(path.join(os.tmpdir(), 'sandbox-b-'))];
    const first = sandboxCredentials(one);
    expect(first.webhook_secret).toMatch(/^[0-9a-f]{64}$/);
    expect(first.api_key).toMatch(/^[0-9a-f]{64}$/);
    expect(sandboxCredentials(one)).toEqual(first);
    const other = sandboxCredentials(two);
    expect(other.webhook_secret).not.toBe(first.webhook_secret);
    expect(other.api_key).not.toBe(first.api_key);
    expect((statSync(path.join(one, SANDBOX_CREDENTIALS_FILE)).mode & 0o777).toString(8)).toBe('600');
    // No source file holds a value the sandbox signs with.
    const source = readFileSync(path.join(__dirname, '..', '..', 'src', 'sandbox', 'upstream.ts'), 'utf8');
    expect(source).not.toContain(first.webhook_secret);
    expect(source).not.toMatch(/webhook_secret: '[^']+'/);
  });

  it('point a test-mode stack at the sandbox with its directory’s secrets; live mode starts no sandbox', async () => {
    const directory = mkdtempSync(path.join(os.tmpdir(), 'sandbox-c-'));
    const started = await startConfiguredSandbox(loadConfig({ PAYMENTS_MODE: 'test', SANDBOX_PORT: '0' }), directory);
    try {
      const secrets = sandboxCredentials(directory);
      expect(started!.config).toMatchObject({ UPSTREAM_PAYIN_URL: started!.sandbox.payinUrl, UPSTREAM_API_KEY: secrets.api_key, UPSTREAM_WEBHOOK_SECRET: secrets.webhook_secret });
    } finally {
      await started?.sandbox.close();
    }
    expect(await startConfiguredSandbox(loadConfig({ SANDBOX_PORT: '0' }), directory)).toBeUndefined();
  });
});
