/** WORKER_* settings → Temporal worker options; 0 leaves the SDK's default. */
import { loadConfig } from '../../src/config';
import { workerTuning } from '../../src/worker';

const base = { DATABASE_URL: 'postgres://127.0.0.1/unused' };

describe('worker tuning', () => {
  it('sets only the options given', () => {
    expect(workerTuning(loadConfig(base))).toEqual({});
    expect(
      workerTuning(
        loadConfig({
          ...base,
          WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: '80',
          WORKER_MAX_CONCURRENT_ACTIVITIES: '50',
          WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: '200',
          WORKER_WORKFLOW_TASK_POLLERS: '16',
          WORKER_ACTIVITY_TASK_POLLERS: '4',
          WORKER_MAX_CACHED_WORKFLOWS: '5000',
        }),
      ),
    ).toEqual({
      maxConcurrentWorkflowTaskExecutions: 80,
      maxConcurrentActivityTaskExecutions: 50,
      maxConcurrentLocalActivityExecutions: 200,
      maxConcurrentWorkflowTaskPolls: 16,
      maxConcurrentActivityTaskPolls: 4,
      maxCachedWorkflows: 5000,
    });
  });

  it('refuses a negative or absurd value', () => {
    expect(() => loadConfig({ ...base, WORKER_WORKFLOW_TASK_POLLERS: '-1' })).toThrow('WORKER_WORKFLOW_TASK_POLLERS');
    expect(() => loadConfig({ ...base, WORKER_MAX_CONCURRENT_ACTIVITIES: 'many' })).toThrow('WORKER_MAX_CONCURRENT_ACTIVITIES');
  });
});
