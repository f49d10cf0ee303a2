/**
 * DepositRefundWorkflow with mocked activities on a real Temporal dev server (test/workflows/bed.ts): the acquirer
 * step and its decision, its retries while the deposit's capture runs (the activity's retryable failure), and the
 * decision's webhook delivered only when one was produced.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { DepositRefundActivities } from '../../src/flows/deposit/contract';
import { depositRefundWorkflow } from '../../workflows/deposit-refund';
import { startWorkflowBed, type WorkflowBed } from './bed';

describe('DepositRefundWorkflow', () => {
  let bed: WorkflowBed<DepositRefundActivities>;

  beforeAll(async () => {
    bed = await startWorkflowBed<DepositRefundActivities>({
      settleDepositRefund: async () => ({ status: 'succeeded', webhook_id: null }),
      startDepositRefundWebhooks: async () => undefined,
    });
  });
  afterAll(() => bed.stop());

  async function start(answers: Partial<DepositRefundActivities> = {}) {
    const { workflowId, calls } = bed.workflow('DRF', answers);
    const handle = await bed.client.workflow.start(depositRefundWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ refund_reference: workflowId }] });
    return { handle, calls, workflowId };
  }

  it('asks the acquirer once and ends with its decision; without a webhook (events only) delivers nothing', async () => {
    const { handle, calls, workflowId } = await start();
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: [] });
    expect(calls.map((call) => [call.name, call.input])).toEqual([['settleDepositRefund', { refund_reference: workflowId }]]);
  });

  it("delivers the decision's webhook (a preorder's call-back)", async () => {
    const { handle, calls } = await start({ settleDepositRefund: async () => ({ status: 'failed', webhook_id: 'WH-F' }) });
    expect(await handle.result()).toEqual({ status: 'failed', webhook_ids: ['WH-F'] });
    expect(calls.at(-1)).toMatchObject({ name: 'startDepositRefundWebhooks', input: { webhook_ids: ['WH-F'] } });
  });

  it('retries while the capture is running, then refunds', async () => {
    let attempts = 0;
    const { handle, calls } = await start({
      settleDepositRefund: async () => {
        attempts += 1;
        if (attempts < 3) throw ApplicationFailure.retryable('deposit DEP1 is capturing', 'DEPOSIT_CAPTURE_RUNNING');
        return { status: 'succeeded', webhook_id: null };
      },
    });
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: [] });
    expect(calls.map((call) => call.attempt)).toEqual([1, 2, 3]);
  });
});
