/** The benchmark report's pure parts (bench/support/report.ts): met/missed, markdown tables, chart data. */
import { buildReport, chartSpec, formatRatio, markdownTable, renderMarkdown, type MachineInfo } from '../../bench/support/report';

const machine: MachineInfo = {
  cpus: 2,
  cpu_model: 'Test CPU',
  load_average: [1.5, 1, 0.5],
  node_version: 'v20.0.0',
  platform: 'linux test x64',
  total_memory_mib: 4096,
  date: '2026-11-22T12:00:00.000Z',
};

const results = [
  {
    name: 'ledger',
    rows: [
      { implementation: 'baseline', per_second: 400.5, p50_ms: 1.9, p99_ms: 10.1 },
      { implementation: 'ledger | two-phase', per_second: 300, p50_ms: 2.6, p99_ms: 12.8 },
    ],
    ratios: [
      { label: 'ledger / baseline', value: 0.749, goal: 0.6 },
      { label: 'exactly at goal', value: 0.5, goal: 0.5 },
    ],
    notes: ['ledger check ok'],
    finished_at: '2026-11-22T11:00:00.000Z',
    seconds: 70.4,
    machine: { cpus: 2, load_average: [7.5, 6, 5] as [number, number, number] },
  },
  { name: 'payins', ratios: [{ label: 'façade ÷ direct', value: 0.0275, goal: 0.5 }], metrics: { failures: 0 } },
];

describe('buildReport', () => {
  it('marks a goal met when the value reaches it, missed below, and counts them', () => {
    const report = buildReport(results, machine);
    expect(report.benches.map((bench) => bench.ratios.map((ratio) => ratio.met))).toEqual([[true, true], [false]]);
    expect(report.summary).toEqual({ ratios: 3, met: 2, missed: 1 });
    expect(report.generated_at).toBe(machine.date);
  });

  it('takes a bench without ratios as having none', () => {
    expect(buildReport([{ name: 'empty' }], machine).summary).toEqual({ ratios: 0, met: 0, missed: 0 });
  });
});

describe('markdown', () => {
  it('formats ratios with two decimals, three below 0.1', () => {
    expect([formatRatio(0.749), formatRatio(1.27), formatRatio(0.0275), formatRatio(0)]).toEqual(['0.75×', '1.27×', '0.028×', '0.00×']);
  });

  it('renders rows as a table: columns in first-seen order, numbers right-aligned, pipes escaped', () => {
    expect(markdownTable([{ a: 'x', n: 1 }, { n: 2, b: 'y|z' }])).toBe(
      ['| a | n | b |', '|---|---:|---|', '| x | 1 |  |', '|  | 2 | y\\|z |'].join('\n'),
    );
    expect(markdownTable([])).toBe('_(no rows)_');
  });

  it('renders the summary, every ratio with its goal and outcome, the rows, the notes and the machine', () => {
    const markdown = renderMarkdown(buildReport(results, machine));
    expect(markdown).toContain('**2 of 3 goals met**, 1 missed.');
    expect(markdown).toContain('| ledger | ledger / baseline | 0.75× | ≥ 0.60× | met |');
    expect(markdown).toContain('| payins | façade ÷ direct | 0.028× | ≥ 0.50× | **missed** |');
    expect(markdown).toContain('| ledger \\| two-phase | 300 | 2.6 | 12.8 |');
    expect(markdown).toContain('| implementation | per_second | p50_ms | p99_ms |');
    expect(markdown).toContain('- ledger check ok');
    expect(markdown).toContain('Run finished 2026-11-22T11:00:00.000Z, in 70 s, load average 7.5 / 6 / 5, 2 CPUs.');
    expect(markdown).toContain('- CPUs: 2 (Test CPU)');
    expect(markdown).toContain('1.5 / 1 / 0.5 (1 / 5 / 15 min)');
    expect(markdown).toContain('Node.js v20.0.0');
    expect(markdown).toContain('| metric | value |\n|---|---:|\n| failures | 0 |');
    expect(markdown.endsWith('\n')).toBe(true);
    expect(markdown).not.toMatch(/\n{3}/);
  });
});

describe('chartSpec', () => {
  it('has one bar per ratio with its goal and outcome, and a domain holding every value and goal', () => {
    const spec = chartSpec(buildReport(results, machine)) as { data: { values: unknown[] }; layer: Array<{ encoding: { x: { scale: { domain: number[] } } } }> };
    expect(spec.data.values).toEqual([
      { ratio: 'ledger: ledger / baseline', value: 0.749, goal: 0.6, outcome: 'goal met' },
      { ratio: 'ledger: exactly at goal', value: 0.5, goal: 0.5, outcome: 'goal met' },
      { ratio: 'payins: façade ÷ direct', value: 0.028, goal: 0.5, outcome: 'goal missed' },
    ]);
    expect(spec.layer[0]!.encoding.x.scale.domain).toEqual([0, 1]);
    const high = chartSpec(buildReport([{ name: 'x', ratios: [{ label: 'y', value: 2.5, goal: 3 }] }], machine)) as typeof spec;
    expect(high.layer[0]!.encoding.x.scale.domain).toEqual([0, 3]);
  });
});
