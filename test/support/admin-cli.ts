/**
 * `payments admin …` run as an operator runs it (the built CLI in a child process, against a test platform's RPC with
 * its admin token): its exit code, stdout (and, when it is one JSON object, that object) and stderr.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';

const BIN = path.resolve(__dirname, '../../bin/payments');

export interface AdminCliResult {
  code: number;
  stdout: string;
  /** stdout read as JSON, undefined when it is not. */
  json: Record<string, unknown> | undefined;
  stderr: string;
}

/** Runs `payments admin ...args` against `platform` (its RPC URL and admin token). */
export function runAdminCli(platform: { rpcUrl?: string; adminToken: string }, args: string[]): Promise<AdminCliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, 'admin', ...args],
      { env: { ...process.env, RPC_URL: platform.rpcUrl, LOG_LEVEL: 'silent', PAYMENTS_ADMIN_TOKEN: platform.adminToken, PAYMENTS_ADMIN_CREDENTIALS: '' }, timeout: 60_000 },
      (error, stdout, stderr) => {
        let json: Record<string, unknown> | undefined;
        try {
          json = JSON.parse(stdout) as Record<string, unknown>;
        } catch {
          json = undefined;
        }
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, json, stderr });
      },
    );
  });
}
