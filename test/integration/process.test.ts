/**
 * `payments serve` as a real child process: SIGTERM drains an in-flight request before exit,
 * exits 0, and a bad configuration value stops start-up with one line naming the variable.
 */
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { createTestDatabase } from '../support/platform';

const BIN = path.join(__dirname, '..', '..', 'bin', 'payments');

function waitForLine(child: ReturnType<typeof spawn>, pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within ${timeoutMs}ms:\n${seen}`)), timeoutMs);
    child.stderr!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = seen.match(pattern);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    });
  });
}

describe('payments serve (process)', () => {
  it('drains an in-flight request on SIGTERM, then exits 0', async () => {
    const database = await createTestDatabase();
    const child = spawn(process.execPath, [BIN, 'serve', '--roles', 'api,facade,worker'], {
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        TEMPORAL_ADDRESS: process.env.PAYMENTS_TEST_TEMPORAL_ADDRESS,
        TEMPORAL_TASK_QUEUE: `process-test-${process.pid}`,
        HTTP_PORT: '0',
        RPC_PORT: '0',
        LOG_LEVEL: 'silent',
        PLATFORM_KEY_DIR: process.env.PAYMENTS_TEST_KEY_DIR,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      const [, port] = await waitForLine(child, /façade http:\/\/127\.0\.0\.1:(\d+)/, 60_000);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

      // A request whose body is still on its way when SIGTERM arrives.
      const socket = net.connect(Number(port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      let response = '';
      socket.on('data', (chunk) => (response += chunk.toString()));
      const ended = new Promise((resolve) => socket.once('close', resolve));
      socket.write('POST /healthz HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n');
      await new Promise((resolve) => setTimeout(resolve, 200));
      child.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(child.exitCode).toBeNull(); // still draining: the request is in flight
      socket.end('{}');
      await ended;
      expect(response).toMatch(/^HTTP\/1\.1 (404|405) /);
      expect(response.toLowerCase()).toContain('x-request-id');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await database.drop();
    }
  });

  it('stops start-up with one line naming a bad variable', () => {
    const result = spawnSync(process.execPath, [BIN, 'serve'], {
      env: { ...process.env, HTTP_PORT: 'eighty' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^invalid configuration: HTTP_PORT: /)]);
  });

  it('refuses an unknown role', () => {
    const result = spawnSync(process.execPath, [BIN, 'serve', '--roles', 'api,cron'], { encoding: 'utf8', timeout: 30_000 });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('unknown role "cron"');
  });
});
