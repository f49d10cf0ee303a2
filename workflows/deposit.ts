import { allHandlersFinished, ApplicationFailure, condition, proxyActivities, proxyLocalActivities, setHandler, sleep } from '@temporalio/workflow';
import {
  confirmWithPasswordUpdate,
  depositStateQuery,
  submitCardConfirmationUpdate,
  type ConfirmationProof,
  type DepositActivities,
  type DepositConfirmation,
  type DepositReason,
  type DepositRejection,
  type DepositWorkflowInput,
  type DepositWorkflowState,
  type SealedPassword,
} from '../src/flows/deposit/contract';
import { upsertPaymentStatus } from './search-attributes';

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

type Method = DepositWorkflowInput['confirmation'];

/** One run's state. `busy`: a confirmation step is running (they run one at a time). */
interface DepositRun {
  readonly input: DepositWorkflowInput;
  state: DepositWorkflowState;
  timedOut: boolean;
  busy: boolean;
  wrongPasswords: number;
  /** An approved authorization to capture once the capture delay has passed (capture_delay_seconds > 0). */
  captureLater?: string;
}

/** The refusal of a confirmation that arrives once the deposit ended. */
const ENDED: Record<Exclude<DepositWorkflowState, 'pending'>, DepositRejection> = {
  completed: 'DEPOSIT_COMPLETED',
  declined: 'DEPOSIT_DECLINED',
  failed: 'DEPOSIT_FAILED',
  cancelled: 'DEPOSIT_CANCELLED',
  expired: 'DEPOSIT_EXPIRED',
};

/** The refusal of a confirmation of the other method, by the method the deposit takes. */
const OTHER_METHOD: Record<Method, DepositRejection> = {
  card_form: 'DEPOSIT_CONFIRMED_BY_FORM',
  password: 'DEPOSIT_CONFIRMED_BY_PASSWORD',
};

function attemptsLeft(run: DepositRun): number {
  return Math.max(0, run.input.max_password_attempts - run.wrongPasswords);
}

/** Refuses (typed DepositRejection) a confirmation unless the deposit is pending and confirmed by `method`. */
function refuseUnlessPending(run: DepositRun, method: Method): void {
  if (run.state !== 'pending') throw ApplicationFailure.nonRetryable(`deposit ${run.state}`, ENDED[run.state]);
  if (run.timedOut) throw ApplicationFailure.nonRetryable('deposit expired', ENDED.expired);
  if (run.input.confirmation !== method) throw ApplicationFailure.nonRetryable('deposit confirmed the other way', OTHER_METHOD[run.input.confirmation]);
}

/**
 * Refuses an Update whose argument is not what the platform sends (anyone who reaches Temporal can send any): it
 * names no confirmation, so it could only be refused by the first activity, and a missing argument would fail the
 * workflow task on every retry instead.
 */
function refuseMalformed(message: Partial<ConfirmationProof & SealedPassword> | undefined, method: Method): void {
  const named = typeof message?.confirmation_id === 'string' && message.confirmation_id !== '';
  if (!named || (method === 'password' && typeof message.sealed_password !== 'string')) {
    throw ApplicationFailure.nonRetryable('the Update names no recorded confirmation', 'CONFIRMATION_NOT_RECORDED' satisfies DepositReason);
  }
}

/** The validator of each confirmation Update: nothing runs for a refused one. */
function validatorOf(run: DepositRun, method: Method) {
  return (message: Partial<ConfirmationProof & SealedPassword> | undefined) => {
    refuseMalformed(message, method);
    refuseUnlessPending(run, method);
  };
}

/** Runs one confirmation step at a time, re-checking the state once it is its turn. */
async function exclusively(run: DepositRun, method: Method, step: () => Promise<DepositConfirmation>): Promise<DepositConfirmation> {
  // Several Updates can be delivered in one activation: each re-checks `busy` when it resumes, so the first to
  // resume takes the turn and the others wait again.
  while (run.busy) await condition(() => !run.busy);
  refuseUnlessPending(run, method);
  run.busy = true;
  try {
    return await step();
  } finally {
    run.busy = false;
  }
}

async function complete(run: DepositRun, confirmation_id: string): Promise<DepositConfirmation> {
  const completion = await completeDeposit({ reference: run.input.reference, confirmation_id });
  run.state = completion.state;
  return { outcome: completion.state, attempts_left: attemptsLeft(run) };
}

