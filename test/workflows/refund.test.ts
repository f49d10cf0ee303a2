/**
 * RefundWorkflow with mocked activities on a real Temporal dev server (test/workflows/bed.ts): the provider's answer
 * (succeeded, failed, pending) in one activity that also delivers its webhook, the decision message applied from its
 * record (a message without one changes nothing), asking again after the decision timeout, and a decision that
 * arrives before the run's first task.
 */
import { ApplicationFailure } from '@temporalio/common';
import { decidedSignal, type RefundActivities } from '../../src/flows/refund/contract';
import { refundWorkflow } from '../../workflows/refund';
import { eventually, startWorkflowBed, type WorkflowBed } from './bed';

describe('RefundWorkflow', () => {
  let bed: WorkflowBed<RefundActivities>;

  beforeAll(async () => {
    bed = await startWorkflowBed<RefundActivities>({
      requestRefund: async () => ({ status: 'succeeded', webhook_id: 'WH-S' }),
      applyRefundDecision: async () => ({ status: 'succeeded', webhook_id: 'WH-S' }),
    });
  });
  afterAll(() => bed.stop());

  async function start(answers: Partial<RefundActivities> = {}, decision_timeout_seconds = 30) {
    const { workflowId, calls } = bed.workflow('RFD', answers);
    const handle = await bed.client.workflow.start(refundWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ refund_reference: workflowId, decision_timeout_seconds }] });
    return { handle, calls, workflowId };
  }

  it('asks the provider and ends with its answer in one activity (which delivers the webhook)', async () => {
    const { handle, calls, workflowId } = await start();
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: ['WH-S'] });
    expect(calls.map((call) => [call.name, call.input])).toEqual([['requestRefund', { refund_reference: workflowId }]]);
    // One workflow task: the start's, with the activity's marker recorded in it.
    const history = await handle.fetchHistory();
    expect(history.events!.filter((event) => event.workflowTaskCompletedEventAttributes)).toHaveLength(1);
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

  it('ends at once for a refund already decided (a restarted run), with the webhook its decision recorded', async () => {
    const { handle, calls } = await start({ requestRefund: async () => ({ status: 'failed', webhook_id: 'WH-F' }) });
    expect(await handle.result()).toEqual({ status: 'failed', webhook_ids: ['WH-F'] });
    expect(calls.map((call) => call.name)).toEqual(['requestRefund']);
  });

  it('applies a decision message that came before its first task from its record, and never asks the provider', async () => {
    const { workflowId, calls } = bed.workflow('RFD', { applyRefundDecision: async () => ({ status: 'failed', webhook_id: 'WH-F' }) });
    const handle = await bed.client.workflow.signalWithStart(refundWorkflow, {
      taskQueue: bed.taskQueue,
      workflowId,
      args: [{ refund_reference: workflowId, decision_timeout_seconds: 30 }],
      signal: decidedSignal,
      signalArgs: [{ status: 'refund_failed' }],
    });
    expect(await handle.result()).toEqual({ status: 'failed', webhook_ids: ['WH-F'] });
    expect(calls.map((call) => call.name)).toEqual(['applyRefundDecision']);
  });

  it('asks the provider when a decision message before its first task has no record', async () => {
    const { workflowId, calls } = bed.workflow('RFD', {
      applyRefundDecision: async () => {
        throw ApplicationFailure.nonRetryable('no recorded notification', 'REFUND_DECISION_NOT_AUTHORIZED');
      },
    });
    const handle = await bed.client.workflow.signalWithStart(refundWorkflow, {
      taskQueue: bed.taskQueue,
      workflowId,
      args: [{ refund_reference: workflowId, decision_timeout_seconds: 30 }],
      signal: decidedSignal,
      signalArgs: [{ status: 'refund_succeeded' }],
    });
    expect(await handle.result()).toEqual({ status: 'succeeded', webhook_ids: ['WH-S'] });
    expect(calls.map((call) => call.name)).toEqual(['applyRefundDecision', 'requestRefund']);
  });
});
