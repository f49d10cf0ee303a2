/**
 * The benchmark report: reads every bench result in bench/results/<name>.json (written by bench/run.ts)
 * and writes, next to them,
 *
 *   report.json   { generated_at, machine, benches: [{ name, finished_at, seconds, machine?, ratios: [{label,
 *                 value, goal, met}], rows, metrics?, notes }], summary: { ratios, met, missed } }
 *   REPORT.md     per bench: its ratios with their goals (met / missed), its rows (ops/s, p50, p99, …), its notes;
 *                 the machine (CPUs, load average, Node.js version, date)
 *   report.svg    a chart of every ratio against its goal (vega-lite compiled by vega, rendered to SVG headless)
 *
 * `npm run bench:report` rebuilds them from the existing JSON without running any bench; `npm run bench` runs the
 * benches and then this. Ratios are `value` against `goal`: a goal is met when value ≥ goal.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const RESULTS_DIR = path.join(__dirname, '..', 'results');

/** Files of the results directory that are the report itself, not bench results. */
const REPORT_FILES = new Set(['report.json']);

export interface MachineInfo {
  cpus: number;
  cpu_model: string;
  load_average: [number, number, number];
  node_version: string;
  platform: string;
  total_memory_mib: number;
  date: string;
}

export interface Ratio {
  label: string;
  value: number;
  goal: number;
}

/** One bench result as bench/run.ts writes it. */
export interface BenchResultFile {
  name: string;
  rows?: Array<Record<string, string | number>>;
  ratios?: Ratio[];
  metrics?: Record<string, number>;
  notes?: string[];
  finished_at?: string;
  seconds?: number;
  machine?: Partial<MachineInfo>;
}

export interface ReportBench extends Omit<BenchResultFile, 'ratios'> {
  ratios: Array<Ratio & { met: boolean }>;
}

export interface BenchReport {
  generated_at: string;
  machine: MachineInfo;
  benches: ReportBench[];
  summary: { ratios: number; met: number; missed: number };
}

/** The machine this process runs on. */
export function machineInfo(now = new Date()): MachineInfo {
  const cpus = os.cpus();
  const [one, five, fifteen] = os.loadavg();
  const round2 = (value: number) => Math.round(value * 100) / 100;
  return {
    cpus: cpus.length,
    cpu_model: cpus[0]?.model.trim() ?? 'unknown',
    load_average: [round2(one!), round2(five!), round2(fifteen!)],
    node_version: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    total_memory_mib: Math.round(os.totalmem() / 1048576),
    date: now.toISOString(),
  };
}

/** Reads every bench result JSON of `directory` (sorted by name). */
export function loadResults(directory = RESULTS_DIR): BenchResultFile[] {
  return readdirSync(directory)
    .filter((file) => file.endsWith('.json') && !REPORT_FILES.has(file))
    .sort()
    .map((file) => {
      const result = JSON.parse(readFileSync(path.join(directory, file), 'utf8')) as BenchResultFile;
      return { ...result, name: result.name || file.slice(0, -'.json'.length) };
    });
}

/** Pure: the report of `results` (ratios marked met when value ≥ goal). */
export function buildReport(results: BenchResultFile[], machine: MachineInfo): BenchReport {
  const benches = results.map((result) => ({
    ...result,
    ratios: (result.ratios ?? []).map((ratio) => ({ ...ratio, met: ratio.value >= ratio.goal })),
  }));
  const ratios = benches.flatMap((bench) => bench.ratios);
  const met = ratios.filter((ratio) => ratio.met).length;
  return { generated_at: machine.date, machine, benches, summary: { ratios: ratios.length, met, missed: ratios.length - met } };
}

/** A ratio as text: two significant decimals ("0.64×", "0.028×"). */
export function formatRatio(value: number): string {
  const digits = Math.abs(value) >= 0.1 || value === 0 ? 2 : 3;
  return `${value.toFixed(digits)}×`;
}

const escapeCell = (value: unknown) => String(value ?? '').replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** Pure: a markdown table of `rows` (columns in first-seen order; numbers right-aligned). */
export function markdownTable(rows: Array<Record<string, string | number>>): string {
  if (rows.length === 0) return '_(no rows)_';
  const columns: string[] = [];
  for (const row of rows) for (const key of Object.keys(row)) if (!columns.includes(key)) columns.push(key);
  const numeric = columns.map((column) => rows.every((row) => row[column] === undefined || typeof row[column] === 'number'));
  return [
    `| ${columns.map(escapeCell).join(' | ')} |`,
    `|${numeric.map((isNumber) => (isNumber ? '---:' : '---')).join('|')}|`,
    ...rows.map((row) => `| ${columns.map((column) => escapeCell(row[column])).join(' | ')} |`),
  ].join('\n');
}

