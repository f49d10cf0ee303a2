import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  defineQuery,
  defineUpdate,
  proxyActivities,
  setHandler,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../src/activities';

const { postPreTransfer, voidPreTransfer } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds' },
});

/** pending → confirming (an accepted confirm Update is posting) → confirmed; pending → expired at the timer. */
export type PreTransferWorkflowState = 'pending' | 'confirming' | 'confirmed' | 'expired';

export interface PreTransferWorkflowInput {
  pre_transfer_id: string;
  /** Lifetime in seconds, counted from creation (PRE_TRANSFER_TTL_SECONDS at creation). */
  ttl_seconds: number;
}

export interface ConfirmPreTransferUpdateInput {
  partner_transaction_id: string;
}

export interface ConfirmPreTransferUpdateResult {
  fund_transfer_id: string;
}

/** Failure types the confirm Update rejects with (ApplicationFailure.type = the domain reason). */
export const PRE_TRANSFER_USED = 'PRE_TRANSFER_USED';
export const PRE_TRANSFER_EXPIRED = 'PRE_TRANSFER_EXPIRED';
export const DUPLICATE_PARTNER_TRANSACTION_ID = 'DUPLICATE_PARTNER_TRANSACTION_ID';

export const confirmPreTransferUpdate = defineUpdate<ConfirmPreTransferUpdateResult, [ConfirmPreTransferUpdateInput]>('confirm');
export const preTransferStateQuery = defineQuery<{ state: PreTransferWorkflowState; fund_transfer_id: string | null }>('state');

/**
 * PreTransferWorkflow (workflow id = pre_transfer_id; Area A, platform decisions §6). The hold on the partner float
 * already exists when it starts. It waits for a `confirm` Update or the `ttl_seconds` timer, whichever comes first:
 * confirm posts the hold to the receiver (activity `postPreTransfer`, idempotency key = workflow id + ":post"),
 * expiry voids it (`voidPreTransfer`, key = workflow id + ":void"). The validator refuses a used or expired
 * pre-transfer, so of many concurrent confirms exactly one is accepted. Query `state` gives the state.
 */
export async function preTransferWorkflow(input: PreTransferWorkflowInput): Promise<{ state: PreTransferWorkflowState }> {
  const workflowId = workflowInfo().workflowId;
  let state: PreTransferWorkflowState = 'pending';
  let timedOut = false;
  let fundTransferId: string | null = null;

  setHandler(preTransferStateQuery, () => ({ state, fund_transfer_id: fundTransferId }));
  setHandler(
    confirmPreTransferUpdate,
    async ({ partner_transaction_id }) => {
      state = 'confirming';
      const candidate = `FT${uuid4().replace(/-/g, '').toUpperCase()}`;
      try {
        const result = await postPreTransfer({
          pre_transfer_id: input.pre_transfer_id,
          partner_transaction_id,
          fund_transfer_id: candidate,
          idempotency_key: `${workflowId}:post`,
        });
        fundTransferId = result.fund_transfer_id;
        state = 'confirmed';
        return { fund_transfer_id: result.fund_transfer_id };
      } catch (error) {
        state = 'pending';
        const cause = error instanceof ActivityFailure ? error.cause : error;
        if (cause instanceof ApplicationFailure && cause.type === DUPLICATE_PARTNER_TRANSACTION_ID) {
          throw ApplicationFailure.nonRetryable('duplicate partner_transaction_id', DUPLICATE_PARTNER_TRANSACTION_ID);
        }
        if (cause instanceof ApplicationFailure && cause.type === PRE_TRANSFER_EXPIRED) {
          timedOut = true;
          throw ApplicationFailure.nonRetryable('pre-transfer expired', PRE_TRANSFER_EXPIRED);
        }
        throw error;
      }
    },
    {
      validator: (_input: ConfirmPreTransferUpdateInput) => {
        if (state === 'confirming' || state === 'confirmed') throw ApplicationFailure.nonRetryable('pre-transfer already used', PRE_TRANSFER_USED);
        if (state === 'expired' || timedOut) throw ApplicationFailure.nonRetryable('pre-transfer expired', PRE_TRANSFER_EXPIRED);
      },
    },
  );

  void sleep(input.ttl_seconds * 1000).then(() => {
    timedOut = true;
  });
  // A confirm accepted before the timer finishes posting, even when the timer fires meanwhile.
  await condition(() => state === 'confirmed' || (timedOut && state === 'pending'));
  if (state === 'pending') {
    state = 'expired';
    await voidPreTransfer({ pre_transfer_id: input.pre_transfer_id, idempotency_key: `${workflowId}:void` });
  }
  await condition(allHandlersFinished);
  return { state };
}