/** Ends the pending deposit without money on the named confirmation: declined, or cancelled (wrong passwords). */
async function close(run: DepositRun, state: 'declined' | 'cancelled', confirmation_id: string): Promise<void> {
  await closeDeposit({ reference: run.input.reference, state, confirmation_id });
  run.state = state;
}

/** The OTP step: a right password completes; the max_password_attempts-th wrong one cancels. */
async function confirmWithPassword(run: DepositRun, { confirmation_id, sealed_password }: SealedPassword & ConfirmationProof): Promise<DepositConfirmation> {
  const { valid } = await verifyDepositPassword({ reference: run.input.reference, sealed_password, confirmation_id });
  if (valid) return complete(run, confirmation_id);
  run.wrongPasswords += 1;
  if (run.wrongPasswords < run.input.max_password_attempts) return { outcome: 'wrong_password', attempts_left: attemptsLeft(run) };
  await close(run, 'cancelled', confirmation_id);
  return { outcome: 'cancelled', attempts_left: 0 };
}

/**
 * The card form step: an approved card completes the deposit, then its authorization is captured (reversed when
 * the completion failed); a declined one ends it.
 */
async function submitCardConfirmation(run: DepositRun, { confirmation_id }: ConfirmationProof): Promise<DepositConfirmation> {
  const { approved, authorization_id } = await authorizeDepositCard({ reference: run.input.reference, confirmation_id });
  if (!approved) {
    await close(run, 'declined', confirmation_id);
    return { outcome: 'declined', attempts_left: attemptsLeft(run) };
  }
  const confirmation = await complete(run, confirmation_id);
  const capture = confirmation.outcome === 'completed';
  // With a capture delay the payer is answered now and the run captures after it (a refund meanwhile reverses).
  if (authorization_id && capture && (run.input.capture_delay_seconds ?? 0) > 0) run.captureLater = authorization_id;
  else if (authorization_id) await settleDepositCard({ reference: run.input.reference, authorization_id, capture });
  return confirmation;
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
 *   capture: an approved card's authorization is captured right after the completion, or with
 *     `capture_delay_seconds` once they passed (the activity skips it when a refund reversed it meanwhile).
 *
 * An Update carries no authority: each names the confirmation the api recorded before sending it
 * (`confirmation_id`), and the activities re-read that record (docs/security.md "Temporal messages"), so an Update
 * sent straight to Temporal is refused by its first activity and moves nothing. Confirmations run one at a time;
 * the validators refuse one that arrives when the deposit is no longer pending (typed DepositRejection) or that names
 * no confirmation (CONFIRMATION_NOT_RECORDED), so the deposit completes exactly once. Query `state`.
 *
 * Search attributes: PaymentKind `deposit` and PaymentStatus, the state (`pending`, then its end state).
 */
export async function depositWorkflow(input: DepositWorkflowInput): Promise<{ state: DepositWorkflowState }> {
  const run: DepositRun = { input, state: 'pending', timedOut: false, busy: false, wrongPasswords: 0 };
  upsertPaymentStatus('deposit', run.state);
  setHandler(depositStateQuery, () => ({ state: run.state, wrong_passwords: run.wrongPasswords }));
  setHandler(confirmWithPasswordUpdate, (message) => exclusively(run, 'password', () => confirmWithPassword(run, message)), {
    validator: validatorOf(run, 'password'),
  });
  setHandler(submitCardConfirmationUpdate, (proof) => exclusively(run, 'card_form', () => submitCardConfirmation(run, proof)), {
    validator: validatorOf(run, 'card_form'),
  });

  // Workflow time (Date.now() is deterministic here); at least 1 ms for a run started after the deadline.
  const lifetime_ms = input.expires_at ? Math.max(1, Date.parse(input.expires_at) - Date.now()) : input.ttl_seconds * 1000;
  void sleep(lifetime_ms).then(() => {
    run.timedOut = true;
  });
  await condition(() => run.state !== 'pending' || (run.timedOut && !run.busy));
  if (run.state === 'pending') {
    run.state = 'expired';
    await closeDeposit({ reference: input.reference, state: 'expired' });
  }
  // The deposit's one state change: pending to its end state, recorded once the step that ended it is done.
  upsertPaymentStatus('deposit', run.state);
  await condition(allHandlersFinished);
  if (run.captureLater) {
    // The capture window (DEPOSIT_CAPTURE_DELAY_SECONDS): the activity skips a deposit a refund reversed meanwhile.
    await sleep((run.input.capture_delay_seconds ?? 0) * 1000);
    await settleDepositCard({ reference: input.reference, authorization_id: run.captureLater, capture: true });
  }
  return { state: run.state };
}
