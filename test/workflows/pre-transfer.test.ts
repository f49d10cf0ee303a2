/**
 * PreTransferWorkflow with mocked activities on a real Temporal dev server (test/workflows/bed.ts): the `confirm`
 * Update and its validator, the `state` query, the expiry timer, and the failure path: a refused post reaches the
 * caller as the activity's own failure, passed through (never re-wrapped) and read by its type.
 */
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { confirmPreTransferUpdate, preTransferStateQuery, type PreTransferActivities } from '../../src/flows/pre-transfer/contract';
import { preTransferWorkflow } from '../../workflows/pre-transfer';
import { deferred, eventually, failureOf, historyHas, names, startWorkflowBed, type WorkflowBed } from './bed';

describe('PreTransferWorkflow', () => {
  let bed: WorkflowBed<PreTransferActivities>;

  beforeAll(async () => {
    bed = await startWorkflowBed<PreTransferActivities>({
      postPreTransfer: async ({ fund_transfer_id }) => ({ fund_transfer_id }),
      voidPreTransfer: async () => undefined,
    });
  });
  afterAll(() => bed.stop());

  async function start(answers: Partial<PreTransferActivities> = {}, ttl_seconds = 3600) {
    const { workflowId, calls } = bed.workflow('PT', answers);
    const handle = await bed.client.workflow.start(preTransferWorkflow, { taskQueue: bed.taskQueue, workflowId, args: [{ pre_transfer_id: workflowId, ttl_seconds }] });
    return { id: workflowId, handle, calls };
  }
  const confirm = (partner_transaction_id: string) => ({ args: [{ partner_transaction_id }] as [{ partner_transaction_id: string }] });

  it('posts the hold on confirm, under the post key, as a local activity', async () => {
    const { id, handle, calls } = await start();
    expect(await handle.query(preTransferStateQuery)).toEqual({ state: 'pending', fund_transfer_id: null });
    const { fund_transfer_id } = await handle.executeUpdate(confirmPreTransferUpdate, confirm('TX1'));
    expect(fund_transfer_id).toMatch(/^FT[0-9A-F]{32}$/);
    expect(await handle.result()).toEqual({ state: 'confirmed' });
    expect(calls.map(({ name, input }) => [name, input])).toEqual([
      ['postPreTransfer', { pre_transfer_id: id, partner_transaction_id: 'TX1', fund_transfer_id, idempotency_key: `${id}:post` }],
    ]);
    expect(await handle.query(preTransferStateQuery)).toEqual({ state: 'confirmed', fund_transfer_id });
    expect(await historyHas(handle, 'ACTIVITY_TASK_SCHEDULED')).toBe(false);
  });

  it('fails a refused post with the activity’s own failure, passed through, and stays confirmable', async () => {
    const { handle, calls } = await start({
      postPreTransfer: async ({ partner_transaction_id, fund_transfer_id }) => {
        if (partner_transaction_id === 'USED1') throw ApplicationFailure.nonRetryable('partner_transaction_id used by PT0', 'DUPLICATE_PARTNER_TRANSACTION_ID');
        return { fund_transfer_id };
      },
    });
    const refused = await handle.executeUpdate(confirmPreTransferUpdate, confirm('USED1')).then(
      () => undefined,
      (error: unknown) => error,
    );
    // The client's wrapper around the local activity's failure as the activity threw it (its type, its message): no
    // failure of the workflow's own making in between.
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    const cause = (refused as WorkflowUpdateFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause).toMatchObject({ type: 'DUPLICATE_PARTNER_TRANSACTION_ID', message: 'partner_transaction_id used by PT0', nonRetryable: true });
    expect(await handle.query(preTransferStateQuery)).toEqual({ state: 'pending', fund_transfer_id: null });
    await handle.executeUpdate(confirmPreTransferUpdate, confirm('TX2'));
    expect(await handle.result()).toEqual({ state: 'confirmed' });
    expect(names(calls)).toEqual(['postPreTransfer', 'postPreTransfer']);
  });

  it('takes a post refused as expired for the expiry: later confirms are refused and the hold is voided', async () => {
    const { id, handle, calls } = await start({
      postPreTransfer: async () => {
        throw ApplicationFailure.nonRetryable('the hold expired', 'PRE_TRANSFER_EXPIRED');
      },
    });
    expect(await failureOf(handle.executeUpdate(confirmPreTransferUpdate, confirm('TX1')))).toBe('PRE_TRANSFER_EXPIRED');
    expect(await handle.result()).toEqual({ state: 'expired' });
    expect(calls.map(({ name, input }) => [name, input])).toEqual([
      ['postPreTransfer', expect.objectContaining({ partner_transaction_id: 'TX1' })],
      ['voidPreTransfer', { pre_transfer_id: id, idempotency_key: `${id}:void` }],
    ]);
  });

  it('voids the hold at its timer', async () => {
    const { handle, calls } = await start({}, 1);
    expect(await handle.result()).toEqual({ state: 'expired' });
    expect(names(calls)).toEqual(['voidPreTransfer']);
    expect(await handle.query(preTransferStateQuery)).toEqual({ state: 'expired', fund_transfer_id: null });
  });

  it('accepts one confirm at a time (another meanwhile is USED) and finishes posting it even when the timer fires', async () => {
    const posting = deferred();
    const { handle, calls } = await start(
      {
        postPreTransfer: async ({ fund_transfer_id }) => {
          await posting.promise;
          return { fund_transfer_id };
        },
      },
      1,
    );
    const first = handle.executeUpdate(confirmPreTransferUpdate, confirm('TX1'));
    await eventually(async () => (await handle.query(preTransferStateQuery)).state === 'confirming');
    expect(await failureOf(handle.executeUpdate(confirmPreTransferUpdate, confirm('TX2')))).toBe('PRE_TRANSFER_USED');
    // The post (a local activity) holds the workflow task: the second confirm is validated once the task heartbeats,
    // past the one-second timer.
    posting.resolve();
    expect((await first).fund_transfer_id).toMatch(/^FT/);
    expect(await handle.result()).toEqual({ state: 'confirmed' });
    expect(names(calls)).toEqual(['postPreTransfer']);
  });
});
