/**
 * Confirming a deposit: the merchant's confirm_payments (the OTP) and the payer's submission of the Visa/Master
 * confirmation form. A confirmation is recorded (`deposit_confirmations`: who, when, from where) before its Update is
 * sent, and the workflow's activities move money only on that record (docs/security.md "Temporal messages"). The
 * Update starts the workflow when its start after creation never got through (Update-with-Start).
 */
import type { HandlerContext } from '@connectrpc/connect';
import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, WorkflowNotFoundError } from '@temporalio/client';
import { reasonError, type DomainError } from '../../errors';
import { problem } from '../../field-problems';
import type { ConfirmPaymentRequest } from '../../gen/payments/deposit/v1/deposit_pb';
import { merchantUser } from '../../merchant-users';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
import { withRequestDeadline } from '../../temporal/deadline';
import { failureType } from '../../temporal/failures';
import { depositWorkflow } from '../../../workflows/deposit';
import { confirmWithPasswordUpdate, DEPOSIT_REASONS, submitCardConfirmationUpdate, type DepositConfirmation, type DepositRejection } from './contract';
import { sealDepositPassword } from './sealing';
import { depositWorkflowInput, fail } from './start';
import { findDepositByToken, lifetimeOver, recordConfirmation, TOKEN_TYPE, type Deposit } from './store';

/** The confirm_payments answer for a deposit that is no longer pending (or whose lifetime is over). */
function notPending(deposit: Deposit): DomainError {
  switch (deposit.state) {
    case 'completed':
      return fail('token', 'payment_confirmed', 'DEPOSIT_COMPLETED');
    case 'cancelled':
      return fail('token', 'payment_cancelled', 'DEPOSIT_CANCELLED');
    case 'failed':
      return fail('token', 'payment_failed', 'DEPOSIT_FAILED');
    case 'declined':
      return fail('token', 'card_declined', 'DEPOSIT_DECLINED');
    default:
      return fail('token', 'payment_expired', 'DEPOSIT_EXPIRED');
  }
}

const REJECTION_ERRORS: Record<DepositRejection, () => DomainError> = {
  DEPOSIT_COMPLETED: () => fail('token', 'payment_confirmed', 'DEPOSIT_COMPLETED'),
  DEPOSIT_DECLINED: () => fail('token', 'card_declined', 'DEPOSIT_DECLINED'),
  DEPOSIT_FAILED: () => fail('token', 'payment_failed', 'DEPOSIT_FAILED'),
  DEPOSIT_CANCELLED: () => fail('token', 'payment_cancelled', 'DEPOSIT_CANCELLED'),
  DEPOSIT_EXPIRED: () => fail('token', 'payment_expired', 'DEPOSIT_EXPIRED'),
  DEPOSIT_CONFIRMED_BY_FORM: () => fail('token', 'confirm_by_form', 'DEPOSIT_CONFIRMED_BY_FORM'),
  DEPOSIT_CONFIRMED_BY_PASSWORD: () => fail('token', 'not_found', 'DEPOSIT_NOT_FOUND'),
};

/** The typed rejection of a DepositWorkflow Update, if that is what `error` is (one of REJECTION_ERRORS' keys). */
function rejectionOf(error: unknown): DepositRejection | undefined {
  const type = failureType(error);
  return type && Object.hasOwn(REJECTION_ERRORS, type) ? (type as DepositRejection) : undefined;
}

/**
 * Sends a recorded confirmation's Update to the deposit's workflow within the request deadline, starting the
 * workflow when its start after creation never got through (Update-with-Start; a run that already ended is not
 * started again).
 * @throws what the Update throws (its typed DepositRejection, an activity's failure), DomainError DEADLINE_EXCEEDED
 */
function confirmDeposit(
  deps: PlatformDeps,
  deposit: Deposit,
  send: (operation: WithStartWorkflowOperation<typeof depositWorkflow>) => Promise<DepositConfirmation>,
) {
  const startWorkflowOperation = new WithStartWorkflowOperation(depositWorkflow, {
    taskQueue: deps.temporal.taskQueue,
    workflowId: deposit.reference,
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    args: [depositWorkflowInput(deps, deposit)],
  });
  return withRequestDeadline(deps, () => send(startWorkflowOperation));
}

