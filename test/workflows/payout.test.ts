/**
 * PayoutWorkflow with mocked activities on a real Temporal dev server (test/workflows/bed.ts): a payout below the
 * threshold runs the money-out saga at once; one awaiting approval waits for an approval hint applied from its record
 * (a hint without one changes nothing), is rejected, or is voided when its approval timeout runs out.
 */
import { ApplicationFailure } from '@temporalio/common';
import { approvalSignal, decidedSignal, type PayoutActivities } from '../../src/flows/payout/contract';
import { payoutWorkflow } from '../../workflows/payout';
import { eventually, startWorkflowBed, type WorkflowBed } from './bed';

describe('PayoutWorkflow', () => {
  let bed: WorkflowBed<PayoutActivities>;

  beforeAll(async () => {
    bed = await startWorkflowBed<PayoutActivities>({
      requestPayout: async () => ({ status: 'succeeded', webhook_id: 'WH-S' }),
      applyPayoutDecision: async () => ({ status: 'succeeded', webhook_id: 'WH-S' }),
      applyPayoutApproval: async () => ({ status: 'held', webhook_id: null }),
      expirePayoutApproval: async () => ({ status: 'failed', webhook_id: 'WH-T' }),
    });
  });
  afterAll(() => bed.stop());

  async function start(answers: Partial<PayoutActivities> = {}, awaiting_approval = false, approval_timeout_seconds = 60) {
    const { workflowId, calls } = bed.workflow('PO', answers);
    const handle = await bed.client.workflow.start(payoutWorkflow, {
      taskQueue: bed.taskQueue,
      workflowId,
      args: [{ payout_reference: workflowId, decision_timeout_seconds: 30, approval_timeout_seconds, awaiting_approval }],
    });
    return { handle, calls, workflowId };
  }

  it('asks the provider at once below the threshold', async () => {
    const { handle, calls, workflowId } = await start();
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: ['WH-S'] });
    expect(calls.map((call) => [call.name, call.input])).toEqual([['requestPayout', { payout_reference: workflowId }]]);
  });

  it('waits for an approval record: a hint without one changes nothing; approved, the saga runs', async () => {
    let recorded = false;
    const { handle, calls } = await start(
      {
        applyPayoutApproval: async () => {
          if (!recorded) throw ApplicationFailure.nonRetryable('no recorded approval', 'PAYOUT_APPROVAL_NOT_AUTHORIZED');
          return { status: 'held', webhook_id: null };
        },
        requestPayout: async () => ({ status: 'requested', webhook_id: null }),
      },
      true,
    );
    await handle.signal(approvalSignal, { decision: 'approve' });
    await eventually(() => calls.some((call) => call.name === 'applyPayoutApproval'));
    expect(calls.some((call) => call.name === 'requestPayout')).toBe(false);
    expect((await handle.describe()).status.name).toBe('RUNNING');
    recorded = true;
    await handle.signal(approvalSignal, { decision: 'approve' });
    await eventually(() => calls.some((call) => call.name === 'requestPayout'));
    await handle.signal(decidedSignal, { status: 'payout_succeeded' });
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: ['WH-S'] });
  });

  it('ends failed when the approval record rejects it, without asking the provider', async () => {
    const { handle, calls } = await start({ applyPayoutApproval: async () => ({ status: 'failed', webhook_id: 'WH-R' }) }, true);
    await handle.signal(approvalSignal, { decision: 'reject' });
    expect(await handle.result()).toEqual({ status: 'failed', webhook_ids: ['WH-R'] });
    expect(calls.some((call) => call.name === 'requestPayout')).toBe(false);
  });

  it('is voided when its approval timeout runs out', async () => {
    const none = async () => Promise.reject(ApplicationFailure.nonRetryable('no recorded approval', 'PAYOUT_APPROVAL_NOT_AUTHORIZED'));
    const { handle, calls } = await start({ applyPayoutApproval: none }, true, 1);
    expect(await handle.result()).toEqual({ status: 'failed', webhook_ids: ['WH-T'] });
    expect(calls.map((call) => call.name)).toEqual(['applyPayoutApproval', 'expirePayoutApproval']);
  });

  it('applies an approval recorded before the run started, without waiting for a hint', async () => {
    const { handle, calls } = await start({}, true);
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: ['WH-S'] });
    expect(calls.map((call) => call.name)).toEqual(['applyPayoutApproval', 'requestPayout']);
  });
});
