/**
 * The bare Temporal floor of bench/transfers.ts: a workflow that waits for one `go` Update whose handler runs one
 * no-op activity, then completes. Same shape as a pre-transfer (start, then an Update running an activity) minus
 * the platform's work.
 */
import { condition, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';

export interface NoopActivities {
  noop(): Promise<void>;
}

const { noop } = proxyActivities<NoopActivities>({ startToCloseTimeout: '10 seconds' });

export const goUpdate = defineUpdate<string>('go');

export async function benchNoopWorkflow(): Promise<void> {
  let done = false;
  setHandler(goUpdate, async () => {
    await noop();
    done = true;
    return 'ok';
  });
  await condition(() => done);
}
