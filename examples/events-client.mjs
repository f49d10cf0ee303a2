/**
 * Area B sample client: a merchant following its event stream (docs/events.md).
 *
 * Written from docs/events.md only: Node's `node:fs` and the global `fetch`, nothing of the platform's code and no
 * npm package.
 *
 *   GET {base_url}/api/v1/events?after=<seq>&limit=<1..500>   X-API-Key → data.events[], has_more, next_after
 *
 * Every event has the merchant's next `seq` (1, 2, 3 … with no gap). The client keeps one number, the cursor: the
 * `next_after` of the last page it finished processing, stored in a file (atomically: written aside, then renamed)
 * after every page. After any downtime it asks again from the cursor, so it sees each event once, in order (a crash
 * between processing a page and storing the cursor repeats that page: process events idempotently, by `seq`). A seq
 * that jumps (`seq > cursor + 1`) means the events in between were purged (retention, EVENTS_RETENTION_DAYS): the
 * client reports the gap; rebuild those payments from the status calls.
 *
 * Run alone against `npm start`:
 *   node examples/events-client.mjs [.data/demo-credentials.json] [--cursor-file F] [--once] [--poll-seconds N]
 * or with MERCHANT_API_KEY set. It catches up from the cursor (0 when the file does not exist yet), printing each
 * event, then polls every N seconds (default 5); with --once it stops once caught up. BASE_URL defaults to
 * http://127.0.0.1:3000.
 */
/* global fetch */
import { existsSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL, URLSearchParams } from 'node:url';

/**
 * One page of the merchant's events after `after`.
 * @returns {Promise<{events: Array<{seq: number, type: string, subject: string, created_at: string, ledger_transaction_id: string | null, data: object}>, has_more: boolean, next_after: number}>}
 * @throws Error with the platform's message on anything but 200
 */
export async function fetchEventsPage({ baseUrl, apiKey, after = 0, limit = 500, type, subject }) {
  const query = new URLSearchParams({ after: String(after), limit: String(limit) });
  if (type) query.set('type', type);
  if (subject) query.set('subject', subject);
  const response = await fetch(`${baseUrl}/api/v1/events?${query}`, { headers: { 'X-API-Key': apiKey } });
  const body = await response.json().catch(() => undefined);
  if (response.status !== 200 || !body?.success) {
    const detail = body?.errors ? ` ${JSON.stringify(body.errors)}` : '';
    throw new Error(`events: HTTP ${response.status} ${body?.message ?? ''}${detail}`.trim());
  }
  return body.data;
}

/** A cursor kept in a JSON file `{"after": <seq>}`: 0 before the file exists; each save replaces it whole. */
export function fileCursor(path) {
  return {
    load() {
      return existsSync(path) ? Number(JSON.parse(readFileSync(path, 'utf8')).after) : 0;
    },
    save(after) {
      writeFileSync(`${path}.tmp`, `${JSON.stringify({ after })}\n`);
      renameSync(`${path}.tmp`, path);
    },
  };
}

/** A cursor kept in memory (tests, one-off reads). */
export function memoryCursor(after = 0) {
  return {
    load: () => after,
    save(next) {
      after = next;
    },
  };
}

/**
 * Reads every event after the cursor, page by page, calling `onEvent(event)` for each in order (awaited) and saving
 * the cursor after each page; `onGap(from, to)` is told when seqs `from`..`to` are missing (purged).
 * @returns {Promise<{after: number, events: number}>} the cursor reached and how many events were handled
 */
export async function catchUp({ baseUrl, apiKey, cursor, onEvent, onGap = () => undefined, limit = 500 }) {
  let after = cursor.load();
  let handled = 0;
  for (;;) {
    const page = await fetchEventsPage({ baseUrl, apiKey, after, limit });
    for (const event of page.events) {
      if (event.seq > after + 1) await onGap(after + 1, event.seq - 1);
      await onEvent(event);
      after = event.seq;
      handled += 1;
    }
    after = page.next_after;
    cursor.save(after);
    if (!page.has_more) return { after, events: handled };
  }
}

/**
 * Catches up, then polls every `pollSeconds` until `signal` aborts (or at once with `once`).
 * @returns {Promise<{after: number, events: number}>}
 */
export async function follow({ pollSeconds = 5, once = false, signal, ...options }) {
  let total = 0;
  for (;;) {
    const { after, events } = await catchUp(options);
    total += events;
    if (once || signal?.aborted) return { after, events: total };
    try {
      await sleep(pollSeconds * 1000, undefined, { signal });
    } catch {
      return { after, events: total };
    }
  }
}

function isMain(moduleUrl) {
  try {
    return Boolean(process.argv[1]) && moduleUrl === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

function optionValue(args, name) {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
}

async function main() {
  const args = process.argv.slice(2);
  const file = args.find((arg, index) => !arg.startsWith('--') && !['--cursor-file', '--poll-seconds'].includes(args[index - 1])) ?? process.env.DEMO_CREDENTIALS;
  const apiKey = file ? JSON.parse(readFileSync(file, 'utf8')).merchant.api_key : process.env.MERCHANT_API_KEY;
  if (!apiKey) throw new Error('pass the demo credentials file or set MERCHANT_API_KEY');
  const cursorFile = optionValue(args, '--cursor-file');
  const controller = new globalThis.AbortController();
  process.once('SIGINT', () => controller.abort());
  const { after, events } = await follow({
    baseUrl: process.env.BASE_URL ?? 'http://127.0.0.1:3000',
    apiKey,
    cursor: cursorFile ? fileCursor(cursorFile) : memoryCursor(0),
    once: args.includes('--once'),
    pollSeconds: Number(optionValue(args, '--poll-seconds') ?? 5),
    signal: controller.signal,
    onEvent: (event) => console.log(`${event.seq}\t${event.created_at}\t${event.type}\t${event.subject}\t${JSON.stringify(event.data)}`),
    onGap: (from, to) => console.log(`events ${from}..${to} are past retention: rebuild those payments from their status`),
  });
  console.log(`caught up: ${events} event(s), cursor ${after}`);
}

if (isMain(import.meta.url)) {
  main().catch((error) => {
    console.error(`events-client: ${error.message}`);
    process.exit(1);
  });
}
