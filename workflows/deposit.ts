import { allHandlersFinished, ApplicationFailure, condition, patched, proxyActivities, proxyLocalActivities, setHandler, sleep } from '@temporalio/workflow';
import {
  confirmWithPasswordUpdate,
  DEPOSIT_CARD_SETTLEMENT,
  depositStateQuery,
  submitCardConfirmationUpdate,
  type DepositActivities,
  type DepositConfirmation,
  type DepositRejection,
  type DepositWorkflowInput,
  type DepositWorkflowState,
  type ConfirmationProof,
  type SealedPassword,
} from '../src/flows/deposit/contract';

// Acquirer steps. The card authorization is attempted once: a retried authorization could charge twice at a real
// acquirer; when it fails the deposit stays pending and the payer may submit again.
const { verifyDepositPassword } = proxyActivities<DepositActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 5 },
});
const { authorizeDepositCard } = proxyActivities<DepositActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});
// Capture or reversal of an approved authorization: idempotent at the acquirer, retried until it is done.
const { settleDepositCard } = proxyActivities<DepositActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
// Short database transactions (idempotent), recorded with the workflow task.
const { completeDeposit, closeDeposit } = proxyLocalActivities<DepositActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

/**
 * The confirmation an Update names. Updates recorded before confirmations were named carry none (the card form's had
 * no argument at all): they replay with an empty one.
 */
function confirmationIdOf(message: Partial<ConfirmationProof> | undefined): string {
  return message?.confirmation_id ?? '';
}

/**
 * DepositWorkflow (Area C; docs/area-c.md "Deposits and confirmations"), id = deposit reference. The
 * deposit row exists (pending) when it starts. It waits for the payer's confirmation or the lifetime timer:
 *
 *   password (confirmWithPassword Update, sealed): the acquirer checks the OTP; a wrong one counts, and the
 *     max_password_attempts-th wrong one cancels the deposit; a right one completes it.
 *   card form (submitCardConfirmation Update): the acquirer authorizes the card; declined ends the deposit,
 *     approved completes it.
 *   completion (activity completeDeposit): one database transaction writes the ledger transaction (idempotency
 *     key = reference), the deposit row and the preorder's paid flag; a preorder paid meanwhile fails the deposit.
 *   timer: an unconfirmed deposit expires (activity closeDeposit) at `expires_at` (else after ttl_seconds); a
 *     confirmation already running finishes first.
 *
 * An Update carries no authority: each names the confirmation the api recorded before sending it
 * (`confirmation_id`), and the activities re-read that record (docs/security.md "Temporal messages"), so an Update
 * sent straight to Temporal is refused by its first activity and moves nothing. Confirmations run one at a time;
 * the validators refuse one that arrives when the deposit is no longer pending (typed DepositRejection), so the
 * deposit completes exactly once.
 */
export async function depositWorkflow(input: DepositWorkflowInput): Promise<{ state: DepositWorkflowState }> {
  let state: DepositWorkflowState = 'pending';
  let timedOut = false;
  let busy = false;
  let wrongPasswords = 0;
  const attemptsLeft = () => Math.max(0, input.max_password_attempts - wrongPasswords);

  function refuseUnlessPending(expected: DepositWorkflowInput['confirmation']): void {
    if (state === 'completed') throw ApplicationFailure.nonRetryable('deposit already completed', 'DEPOSIT_COMPLETED' satisfies DepositRejection);
    if (state === 'declined') throw ApplicationFailure.nonRetryable('deposit declined', 'DEPOSIT_DECLINED' satisfies DepositRejection);
    if (state === 'failed') throw ApplicationFailure.nonRetryable('deposit failed', 'DEPOSIT_FAILED' satisfies DepositRejection);
    if (state === 'cancelled') throw ApplicationFailure.nonRetryable('deposit cancelled', 'DEPOSIT_CANCELLED' satisfies DepositRejection);
    if (state === 'expired' || timedOut) throw ApplicationFailure.nonRetryable('deposit expired', 'DEPOSIT_EXPIRED' satisfies DepositRejection);
    if (input.confirmation !== expected) {
      const type: DepositRejection = input.confirmation === 'card_form' ? 'DEPOSIT_CONFIRMED_BY_FORM' : 'DEPOSIT_CONFIRMED_BY_PASSWORD';
      throw ApplicationFailure.nonRetryable('deposit confirmed the other way', type);
    }
  }

  /** Runs one confirmation step at a time, re-checking the state once it is its turn. */
  async function exclusively(expected: DepositWorkflowInput['confirmation'], step: () => Promise<DepositConfirmation>) {
    // Several Updates can be delivered in one activation: each re-checks `busy` when it resumes, so the first
    // to resume takes the turn and the others wait again.
    while (busy) await condition(() => !busy);
    refuseUnlessPending(expected);
    busy = true;
    try {
      return await step();
    } finally {
      busy = false;
    }
  }

  async function complete(confirmation_id: string): Promise<DepositConfirmation> {
    const completion = await completeDeposit({ reference: input.reference, confirmation_id });
    state = completion.state;
    return { outcome: completion.state, attempts_left: attemptsLeft() };
  }

  setHandler(depositStateQuery, () => ({ state, wrong_passwords: wrongPasswords }));

  setHandler(
    confirmWithPasswordUpdate,
    (message: SealedPassword & ConfirmationProof) =>
      exclusively('password', async () => {
        const confirmation_id = confirmationIdOf(message);
        const { valid } = await verifyDepositPassword({ reference: input.reference, sealed_password: message.sealed_password, confirmation_id });
        if (valid) return complete(confirmation_id);
        wrongPasswords += 1;
        if (wrongPasswords < input.max_password_attempts) return { outcome: 'wrong_password', attempts_left: attemptsLeft() };
        await closeDeposit({ reference: input.reference, state: 'cancelled', confirmation_id });
        state = 'cancelled';
        return { outcome: 'cancelled', attempts_left: 0 };
      }),
    { validator: (_message: SealedPassword & ConfirmationProof) => refuseUnlessPending('password') },
  );

  setHandler(
    submitCardConfirmationUpdate,
    (proof: ConfirmationProof) =>
      exclusively('card_form', async () => {
        const confirmation_id = confirmationIdOf(proof);
        const { approved, authorization_id } = await authorizeDepositCard({ reference: input.reference, confirmation_id });
        if (approved) {
          const confirmation = await complete(confirmation_id);
          // Histories recorded before the patch replay without the settlement step.
          if (authorization_id && patched(DEPOSIT_CARD_SETTLEMENT)) {
            await settleDepositCard({ reference: input.reference, authorization_id, capture: confirmation.outcome === 'completed' });
          }
          return confirmation;
        }
        await closeDeposit({ reference: input.reference, state: 'declined', confirmation_id });
        state = 'declined';
        return { outcome: 'declined', attempts_left: attemptsLeft() };
      }),
    { validator: (_proof: ConfirmationProof) => refuseUnlessPending('card_form') },
  );

  // Workflow time (Date.now() is deterministic here); at least 1 ms for a run started after the deadline.
  const lifetime_ms = input.expires_at ? Math.max(1, Date.parse(input.expires_at) - Date.now()) : input.ttl_seconds * 1000;
  void sleep(lifetime_ms).then(() => {
    timedOut = true;
  });
  await condition(() => state !== 'pending' || (timedOut && !busy));
  if (state === 'pending') {
    state = 'expired';
    await closeDeposit({ reference: input.reference, state: 'expired' });
  }
  await condition(allHandlersFinished);
  return { state };
}