/** The confirm_payments answer to the workflow's outcome of a password confirmation. */
function passwordOutcome(confirmation: DepositConfirmation): Record<string, never> {
  switch (confirmation.outcome) {
    case 'completed':
      return {};
    case 'wrong_password':
      throw fail('password', 'password_incorrect', 'PASSWORD_INCORRECT');
    case 'cancelled':
      throw reasonError(DEPOSIT_REASONS, 'DEPOSIT_CANCELLED', 'deposit cancelled', {
        password: [problem('password_incorrect')],
        token: [problem('payment_cancelled')],
      });
    default:
      // failed: the preorder was paid by someone else meanwhile; nothing moved.
      throw reasonError(DEPOSIT_REASONS, 'PREORDER_ALREADY_PAID', 'preorder already paid', {
        pre_order_token: [problem('preorder_paid')],
      });
  }
}

/**
 * confirm_payments for the merchant `merchantId` (verified by the caller): the merchant user's pending OTP deposit,
 * its confirmation recorded, then the Update that names it.
 * @throws DomainError USER_NOT_FOUND, DEPOSIT_NOT_FOUND, DEPOSIT_CONFIRMED_BY_FORM, the deposit's end state,
 *   PASSWORD_INCORRECT, DEPOSIT_CANCELLED, PREORDER_ALREADY_PAID, DEADLINE_EXCEEDED
 */
export async function confirmPayment(
  deps: PlatformDeps,
  merchantId: string,
  request: Pick<ConfirmPaymentRequest, 'userId' | 'token' | 'password'>,
  context: HandlerContext,
): Promise<Record<string, never>> {
  const { database } = deps;
  const user = await merchantUser(database, merchantId, request.userId, 'user_id');
  const deposit = await findDepositByToken(database, request.token);
  if (!deposit || deposit.merchant_id !== merchantId || deposit.user_id !== user.id) {
    throw fail('token', 'not_found', 'DEPOSIT_NOT_FOUND');
  }
  if (deposit.token_type === TOKEN_TYPE.cardForm) throw REJECTION_ERRORS.DEPOSIT_CONFIRMED_BY_FORM();
  if (deposit.state !== 'pending' || lifetimeOver(deposit)) throw notPending(deposit);
  // The merchant's verified request is the authority of this confirmation: recorded before the Update, which only
  // names it.
  const confirmation_id = await recordConfirmation(database, {
    deposit_reference: deposit.reference,
    method: 'password',
    actor: 'merchant',
    merchant_id: merchantId,
    user_id: user.id,
    client_address: clientAddressOf(context),
  });
  let confirmation: DepositConfirmation;
  try {
    confirmation = await confirmDeposit(deps, deposit, (startWorkflowOperation) =>
      deps.temporal.client.workflow.executeUpdateWithStart(confirmWithPasswordUpdate, {
        args: [{ confirmation_id, sealed_password: sealDepositPassword(deps.keys.dataKeys, deposit.reference, request.password) }],
        startWorkflowOperation,
      }),
    );
  } catch (error) {
    const rejection = rejectionOf(error);
    if (rejection) throw REJECTION_ERRORS[rejection]();
    if ((error as { name?: string }).name === 'WorkflowUpdateRPCTimeoutOrCancelledError') throw error;
    // The workflow may have closed meanwhile (expired, or completed by another call): answer from the row.
    const now = await findDepositByToken(database, request.token);
    if (now && (now.state !== 'pending' || lifetimeOver(now))) throw notPending(now);
    throw error;
  }
  return passwordOutcome(confirmation);
}

/**
 * The payer's submission of a pending Visa/Master deposit's confirmation form, proven by its page token
 * `depositToken` (checked by the caller): recorded (from which address, when) before the Update that names it. A refusal because the deposit
 * ended meanwhile, or a closed workflow, is no error: the row tells the outcome.
 */
export async function submitCardConfirmation(deps: PlatformDeps, depositToken: string, deposit: Deposit, context: HandlerContext): Promise<void> {
  const confirmation_id = await recordConfirmation(deps.database, {
    deposit_reference: deposit.reference,
    method: 'card_form',
    actor: 'payer',
    client_address: clientAddressOf(context),
  });
  try {
    await confirmDeposit(deps, deposit, (startWorkflowOperation) =>
      deps.temporal.client.workflow.executeUpdateWithStart(submitCardConfirmationUpdate, { args: [{ confirmation_id }], startWorkflowOperation }),
    );
  } catch (error) {
    if (!rejectionOf(error) && !(error instanceof WorkflowNotFoundError) && !(error instanceof WorkflowExecutionAlreadyStartedError)) {
      const now = await findDepositByToken(deps.database, depositToken);
      if (!now || (now.state === 'pending' && !lifetimeOver(now))) throw error;
    }
  }
}
