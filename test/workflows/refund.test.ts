/**
 * RefundWorkflow with mocked activities on a real Temporal dev server (test/workflows/bed.ts): the hold, the
 * provider's answer (succeeded, failed, pending), the decision message applied from its record (a message without one
 * changes nothing), asking again after the decision timeout, and a decision that arrives before the answer.
 */
import { ApplicationFailure } from '@temporalio/common';
import { decidedSignal, type RefundActivities, type RefundStep } from '../../src/flows/refund/contract';
import { refundWorkflow } from '../../workflows/refund';
import { eventually, startWorkflowBed, type WorkflowBed } from './bed';

const held: RefundStep = { status: 'held', webhook_id: null };

describe('RefundWorkflow', () => {
  let bed: WorkflowBed<RefundActivities>;

  beforeAll(async () => {
    bed = await startWorkflowBed<RefundActivities>({
      holdRefund: async () => held,
      requestRefund: async () => ({ status: 'succeeded', webhook_id: 'WH-S' }),
      applyRefundDecision: async () => ({ status: 'succeeded', webhook_id: 'WH-S' }),
      startRefundWebhooks: async () => undefined,
    });
  });
  afterAll(() => bed.stop());

  async function start(answers: Partial<RefundActivities> = {}, decision_timeout_seconds = 30) {
    const { workflowId, calls } = bed.workflow('RFD', answers);
    const handle = await bed.client.workflow.start(refundWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ refund_reference: workflowId, decision_timeout_seconds }] });
    return { handle, calls, workflowId };
  }

  it('holds, asks the provider, and delivers the webhook of its answer', async () => {
    const { handle, calls, workflowId } = await start();
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: ['WH-S'] });
    expect(calls.map((call) => [call.name, call.input])).toEqual([
      ['holdRefund', { refund_reference: workflowId }],
      ['requestRefund', { refund_reference: workflowId }],
      ['startRefundWebhooks', { webhook_ids: ['WH-S'] }],
    ]);
  });

  it('ends failed when the provider fails it', async () => {
    const { handle } = await start({ requestRefund: async () => ({ status: 'failed', webhook_id: 'WH-F' }) });
    expect(await handle.result()).toEqual({ status: 'failed', webhook_ids: ['WH-F'] });
  });

  it('retries the provider call with backoff while it gives no outcome', async () => {
    let attempts = 0;
    const { handle, calls } = await start({
      requestRefund: async () => {
        attempts += 1;
        if (attempts < 3) throw new Error('upstream refund unreachable: timed out');
        return { status: 'succeeded', webhook_id: 'WH-S' };
      },
    });
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: ['WH-S'] });
    expect(calls.filter((call) => call.name === 'requestRefund').map((call) => call.attempt)).toEqual([1, 2, 3]);
  });

  it('waits in pending for the decision message and applies it from its record', async () => {
    const { handle, calls } = await start({ requestRefund: async () => ({ status: 'pending', webhook_id: null }) });
    await eventually(() => calls.some((call) => call.name === 'requestRefund'));
    await handle.signal(decidedSignal, { status: 'refund_succeeded' });
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: ['WH-S'] });
    expect(calls.filter((call) => call.name === 'applyRefundDecision')).toHaveLength(1);
  });

  it('ignores a decision message without a record (and a malformed one) and keeps waiting', async () => {
    let recorded = false;
    const { handle, calls } = await start({
      requestRefund: async () => ({ status: 'pending', webhook_id: null }),
      applyRefundDecision: async () => {
        if (!recorded) throw ApplicationFailure.nonRetryable('no recorded notification', 'REFUND_DECISION_NOT_AUTHORIZED');
        return { status: 'failed', webhook_id: 'WH-F' };
      },
    });
    await eventually(() => calls.some((call) => call.name === 'requestRefund'));
    await handle.signal(decidedSignal, { status: 'refund_succeeded' });
    await handle.signal(decidedSignal, { status: 'nonsense' } as never);
    await eventually(() => calls.some((call) => call.name === 'applyRefundDecision'));
    expect((await handle.describe()).status.name).toBe('RUNNING');
    recorded = true;
    await handle.signal(decidedSignal, { status: 'refund_failed' });
    expect(await handle.result()).toEqual({ status: 'failed', webhook_ids: ['WH-F'] });
    expect(calls.filter((call) => call.name === 'applyRefundDecision')).toHaveLength(2);
  });

  it('asks the provider again after the decision timeout, and ends with its late answer', async () => {
    let asked = 0;
    const { handle, calls } = await start(
      {
        requestRefund: async () => {
          asked += 1;
          return asked < 3 ? { status: 'pending', webhook_id: null } : { status: 'succeeded', webhook_id: 'WH-S' };
        },
      },
      0.2,
    );
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: ['WH-S'] });
    expect(calls.filter((call) => call.name === 'requestRefund')).toHaveLength(3);
    expect(calls.filter((call) => call.name === 'applyRefundDecision')).toHaveLength(0);
  });

  it('ends at once for a refund already decided (a restarted run)', async () => {
    const { handle, calls } = await start({ holdRefund: async () => ({ status: 'failed', webhook_id: null }) });
    expect(await handle.result()).toEqual({ status: 'failed', webhook_ids: [] });
    expect(calls.map((call) => call.name)).toEqual(['holdRefund']);
  });
});
