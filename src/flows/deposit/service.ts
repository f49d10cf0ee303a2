/**
 * DepositService (Area C deposits; docs/area-c.md "Deposits and confirmations"; platform decisions §7): the
 * merchant's calls, deposit_by_local_card, deposit_by_bank_account, deposit_by_visa_master (a deposit and its
 * workflow: ./start.ts) and confirm_payments (below), and the payer's pages, the Visa/Master confirmation form and the
 * hosted preorder page (./pages.ts); the SQL is in ./store.ts. Merchant calls are verified with `requireMerchant` like
 * WalletService, and every money-moving call answers a repeat with its first answer (src/idempotency).
 *
 * confirm_payments: a confirmation is recorded (`deposit_confirmations`: who, when, from where) before its Update is
 * sent, and the workflow's activities move money only on that record (docs/security.md "Temporal messages").
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { reasonError, type DomainError } from '../../errors';
import { problem } from '../../field-problems';
import {
  ConfirmPaymentResponseSchema,
  DepositByBankAccountResponseSchema,
  DepositByLocalCardResponseSchema,
  DepositByVisaMasterResponseSchema,
  type ConfirmPaymentRequest,
  type DepositService,
} from '../../gen/payments/deposit/v1/deposit_pb';
import { answerIdempotently, movementRequest } from '../../idempotency';
import { merchantUser } from '../../merchant-users';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
import { confirmWithPasswordUpdate, DEPOSIT_REASONS, type DepositConfirmation } from './contract';
import { payPreOrderByCard, preorderPage, submitVisaMasterConfirmation, visaMasterConfirmationPage } from './pages';
import { sealDepositPassword } from './sealing';
import { confirmDeposit, fail, REJECTION_ERRORS, rejectionOf, startDeposit, startRequest, type StartInput } from './start';
import { findDepositByToken, lifetimeOver, recordConfirmation, TOKEN_TYPE, type Deposit } from './store';

// ---- confirm_payments ----

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
async function confirmPayment(
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

// ---- The service ----

export function createDepositService(deps: PlatformDeps): ServiceImpl<typeof DepositService> {
  // The merchant each request acts for is the one its ActionAuth proves (src/merchant-auth), never an asserted id.
  const { requireMerchant } = deps.merchantAuth;

  return {
    async depositByLocalCard(request, context) {
      const act = await requireMerchant(request, context);
      const input: StartInput = { ...request, merchantId: act.merchantId, kind: 'local_card', instrumentToken: request.token };
      return answerIdempotently(deps.idempotency, startRequest(input, act, request.idempotencyKey), DepositByLocalCardResponseSchema, () => startDeposit(deps, input));
    },

    async depositByBankAccount(request, context) {
      const act = await requireMerchant(request, context);
      const input: StartInput = { ...request, merchantId: act.merchantId, kind: 'bank_account', instrumentToken: request.token };
      return answerIdempotently(deps.idempotency, startRequest(input, act, request.idempotencyKey), DepositByBankAccountResponseSchema, () => startDeposit(deps, input));
    },

    async depositByVisaMaster(request, context) {
      const act = await requireMerchant(request, context);
      const input: StartInput = { ...request, merchantId: act.merchantId, kind: 'visa_master', instrumentToken: request.token };
      return answerIdempotently(deps.idempotency, startRequest(input, act, request.idempotencyKey), DepositByVisaMasterResponseSchema, () => startDeposit(deps, input));
    },

    /** A repeat of the same signed body answers its first answer (the OTP is then not tried again). */
    async confirmPayment(request, context) {
      const act = await requireMerchant(request, context);
      return answerIdempotently(
        deps.idempotency,
        // The deposit token is stored only as its hash, so this fingerprint tells nothing of the OTP it holds.
        movementRequest(act, request.idempotencyKey, 'area-c.confirm_payments', [request.userId, request.token, request.password]),
        ConfirmPaymentResponseSchema,
        () => confirmPayment(deps, act.merchantId, request, context),
      );
    },

    getVisaMasterConfirmation: (request) => visaMasterConfirmationPage(deps, request.depositToken),
    submitVisaMasterConfirmation: (request, context) => submitVisaMasterConfirmation(deps, request.depositToken, context),
    getPreOrderPage: (request) => preorderPage(deps, request.preOrderToken),
    payPreOrderByCard: (request, context) => payPreOrderByCard(deps, request, context),
  };
}
