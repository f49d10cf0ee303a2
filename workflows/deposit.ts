import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  defineQuery,
  defineUpdate,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { Activities } from '../src/activities';

// Acquirer steps. The card authorization is attempted once: a retried authorization could charge twice at a real
// acquirer; when it fails the deposit stays pending and the payer may submit again.
const { verifyDepositPassword } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 5 },
});
const { authorizeDepositCard } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});
// Short database transactions (idempotent), recorded with the workflow task.
const { completeDeposit, closeDeposit } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});

/** pending → completed | declined | failed | cancelled | expired; the same names as the deposits row. */
export type DepositWorkflowState = 'pending' | 'completed' | 'declined' | 'failed' | 'cancelled' | 'expired';

export interface DepositWorkflowInput {
  /** The deposit reference (DEP…), also this workflow's id. */
  reference: string;
  /** How the payer confirms: an OTP / soft token (local card, bank account) or the card confirmation form. */
  confirmation: 'password' | 'card_form';
  /** Lifetime in seconds from creation (DEPOSIT_TTL_SECONDS at creation). */
  ttl_seconds: number;
  /** Wrong passwords accepted before the deposit is cancelled (DEPOSIT_MAX_OTP_ATTEMPTS at creation). */
  max_password_attempts: number;
}

/** What a confirmation did. `attempts_left` counts the wrong passwords still allowed. */
export interface DepositConfirmation {
  outcome: 'completed' | 'wrong_password' | 'cancelled' | 'declined' | 'failed';
  attempts_left: number;
}

/**
 * Why a confirmation was refused before anything ran (ApplicationFailure.type): the deposit is already in an end
 * state, its lifetime ran out, or it is confirmed the other way.
 */
export type DepositRejection =
  | 'DEPOSIT_COMPLETED'
  | 'DEPOSIT_DECLINED'
  | 'DEPOSIT_FAILED'
  | 'DEPOSIT_CANCELLED'
  | 'DEPOSIT_EXPIRED'
  | 'DEPOSIT_CONFIRMED_BY_FORM'
  | 'DEPOSIT_CONFIRMED_BY_PASSWORD';

/**
 * The payer's password travels sealed (AES-256-GCM under the platform data key, the deposit reference as associated
 * data): workflow history keeps every Update and activity argument, and a password must never be readable there.
 */
export interface SealedPassword {
  sealed_password: string;
}

export const confirmWithPasswordUpdate = defineUpdate<DepositConfirmation, [SealedPassword]>('confirmWithPassword');
export const submitCardConfirmationUpdate = defineUpdate<DepositConfirmation, []>('submitCardConfirmation');
export const depositStateQuery = defineQuery<{ state: DepositWorkflowState; wrong_passwords: number }>('state');

/**
 * DepositWorkflow (issue 7, Area C; docs/area-c.md "Deposits and confirmations"), id = deposit reference. The
 * deposit row exists (pending) when it starts. It waits for the payer's confirmation or the lifetime timer:
 *
 *   password (confirmWithPassword Update, sealed): the acquirer checks the OTP; a wrong one counts, and the
 *     max_password_attempts-th wrong one cancels the deposit; a right one completes it.
 *   card form (submitCardConfirmation Update): the acquirer authorizes the card; declined ends the deposit,
 *     approved completes it.
 *   completion (activity completeDeposit): one database transaction writes the ledger transaction (idempotency
 *     key = reference), the deposit row and the preorder's paid flag; a preorder paid meanwhile fails the deposit.
 *   timer: an unconfirmed deposit expires (activity closeDeposit); a confirmation already running finishes first.
 *
 * Confirmations run one at a time; the validators refuse one that arrives when the deposit is no longer pending
 * (typed DepositRejection), so the deposit completes exactly once.
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

  async function complete(): Promise<DepositConfirmation> {
    const completion = await completeDeposit({ reference: input.reference });
    state = completion.state;
    return { outcome: completion.state, attempts_left: attemptsLeft() };
  }

  setHandler(depositStateQuery, () => ({ state, wrong_passwords: wrongPasswords }));

  setHandler(
    confirmWithPasswordUpdate,
    ({ sealed_password }) =>
      exclusively('password', async () => {
        const { valid } = await verifyDepositPassword({ reference: input.reference, sealed_password });
        if (valid) return complete();
        wrongPasswords += 1;
        if (wrongPasswords < input.max_password_attempts) return { outcome: 'wrong_password', attempts_left: attemptsLeft() };
        await closeDeposit({ reference: input.reference, state: 'cancelled' });
        state = 'cancelled';
        return { outcome: 'cancelled', attempts_left: 0 };
      }),
    { validator: (_input: SealedPassword) => refuseUnlessPending('password') },
  );

  setHandler(
    submitCardConfirmationUpdate,
    () =>
      exclusively('card_form', async () => {
        const { approved } = await authorizeDepositCard({ reference: input.reference });
        if (approved) return complete();
        await closeDeposit({ reference: input.reference, state: 'declined' });
        state = 'declined';
        return { outcome: 'declined', attempts_left: attemptsLeft() };
      }),
    { validator: () => refuseUnlessPending('card_form') },
  );

  void sleep(input.ttl_seconds * 1000).then(() => {
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
