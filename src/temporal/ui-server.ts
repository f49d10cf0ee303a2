/**
 * The Temporal Web UI server (github.com/temporalio/ui-server, binary found by server-binary.ts) for
 * `payments cluster up`, on 127.0.0.1, read-only (no signal, cancel, terminate or reset from the browser); with `tls`, it
 * reaches an mTLS frontend with its own client certificate.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { waitForPort } from '../net';
import { stopChild } from './dev-server';

export interface RunningUiServer {
  url: string;
  stop(): Promise<void>;
}

export async function startTemporalUiServer(options: {
  binary: string;
  directory: string;
  temporalAddress: string;
  port: number;
  /** The UI's client certificate for an mTLS frontend (PEM file paths) and the name to verify the server by. */
  tls?: { ca: string; cert: string; key: string; serverName: string };
  /** Stops the server and rejects with StartupAborted when it fires before the UI listens. */
  abort?: AbortSignal;
}): Promise<RunningUiServer> {
  const configDirectory = path.join(options.directory, 'config');
  mkdirSync(configDirectory, { recursive: true });
  const url = `http://127.0.0.1:${options.port}`;
  const config = [
    '# Written by `payments cluster up` at every start (src/temporal/ui-server.ts).',
    `temporalGrpcAddress: ${JSON.stringify(options.temporalAddress)}`,
    'host: "127.0.0.1"',
    `port: ${options.port}`,
    'uiRootPath: /',
    'enableUi: true',
    'defaultNamespace: default',
    'showTemporalSystemNamespace: false',
    'disableWriteActions: true',
    'cors:',
    '  allowOrigins:',
    `    - ${JSON.stringify(url)}`,
    'refreshInterval: 1m',
    'auth:',
    '  enabled: false',
    ...(options.tls
      ? [
          'tls:',
          `  caFile: ${JSON.stringify(options.tls.ca)}`,
          `  certFile: ${JSON.stringify(options.tls.cert)}`,
          `  keyFile: ${JSON.stringify(options.tls.key)}`,
          `  serverName: ${JSON.stringify(options.tls.serverName)}`,
          '  enableHostVerification: true',
        ]
      : []),
    '',
  ].join('\n');
  writeFileSync(path.join(configDirectory, 'base.yaml'), config, { mode: 0o600 });
  writeFileSync(path.join(configDirectory, 'cluster.yaml'), config, { mode: 0o600 });
  const output = openSync(path.join(options.directory, 'ui-server.log'), 'a');
  const child = spawn(options.binary, ['--root', options.directory, '--config', 'config', '--env', 'cluster', 'start'], {
    stdio: ['ignore', output, output],
    detached: true,
    cwd: options.directory,
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`the Temporal UI server exited early (code ${code})`))));
  exited.catch(() => undefined);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    await stopChild(child);
  };
  try {
    await Promise.race([waitForPort('127.0.0.1', options.port, 30, options.abort), exited]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, stop };
}
