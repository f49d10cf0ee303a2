import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  condition,
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
import { upsertPartnerTransactionId } from './search-attributes';

// Both steps are one short database transaction: as local activities they run inside the workflow task that takes
// the confirm (or the timer), with no activity task to dispatch and no second workflow task to report it.
const { postPreTransfer, voidPreTransfer } = proxyLocalActivities<PreTransferActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '10 seconds' },
});

function refuse(reason: PreTransferReason, detail: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(detail, reason);
}

/** True when the post was refused because the pre-transfer (or its hold) expired. */
function refusedAsExpired(error: unknown): boolean {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure && cause.type === ('PRE_TRANSFER_EXPIRED' satisfies PreTransferReason);
}

/**
 * PreTransferWorkflow (workflow id = pre_transfer_id; Area A, platform decisions §6). The hold on the partner float
 * already exists when it starts. It waits for a `confirm` Update or the `ttl_seconds` timer, whichever comes first:
 * confirm posts the hold to the receiver (local activity `postPreTransfer`, which moves money only for a confirm
 * request the api verified and recorded), expiry voids it (`voidPreTransfer`), each under its step's idempotency
 * key. The validator refuses a used or expired pre-transfer, so of many concurrent confirms exactly one is accepted.
 * A refused post fails the Update with the activity's own failure, passed through as it is (its type the reason:
 * DUPLICATE_PARTNER_TRANSACTION_ID, CONFIRMATION_NOT_RECORDED, PRE_TRANSFER_EXPIRED, PRE_TRANSFER_NOT_FOUND), which
 * the TransferService reads back (`domainErrorFromFailure`). Query `state` gives the state.
 */
export async function preTransferWorkflow(input: PreTransferWorkflowInput): Promise<PreTransferWorkflowResult> {
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
          idempotency_key: preTransferIdempotencyKey(workflowId, 'post'),
        });
        fundTransferId = result.fund_transfer_id;
        state = 'confirmed';
        // An operator finds the transfer by the partner's own id (PaymentPartnerTransactionId) once it is posted.
        upsertPartnerTransactionId(partner_transaction_id);
        return { fund_transfer_id: result.fund_transfer_id };
      } catch (error) {
        // Nothing moved (an Update nobody verified, a clash, an expiry): the partner may confirm again, unless expired.
        state = 'pending';
        if (refusedAsExpired(error)) timedOut = true;
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
