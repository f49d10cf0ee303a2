/**
 * docs/grafana-dashboard.json queries only metrics that exist: every `payments_`, `process_` and `nodejs_` name is
 * in the registry of src/metrics.ts (a histogram's or summary's as _bucket, _sum or _count), and every `temporal_`
 * name is a Temporal SDK metric of the list below. A renamed metric fails here instead of leaving an empty panel.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Knex } from '../../src/db/knex';
import { createMetrics } from '../../src/metrics';

const DASHBOARD = path.join(__dirname, '..', '..', 'docs', 'grafana-dashboard.json');

/**
 * Temporal SDK metrics (core SDK, Prometheus names with the default `temporal_` prefix, without unit suffix:
 * docs.temporal.io/references/sdk-metrics). Counters have no _total suffix (countersTotalSuffix is off).
 */
const TEMPORAL_COUNTERS_AND_GAUGES = [
  'temporal_request',
  'temporal_request_failure',
  'temporal_long_request',
  'temporal_long_request_failure',
  'temporal_worker_start',
  'temporal_num_pollers',
  'temporal_worker_task_slots_available',
  'temporal_worker_task_slots_used',
  'temporal_sticky_cache_size',
  'temporal_workflow_completed',
  'temporal_workflow_failed',
  'temporal_workflow_canceled',
  'temporal_workflow_continue_as_new',
  'temporal_workflow_task_execution_failed',
  'temporal_workflow_task_queue_poll_empty',
  'temporal_workflow_task_queue_poll_succeed',
  'temporal_activity_execution_failed',
  'temporal_activity_poll_no_task',
];
const TEMPORAL_HISTOGRAMS = [
  'temporal_request_latency',
  'temporal_long_request_latency',
  'temporal_workflow_endtoend_latency',
  'temporal_workflow_task_schedule_to_start_latency',
  'temporal_workflow_task_execution_latency',
  'temporal_workflow_task_replay_latency',
  'temporal_activity_schedule_to_start_latency',
  'temporal_activity_execution_latency',
  'temporal_activity_succeed_endtoend_latency',
];

/** Every series name a query may use for these metrics. */
function seriesNames(metrics: Array<{ name: string; type: string }>): Set<string> {
  const names = new Set<string>();
  for (const { name, type } of metrics) {
    names.add(name);
    if (type === 'histogram' || type === 'summary') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

interface Panel {
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Array<{ expr: string; datasource?: { type: string; uid: string } }>;
  panels?: Panel[];
}

describe('docs/grafana-dashboard.json', () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    uid: string;
    panels: Panel[];
    templating: { list: Array<{ name: string; type: string; query: unknown; datasource?: { uid: string } }> };
  };
  const panels = dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]).filter((panel) => panel.type !== 'row');
  const queries = [
    ...panels.flatMap((panel) => (panel.targets ?? []).map((target) => target.expr)),
    ...dashboard.templating.list.flatMap((variable) => (variable.type === 'query' ? [JSON.stringify(variable.query)] : [])),
  ];

  it('selects its Prometheus data source through a variable, in every panel and query', () => {
    const datasource = dashboard.templating.list.find((variable) => variable.type === 'datasource');
    expect(datasource).toMatchObject({ name: 'datasource', query: 'prometheus' });
    expect(panels.length).toBeGreaterThan(10);
    for (const panel of panels) {
      expect(panel.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.datasource?.uid).toBe('${datasource}');
    }
  });

  it('queries only metrics the platform registers or the Temporal SDK exports', () => {
    const registry = createMetrics('test', {} as Knex, true).registry;
    const platform = seriesNames(registry.getMetricsAsArray().map((metric) => ({ name: metric.name, type: String(metric.type) })));
    const temporal = seriesNames([
      ...TEMPORAL_COUNTERS_AND_GAUGES.map((name) => ({ name, type: 'counter' })),
      ...TEMPORAL_HISTOGRAMS.map((name) => ({ name, type: 'histogram' })),
    ]);
    const used = new Set(queries.flatMap((query) => query.match(/\b(?:payments|process|nodejs|temporal)_[A-Za-z0-9_]+/g) ?? []));
    const unknown = [...used].filter((name) => !(name.startsWith('temporal_') ? temporal : platform).has(name));
    expect(unknown).toEqual([]);
    // The dashboard covers each platform metric.
    for (const metric of [
      'payments_http_request_duration_seconds',
      'payments_rpc_duration_seconds',
      'payments_webhook_attempt_duration_seconds',
      'payments_webhook_attempts_total',
      'payments_payments_total',
      'payments_refusals_total',
      'payments_lockouts_total',
      'payments_admission_rejections_total',
      'payments_db_pool_acquire_seconds',
      'payments_db_pool_waits_total',
      'payments_db_pool_connections',
      'payments_payin_outbox_lag_seconds',
    ]) {
      expect([...used].some((name) => name.startsWith(metric))).toBe(true);
    }
    expect(used).toContain('temporal_workflow_task_schedule_to_start_latency_bucket');
    expect(used).toContain('temporal_worker_task_slots_available');
  });

  it('labels by route patterns, procedures and codes the metrics carry', () => {
    const labels = {
      payments_http_request_duration_seconds: ['route', 'method', 'status'],
      payments_rpc_duration_seconds: ['procedure', 'code'],
      payments_webhook_attempt_duration_seconds: ['event', 'outcome'],
      payments_webhook_attempts_total: ['outcome'],
      payments_payments_total: ['kind', 'status'],
      payments_refusals_total: ['reason'],
      payments_lockouts_total: ['door', 'limit'],
      payments_admission_rejections_total: ['server', 'why'],
      payments_db_pool_connections: ['state'],
    };
    for (const query of queries) {
      for (const [metric, names] of Object.entries(labels)) {
        if (!query.includes(metric)) continue;
        const grouped = [...query.matchAll(/by \(([^)]*)\)/g)].flatMap((match) => match[1]!.split(',').map((label) => label.trim()));
        for (const label of grouped) expect(['le', 'role', 'instance', ...names]).toContain(label);
      }
    }
  });
});
