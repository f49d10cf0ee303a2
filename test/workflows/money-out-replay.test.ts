/**
 * The refund and deposit-refund workflows moved onto the money-out saga's body (docs/money-out.md) without a version
 * marker: docs/operations.md "Workflow versions" says their running histories replay. These histories were recorded
 * by the workflows as they were before the move (commit c31d6c4, mocked activities, the run's Temporal dev server):
 * a refund answered at once, one pending and asked again after its decision timeout, one waiting for a hint, one
 * whose first hints were malformed or had no record, one decided by a hint before its first task, and a deposit
 * refund succeeded and failed (with its webhook). Each must replay with this code: a change to the body that alters
 * its commands fails here (a nondeterminism error) and needs its own `patched()` marker.
 */
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const FIXTURES = path.resolve(__dirname, '../fixtures/money-out');

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is unset: run tests through jest (global-setup)`);
  return value;
}

describe('money-out workflows replay the histories recorded before the saga', () => {
  const files = readdirSync(FIXTURES).filter((file) => file.endsWith('.history.b64'));

  it('has the recorded histories', () => {
    expect(files.sort()).toEqual(['DRF-F', 'DRF-OK', 'RFD-AT-ONCE', 'RFD-EARLY', 'RFD-NOREC', 'RFD-PENDING', 'RFD-WAIT'].map((name) => `${name}.history.b64`));
  });

  it.each(files)('%s replays', async (file) => {
    const history = temporal.api.history.v1.History.decode(Buffer.from(readFileSync(path.join(FIXTURES, file), 'utf8').trim(), 'base64'));
    expect(history.events!.length).toBeGreaterThan(5);
    const code = readFileSync(required('PAYMENTS_TEST_WORKFLOW_BUNDLE'), 'utf8');
    await expect(Worker.runReplayHistory({ workflowBundle: { code }, replayName: file }, history)).resolves.toBeUndefined();
  });
});
