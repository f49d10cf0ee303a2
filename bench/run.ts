/**
 * Benchmark runner. `npm run bench` runs every bench/*.ts except this file; `npm run bench -- ledger wallet`
 * runs the named ones, each in a process of its own. Each bench module exports `run(): Promise<BenchResult>` and
 * prints it as JSON when run alone (`runWhenMain`); the runner prints its rows as a table, its ratios against their
 * goals, and writes the result as JSON to bench/results/<name>.json (with the machine's CPUs and load average at the
 * end of the run). Then it rebuilds the report from every result there
 * (bench/support/report.ts: report.json, REPORT.md, report.svg; alone: `npm run bench:report`).
 *
 * Exit code: 1 when a bench throws; with BENCH_STRICT=1 also when a ratio misses its goal.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { machineInfo, writeReport } from './support/report';

/** What a bench module's `run()` returns. `rows` are printed as a table; each ratio is `value` against `goal`. */
export interface BenchResult {
  name: string;
  rows?: Array<Record<string, string | number>>;
  ratios?: Array<{ label: string; value: number; goal: number }>;
  /** Older shape some benches use: flat metrics and free-text notes. */
  metrics?: Record<string, number>;
  notes?: string[];
}

const BENCH_DIR = __dirname;
const RESULTS_DIR = path.join(BENCH_DIR, 'results');

/** The bench names available (file names without .ts), sorted. */
export function benchNames(): string[] {
  return readdirSync(BENCH_DIR)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && file !== 'run.ts')
    .map((file) => file.slice(0, -3))
    .sort();
}

/** Renders rows as an aligned text table (columns from the union of keys, in first-seen order). */
export function formatTable(rows: Array<Record<string, string | number>>): string {
  if (rows.length === 0) return '(no rows)';
  const columns: string[] = [];
  for (const row of rows) for (const key of Object.keys(row)) if (!columns.includes(key)) columns.push(key);
  const cells = rows.map((row) => columns.map((column) => String(row[column] ?? '')));
  const widths = columns.map((column, index) => Math.max(column.length, ...cells.map((line) => line[index]!.length)));
  const render = (line: string[]) => line.map((cell, index) => cell.padStart(widths[index]!)).join('  ');
  return [render(columns), widths.map((width) => '-'.repeat(width)).join('  '), ...cells.map(render)].join('\n');
}

function printResult(result: BenchResult): boolean {
  let goalsMet = true;
  console.log(`\n== ${result.name} ==`);
  if (result.rows) console.log(formatTable(result.rows));
  if (result.metrics) console.log(formatTable(Object.entries(result.metrics).map(([metric, value]) => ({ metric, value }))));
  for (const ratio of result.ratios ?? []) {
    const met = ratio.value >= ratio.goal;
    goalsMet &&= met;
    console.log(`${met ? 'OK  ' : 'MISS'} ${ratio.label}: ${ratio.value.toFixed(2)}x (goal >= ${ratio.goal}x)`);
  }
  for (const note of result.notes ?? []) console.log(`note: ${note}`);
  return goalsMet;
}

/**
 * The result a bench printed last (`runWhenMain`: the pretty-printed JSON object, its first line `{`). A library
 * that writes to stdout too (a Temporal or bundler log line, now and then) goes to `other`, not into the parse.
 * @throws SyntaxError when no JSON object follows
 */
export function resultOf(stdout: string, other: (line: string) => void = () => undefined): BenchResult {
  const start = stdout.startsWith('{\n') ? 0 : stdout.lastIndexOf('\n{\n') + 1;
  for (const line of stdout.slice(0, start).split('\n')) if (line.trim()) other(line);
  return JSON.parse(stdout.slice(start)) as BenchResult;
}

/**
 * Runs bench/<name>.ts in a process of its own (its `runWhenMain` prints the result as JSON): each bench gets a fresh
 * Temporal runtime (installed once per process, with the metrics exporter its bench asks for), and the RSS it reports
 * is its own, not what the benches before it left in a shared process.
 * @throws when the bench exits non-zero or prints no result
 */
function runInOwnProcess(name: string): Promise<BenchResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(BENCH_DIR, `${name}.ts`)], { stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code !== 0) return reject(new Error(`bench/${name}.ts exited with ${signal ?? `status ${code}`}`));
      try {
        resolve(resultOf(Buffer.concat(chunks).toString('utf8'), (line) => process.stderr.write(`bench/${name}.ts (stdout): ${line}\n`)));
      } catch (error) {
        reject(new Error(`bench/${name}.ts printed no JSON result: ${(error as Error).message}`));
      }
    });
  });
}

async function main(): Promise<void> {
  const available = benchNames();
  const requested = process.argv.slice(2).filter((argument) => !argument.startsWith('-'));
  const unknown = requested.filter((name) => !available.includes(name));
  if (unknown.length > 0) {
    console.error(`unknown bench: ${unknown.join(', ')} (available: ${available.join(', ')})`);
    process.exit(2);
  }
  const selected = requested.length > 0 ? requested : available;
  mkdirSync(RESULTS_DIR, { recursive: true });
  let failed = false;
  let goalsMet = true;
  for (const name of selected) {
    const started = Date.now();
    try {
      const measured = await runInOwnProcess(name);
      // BENCH_SERVER_LABEL names the Temporal server a run was measured on (e.g. `cluster` with TEMPORAL_ADDRESS at
      // `payments cluster up`, or `topology` with BENCH_CLUSTER naming its cluster.json), so the results stand side by
      // side in the report.
      const label = process.env.BENCH_SERVER_LABEL;
      const where = process.env.BENCH_CLUSTER ? `the running cluster of ${process.env.BENCH_CLUSTER}` : (process.env.TEMPORAL_ADDRESS ?? 'dev server');
      const result = label ? { ...measured, name: `${measured.name || name}-${label}`, notes: [...(measured.notes ?? []), `Temporal: ${label} (${where})`] } : measured;
      goalsMet = printResult(result) && goalsMet;
      const file = path.join(RESULTS_DIR, `${result.name || name}.json`);
      const { cpus, load_average, node_version } = machineInfo();
      const finished = { finished_at: new Date().toISOString(), seconds: (Date.now() - started) / 1000, machine: { cpus, load_average, node_version } };
      writeFileSync(file, `${JSON.stringify({ ...result, ...finished }, null, 2)}\n`);
      console.log(`wrote ${path.relative(process.cwd(), file)}`);
    } catch (error) {
      failed = true;
      console.error(`bench ${name} failed:`, error);
    }
  }
  try {
    const report = await writeReport(RESULTS_DIR);
    console.log(`\nreport: ${report.summary.met} of ${report.summary.ratios} goals met; wrote bench/results/{report.json,REPORT.md,report.svg}`);
  } catch (error) {
    failed = true;
    console.error('bench report failed:', error);
  }
  process.exit(failed || (process.env.BENCH_STRICT === '1' && !goalsMet) ? 1 : 0);
}

if (require.main === module) void main();
