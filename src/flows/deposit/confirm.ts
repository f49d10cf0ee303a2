/**
 * confirm_payments (Area C; docs/area-c.md "Deposits and confirmations"): the merchant's OTP or password confirmation
 * of a pending deposit. The confirmation is recorded (`deposit_confirmations`: who, when, from where) before its
 * Update is sent, and the workflow's activities move money only on that record (docs/security.md "Temporal
 * messages"). The service (./service.ts) verifies the merchant and answers a repeat with its first answer.
 */
import type { HandlerContext } from '@connectrpc/connect';
import type { RequestJournal } from '../../events';
import { reasonError, type DomainError } from '../../errors';
import { problem } from '../../field-problems';
import type { ConfirmPaymentRequest } from '../../gen/payments/deposit/v1/deposit_pb';
import { merchantUser } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
import { confirmWithPasswordUpdate, DEPOSIT_REASONS, type DepositConfirmation } from './contract';
import { sealDepositPassword } from './sealing';
import { confirmDeposit, fail, REJECTION_ERRORS, rejectionOf } from './start';
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
  journal?: RequestJournal,
): Promise<Record<string, never>> {
  const { database } = deps;
  const user = await merchantUser(database, merchantId, request.userId, 'user_id');
  const deposit = await findDepositByToken(database, request.token);
  if (!deposit || deposit.merchant_id !== merchantId || deposit.user_id !== user.id) {
    throw fail('token', 'not_found', 'DEPOSIT_NOT_FOUND');
  }
  // The request journal files this confirmation under the deposit, refused or not, from here on.
  if (journal) journal.reference = deposit.reference;
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