/** Pure: the whole REPORT.md. */
export function renderMarkdown(report: BenchReport): string {
  const { machine, summary } = report;
  const lines: string[] = [
    '# Benchmark report',
    '',
    `Generated ${report.generated_at} by \`npm run bench:report\` from \`bench/results/*.json\` (\`npm run bench\` runs every bench, then this).`,
    'Every figure is a ratio against a baseline measured in the same run, with its goal: met when the ratio is at least the goal.',
    '',
    `**${summary.met} of ${summary.ratios} goals met**, ${summary.missed} missed. Chart: [report.svg](report.svg).`,
    '',
    '| bench | ratio | value | goal | |',
    '|---|---|---:|---:|---|',
    ...report.benches.flatMap((bench) =>
      bench.ratios.map((ratio) => `| ${escapeCell(bench.name)} | ${escapeCell(ratio.label)} | ${formatRatio(ratio.value)} | ≥ ${formatRatio(ratio.goal)} | ${ratio.met ? 'met' : '**missed**'} |`),
    ),
    '',
    '## Machine',
    '',
    `- CPUs: ${machine.cpus} (${machine.cpu_model}); memory ${machine.total_memory_mib} MiB; ${machine.platform}`,
    `- Load average when the report was written: ${machine.load_average.join(' / ')} (1 / 5 / 15 min)`,
    `- Node.js ${machine.node_version}; date ${machine.date}`,
  ];
  for (const bench of report.benches) {
    lines.push('', `## ${bench.name}`, '');
    const when = [
      bench.finished_at ? `finished ${bench.finished_at}` : undefined,
      bench.seconds !== undefined ? `in ${Math.round(bench.seconds)} s` : undefined,
      bench.machine?.load_average ? `load average ${bench.machine.load_average.join(' / ')}` : undefined,
      bench.machine?.cpus ? `${bench.machine.cpus} CPUs` : undefined,
    ].filter(Boolean);
    if (when.length > 0) lines.push(`Run ${when.join(', ')}.`, '');
    if (bench.ratios.length > 0) {
      lines.push('| ratio | value | goal | |', '|---|---:|---:|---|');
      for (const ratio of bench.ratios) {
        lines.push(`| ${escapeCell(ratio.label)} | ${formatRatio(ratio.value)} | ≥ ${formatRatio(ratio.goal)} | ${ratio.met ? 'met' : '**missed**'} |`);
      }
      lines.push('');
    }
    if (bench.rows && bench.rows.length > 0) lines.push(markdownTable(bench.rows), '');
    if (bench.metrics && Object.keys(bench.metrics).length > 0) {
      lines.push(markdownTable(Object.entries(bench.metrics).map(([metric, value]) => ({ metric, value }))), '');
    }
    for (const note of bench.notes ?? []) lines.push(`- ${note}`);
  }
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}

/** Pure: the vega-lite specification of the chart (one bar per ratio, a tick at its goal). */
export function chartSpec(report: BenchReport): Record<string, unknown> {
  const values = report.benches.flatMap((bench) =>
    bench.ratios.map((ratio) => ({
      ratio: `${bench.name}: ${ratio.label}`,
      value: Math.round(ratio.value * 1000) / 1000,
      goal: ratio.goal,
      outcome: ratio.met ? 'goal met' : 'goal missed',
    })),
  );
  const maximum = Math.max(1, ...values.map((entry) => Math.max(entry.value, entry.goal)));
  const x = { type: 'quantitative', title: 'ratio (× of the baseline measured in the same run)', scale: { domain: [0, maximum] } };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Benchmark ratios against their goals', subtitle: `${report.summary.met} of ${report.summary.ratios} goals met (black tick: the goal) — ${report.generated_at}` },
    width: 520,
    background: 'white',
    padding: 12,
    data: { values },
    encoding: { y: { field: 'ratio', type: 'nominal', sort: null, title: null, axis: { labelLimit: 420 } } },
    layer: [
      {
        mark: { type: 'bar', height: 14 },
        encoding: {
          x: { field: 'value', ...x },
          color: { field: 'outcome', type: 'nominal', scale: { domain: ['goal met', 'goal missed'], range: ['#2e7d32', '#c62828'] }, title: null },
          tooltip: [{ field: 'ratio' }, { field: 'value' }, { field: 'goal' }],
        },
      },
      { mark: { type: 'tick', color: 'black', thickness: 2, size: 22 }, encoding: { x: { field: 'goal', ...x } } },
      { mark: { type: 'text', align: 'left', dx: 4, fontSize: 10 }, encoding: { x: { field: 'value', ...x }, text: { field: 'value', format: '.2f' } } },
    ],
  };
}

/** Renders a vega-lite spec to SVG text, headless (no canvas). */
export async function renderSvg(spec: Record<string, unknown>): Promise<string> {
  // vega-lite's types need a newer moduleResolution than this project's; its compile() is all that is used here.
  const vegaLite = (await import('vega-lite' as string)) as { compile(spec: unknown): { spec: import('vega').Spec } };
  const vega = await import('vega');
  const compiled = vegaLite.compile(spec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Writes report.json, REPORT.md and report.svg into `directory` from the bench results there. */
export async function writeReport(directory = RESULTS_DIR): Promise<BenchReport> {
  const report = buildReport(loadResults(directory), machineInfo());
  writeFileSync(path.join(directory, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(path.join(directory, 'REPORT.md'), renderMarkdown(report));
  writeFileSync(path.join(directory, 'report.svg'), await renderSvg(chartSpec(report)));
  return report;
}

if (require.main === module) {
  writeReport()
    .then((report) => {
      console.log(`report: ${report.summary.met} of ${report.summary.ratios} goals met; wrote ${path.relative(process.cwd(), RESULTS_DIR)}/{report.json,REPORT.md,report.svg}`);
    })
    .catch((error) => {
      console.error('bench report failed:', error);
      process.exit(1);
    });
}
