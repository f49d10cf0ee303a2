import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import {
  confirmPreTransferUpdate,
  preTransferIdempotencyKey,
  preTransferStateQuery,
  type ConfirmPreTransferUpdateInput,
  type PreTransferActivities,
  type PreTransferReason,
  type PreTransferWorkflowInput,
  type PreTransferWorkflowResult,
  type PreTransferWorkflowState,
} from '../src/flows/pre-transfer/contract';

const stepOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds' },
} as const;
// Both steps are one short database transaction: as local activities they run inside the workflow task that takes
// the confirm (or the timer), with no activity task to dispatch and no second workflow task to report it.
const localSteps = proxyLocalActivities<PreTransferActivities>(stepOptions);
// Runs recorded before LOCAL_STEPS scheduled them as activity tasks, and replay them so.
const activitySteps = proxyActivities<PreTransferActivities>(stepOptions);

/** Patch id: the post and void steps run as local activities. */
export const LOCAL_STEPS = 'pre-transfer-local-steps';

function refuse(reason: PreTransferReason, detail: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(detail, reason);
}

/** The failure type an activity rejected with, if any. */
function refusalOf(error: unknown): string | undefined {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

/**
 * PreTransferWorkflow (workflow id = pre_transfer_id; Area A, platform decisions §6). The hold on the partner float
 * already exists when it starts. It waits for a `confirm` Update or the `ttl_seconds` timer, whichever comes first:
 * confirm posts the hold to the receiver (local activity `postPreTransfer`, which moves money only for a confirm
 * request the api verified and recorded), expiry voids it (`voidPreTransfer`), each under its step's idempotency key. The validator refuses a used or expired pre-transfer, so of many concurrent confirms
 * exactly one is accepted. Query `state` gives the state.
 */
export async function preTransferWorkflow(input: PreTransferWorkflowInput): Promise<PreTransferWorkflowResult> {
  const workflowId = workflowInfo().workflowId;
  const { postPreTransfer, voidPreTransfer } = patched(LOCAL_STEPS) ? localSteps : activitySteps;
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
          idempotency_key: preTransferIdempotencyKey(workflowId, 'post'),
        });
        fundTransferId = result.fund_transfer_id;
        state = 'confirmed';
        return { fund_transfer_id: result.fund_transfer_id };
      } catch (error) {
        state = 'pending';
        const reason = refusalOf(error);
        if (reason === 'DUPLICATE_PARTNER_TRANSACTION_ID') throw refuse(reason, 'duplicate partner_transaction_id');
        // An Update nobody verified (sent straight to Temporal): nothing moved, the partner may still confirm.
        if (reason === 'CONFIRMATION_NOT_RECORDED') throw refuse(reason, 'no verified confirm request recorded');
        if (reason === 'PRE_TRANSFER_EXPIRED') {
          timedOut = true;
          throw refuse(reason, 'pre-transfer expired');
        }
        throw error;
      }
    },
    {
      validator: (_input: ConfirmPreTransferUpdateInput) => {
        if (state === 'confirming' || state === 'confirmed') throw refuse('PRE_TRANSFER_USED', 'pre-transfer already used');
        if (state === 'expired' || timedOut) throw refuse('PRE_TRANSFER_EXPIRED', 'pre-transfer expired');
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
    await voidPreTransfer({ pre_transfer_id: input.pre_transfer_id, idempotency_key: preTransferIdempotencyKey(workflowId, 'void') });
  }
  await condition(allHandlersFinished);
  return { state };
}
