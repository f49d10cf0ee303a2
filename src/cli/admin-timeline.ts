/**
 * `payments admin timeline <reference> [--json]` (docs/timeline.md): one payment's timeline over the TimelineService
 * (Connect, `RPC_URL`, the admin credential): every source's entries in time order, failure messages included, and
 * the sources that are gone or could not be read. Without --json, one line per entry:
 *
 *   2025-01-31T12:00:00.123Z  request   request.area-b.create_payin  area-b.create_payin from merchant M…: ok in 41 ms
 */
import type { Command } from 'commander';
import type { GetPaymentTimelineResponse } from '../gen/payments/timeline/v1/timeline_pb';
import { stringifyJson } from '../money';
import { adminClients, describeFailure, DEFAULT_RPC_URL } from './admin';

/** The JSON shape printed for a timeline (details parsed). */
export function timelineJson(answer: GetPaymentTimelineResponse) {
  return {
    reference: answer.reference,
    entries: answer.entries.map((entry) => ({
      at: entry.at,
      source: entry.source,
      kind: entry.kind,
      summary: entry.summary,
      details: JSON.parse(entry.detailsJson) as unknown,
      link: entry.link || null,
    })),
    sources: answer.sources.map((status) => ({ source: status.source, state: status.state, reason: status.reason })),
    truncated: answer.truncated,
  };
}

/** The timeline as text: one line per entry, then what is missing. */
export function timelineText(answer: GetPaymentTimelineResponse): string {
  const lines = [`timeline of ${answer.reference} (${answer.entries.length} entries)`];
  for (const entry of answer.entries) lines.push(`${entry.at}  ${entry.source.padEnd(8)}  ${entry.kind.padEnd(28)}  ${entry.summary}${entry.link ? `  <${entry.link}>` : ''}`);
  for (const status of answer.sources) lines.push(`${status.source}: ${status.state}: ${status.reason}`);
  if (answer.truncated.length) lines.push(`cut at the limit per source: ${answer.truncated.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/** Adds `timeline <reference>` under the existing `admin` command of `program`. */
export function registerTimelineCommand(program: Command): void {
  const admin = program.commands.find((command) => command.name() === 'admin') ?? program.command('admin');
  admin
    .command('timeline <reference>')
    .description('one payment\'s timeline: requests, workflow history, provider messages, postings, events, webhook attempts (docs/timeline.md)')
    .option('--max-per-source <n>', 'entries per source at most, 1 to 1000', '200')
    .option('--json', 'print one JSON object')
    .action(async (reference: string, options: { maxPerSource: string; json?: boolean }) => {
      const rpcUrl = process.env.RPC_URL || DEFAULT_RPC_URL;
      try {
        const maxPerSource = Number(options.maxPerSource);
        if (!Number.isInteger(maxPerSource) || maxPerSource < 1 || maxPerSource > 1000) throw new Error(`--max-per-source must be 1 to 1000 (got ${options.maxPerSource})`);
        const answer = await adminClients(rpcUrl).timeline.getPaymentTimeline({ reference, maxPerSource });
        process.stdout.write(options.json ? `${stringifyJson(timelineJson(answer))}\n` : timelineText(answer));
      } catch (error) {
        process.stderr.write(`${describeFailure(error, rpcUrl)}\n`);
        process.exitCode = 1;
      }
      process.stdout.write('', () => process.exit(Number(process.exitCode ?? 0)));
    });
}
