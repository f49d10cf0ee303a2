/**
 * DepositWorkflow activities (Area C; docs/area-c.md "Deposits and confirmations"), the deposit flow's only caller
 * of the ledger. The acquirer steps (OTP check, card authorization) go to the configured acquirer (`deps.acquirer`);
 * the money step (`completeDeposit`) writes the ledger
 * transaction, the deposit row and the preorder's paid flag in ONE database transaction with the ledger
 * idempotency key = the deposit reference, so a retried activity never moves money twice.
 *
 * Authority (docs/security.md "Temporal messages"): the workflow's Updates can be sent by anyone who reaches
 * Temporal, so these steps trust no message. The acquirer steps take the confirmation the api recorded for this
 * deposit (`deposit_confirmations`, once) and record the decision; the completion posts only on a confirmation of
 * this deposit decided `approved` or `password_valid`; a decline or a cancellation ends the deposit only on its
 * recorded decisions. Anything else is refused non-retryably (CONFIRMATION_NOT_RECORDED) and moves nothing.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Acquirer } from '../../acquirers';
import { assert, DomainError } from '../../errors';
import { findInstrumentByToken, revealCardNumber } from '../../instruments/store';
import type { PlatformDeps } from '../../platform-deps';
import { findPreorder, payPreorder } from '../../preorders';
import { startWebhookDeliveriesAfterCommit } from '../../webhooks';
import { reasonFailure } from '../../temporal/failures';
import { DEPOSIT_REASONS, depositIdempotencyKey, type DepositActivities, type DepositRejection } from './contract';
import { problem } from '../../field-problems';
import { openDepositPassword } from './sealing';
import {
  countConfirmations,
  creditedAccountId,
  decideConfirmation,
  findConfirmation,
  finishDeposit,
  getDeposit,
  moveCaptureState,
  takeConfirmation,
  TOKEN_TYPE,
  type ConfirmationMethod,
  type Deposit,
  type DepositConfirmationRecord,
} from './store';

async function requireDeposit(deps: Pick<PlatformDeps, 'database'>, reference: string): Promise<Deposit> {
  const deposit = await getDeposit(deps.database, reference);
  if (!deposit) throw reasonFailure(DEPOSIT_REASONS, 'DEPOSIT_NOT_FOUND', `unknown deposit ${reference}`);
  return deposit;
}

/** The account a completed deposit credits (store.ts `creditedAccountId`); the depositing user gone is a refusal. */
async function creditAccountId(deps: PlatformDeps, deposit: Deposit, preorder: { merchant_id: string; seller_code: string } | undefined): Promise<string> {
  const credited = await creditedAccountId(deps, deposit, preorder);
  if (!credited) throw reasonFailure(DEPOSIT_REASONS, 'DEPOSIT_USER_NOT_FOUND', `deposit ${deposit.reference} has no user`);
  return credited;
}

/** The step refused: no recorded confirmation authorizes it. Non-retryable: a retry would find none either. */
function notRecorded(reference: string, what: string): ApplicationFailure {
  return reasonFailure(DEPOSIT_REASONS, 'CONFIRMATION_NOT_RECORDED', `deposit ${reference}: ${what}`);
}

/** A deposit that is no longer pending refuses a confirmation step with its end state (the Updates' rejection). */
function requirePending(deposit: Deposit): void {
  if (deposit.state === 'pending') return;
  const type: DepositRejection = (
    { completed: 'DEPOSIT_COMPLETED', declined: 'DEPOSIT_DECLINED', failed: 'DEPOSIT_FAILED', cancelled: 'DEPOSIT_CANCELLED', expired: 'DEPOSIT_EXPIRED' } as const
  )[deposit.state];
  throw reasonFailure(DEPOSIT_REASONS, type, `deposit ${deposit.reference} is ${deposit.state}`);
}

/**
 * Who takes a confirmation: this activity execution (workflow id, run id, activity id), which a retry of the same
 * step shares and no other step does.
 */
function currentTaker(): string {
  const { workflowExecution, activityId } = Context.current().info;
  return `${workflowExecution?.workflowId}/${workflowExecution?.runId}/${activityId}`;
}

/** The confirmation method of a deposit: the card form for Visa/Master, a password otherwise. */
function methodOf(deposit: Deposit): ConfirmationMethod {
  return deposit.token_type === TOKEN_TYPE.cardForm ? 'card_form' : 'password';
}

/**
 * Takes the recorded confirmation `id` of this deposit (of the deposit's own method) for the current activity.
 * @throws ApplicationFailure CONFIRMATION_NOT_RECORDED when there is none to take
 */
async function takeRecorded(deps: Pick<PlatformDeps, 'database'>, deposit: Deposit, id: string): Promise<DepositConfirmationRecord> {
  const confirmation = await takeConfirmation(deps.database, { id, deposit_reference: deposit.reference, method: methodOf(deposit), taker: currentTaker() });
  if (!confirmation) throw notRecorded(deposit.reference, 'no recorded confirmation to take');
  return confirmation;
}

/** The configured acquirer; a deposit started before it was removed fails for good instead of retrying. */
function requireAcquirer(deps: PlatformDeps): Acquirer {
  if (!deps.acquirer) throw reasonFailure(DEPOSIT_REASONS, 'ACQUIRER_NOT_CONFIGURED', 'no card acquirer configured');
  return deps.acquirer;
}

/** The input and the answer of the deposit activity `K` (./contract.ts). */
type Input<K extends keyof DepositActivities> = Parameters<DepositActivities[K]>[0];
type Output<K extends keyof DepositActivities> = ReturnType<DepositActivities[K]>;

/**
 * The acquirer's OTP check for this deposit, on the password confirmation the api recorded (taken once, the
 * result recorded on it). The password arrives sealed (`sealDepositPassword`) and is opened only here; never
 * logged. A seal that does not open is a wrong password.
 * @throws ApplicationFailure CONFIRMATION_NOT_RECORDED (no such confirmation to take), the end state's rejection
 */
async function verifyDepositPassword(deps: PlatformDeps, input: Input<'verifyDepositPassword'>): Output<'verifyDepositPassword'> {
  const deposit = await requireDeposit(deps, input.reference);
  requirePending(deposit);
  const confirmation = await takeRecorded(deps, deposit, input.confirmation_id);
  // A retry of this step after the decision was recorded answers it again (the acquirer is not asked twice).
  if (confirmation.outcome) return { valid: confirmation.outcome === 'password_valid' };
  const password = openDepositPassword(deps.keys.dataKeys, input.reference, input.sealed_password);
  const acquirer = requireAcquirer(deps);
  const valid = password !== undefined && (await acquirer.verifyOtp({ reference: input.reference, password }));
  await decideConfirmation(deps.database, confirmation.id, { outcome: valid ? 'password_valid' : 'password_wrong' });
  return { valid };
}

/**
 * The acquirer's decision on the deposit's card (number revealed from the vault, never logged), on the card-form
 * confirmation the payer's submission recorded (taken once, the decision recorded on it).
 * @throws ApplicationFailure CONFIRMATION_NOT_RECORDED, INSTRUMENT_NOT_FOUND, the end state's rejection
 */
async function authorizeDepositCard(deps: PlatformDeps, input: Input<'authorizeDepositCard'>): Output<'authorizeDepositCard'> {
  const deposit = await requireDeposit(deps, input.reference);
  requirePending(deposit);
  const confirmation = await takeRecorded(deps, deposit, input.confirmation_id);
  const instrument = await findInstrumentByToken(deps.database, deposit.merchant_id, deposit.instrument_token);
  if (!instrument) {
    throw reasonFailure(DEPOSIT_REASONS, 'INSTRUMENT_NOT_FOUND', `deposit ${deposit.reference} lost its instrument`);
  }
  const authorization = await requireAcquirer(deps).authorize({
    idempotency_key: depositIdempotencyKey(deposit.reference),
    card_number: await revealCardNumber(deps, instrument),
    amount_units: deposit.amount_units,
    currency: deposit.currency,
  });
  await decideConfirmation(deps.database, confirmation.id, {
    outcome: authorization.approved ? 'approved' : 'declined',
    authorization_id: authorization.authorization_id ?? null,
  });
  return { approved: authorization.approved, authorization_id: authorization.authorization_id };
}

/**
 * Captures an approved authorization after a completion, else reverses it (idempotent at the acquirer). A capture
 * first moves the deposit's capture state to `capturing` under its row lock; it is skipped when a refund reversed the
 * authorization (`reversed`), and waits while a refund's reversal runs (`reversing`: retried until the reversal is
 * decided, since a refused reversal puts the state back to `authorized`); once captured, `captured`
 * (docs/refunds.md "Area C").
 * @throws ApplicationFailure DEPOSIT_REVERSAL_RUNNING (retryable) while a refund's reversal runs
 */
async function settleDepositCard(deps: PlatformDeps, input: Input<'settleDepositCard'>): Output<'settleDepositCard'> {
  const acquirer = requireAcquirer(deps);
  if (!input.capture) {
    await acquirer.reverse({ authorization_id: input.authorization_id });
    deps.logger.info({ reference: input.reference }, 'card authorization reversed: the deposit did not complete');
    return;
  }
  // A retry after the capture (`capturing` left by a crash, or `captured`) captures again: a no-op at the acquirer.
  if (!(await moveCaptureState(deps.database, input.reference, [null, 'authorized', 'capturing', 'captured'], 'capturing'))) {
    const { capture_state } = await requireDeposit(deps, input.reference);
    if (capture_state === 'reversing') throw ApplicationFailure.retryable(`deposit ${input.reference}: a refund's reversal is running`, 'DEPOSIT_REVERSAL_RUNNING');
    deps.logger.info({ reference: input.reference }, 'card capture skipped: a refund reversed the authorization');
    return;
  }
  await acquirer.capture({ authorization_id: input.authorization_id });
  await moveCaptureState(deps.database, input.reference, ['capturing'], 'captured');
}

/**
 * Completes a pending deposit in one database transaction: settlement −amount → the user's wallet +amount, or
 * with a preorder → its seller +(amount − commission), fee_revenue +commission and the preorder marked paid
 * (`payPreorder`, the same path as pay_by_token, under the preorder's row lock), only on the named confirmation
 * of this deposit decided `approved` (card form) or `password_valid` (password). A preorder paid meanwhile
 * fails the deposit and moves nothing. A repeat answers the deposit's end state.
 * @throws ApplicationFailure CONFIRMATION_NOT_RECORDED when no such decided confirmation exists
 */
async function completeDeposit(deps: PlatformDeps, input: Input<'completeDeposit'>): Output<'completeDeposit'> {
  const found = await requireDeposit(deps, input.reference);
  const answered = (deposit: Deposit) => ({ state: deposit.state === 'completed' ? ('completed' as const) : ('failed' as const) });
  if (found.state !== 'pending') return answered(found);
  try {
    return await postDeposit(deps, found, input.confirmation_id, answered);
  } catch (error) {
    // A business refusal (the seller or user is gone, a ledger rule) will not pass on a retry: the deposit fails
    // and nothing moves. Anything else (database down) is retried by the workflow's activity policy.
    if (!(error instanceof DomainError)) throw error;
    deps.logger.warn({ reference: found.reference, reason: error.reason }, 'deposit failed at completion');
    await finishDeposit(deps.database, found.reference, { state: 'failed', failure_message: problem('payment_failed') });
    return { state: 'failed' };
  }
}

/**
 * Ends a pending deposit without moving money: declined (the named confirmation of this deposit was declined),
 * cancelled (its recorded wrong passwords reached the deposit's limit) or expired. Repeats are no-ops.
 * @throws ApplicationFailure CONFIRMATION_NOT_RECORDED when a decline or cancellation has no recorded decisions
 */
async function closeDeposit(deps: PlatformDeps, input: Input<'closeDeposit'>): Output<'closeDeposit'> {
  const deposit = await requireDeposit(deps, input.reference);
  if (deposit.state !== 'pending') return;
  if (input.state === 'declined') {
    const confirmation = input.confirmation_id ? await findConfirmation(deps.database, input.confirmation_id, deposit.reference) : undefined;
    if (confirmation?.outcome !== 'declined') throw notRecorded(deposit.reference, 'no declined confirmation');
  }
  // Deposits created before their limit was recorded keep the workflow's count.
  if (input.state === 'cancelled' && deposit.max_password_attempts !== null) {
    if ((await countConfirmations(deps.database, deposit.reference, 'password_wrong')) < deposit.max_password_attempts) {
      throw notRecorded(deposit.reference, 'fewer recorded wrong passwords than its limit');
    }
  }
  const message = problem(input.state === 'declined' ? 'card_declined' : input.state === 'cancelled' ? 'payment_cancelled' : 'payment_expired');
  await finishDeposit(deps.database, input.reference, { state: input.state, failure_message: message });
}

/** The money step of completeDeposit: one database transaction (see there). */
async function postDeposit(deps: PlatformDeps, found: Deposit, confirmation_id: string, answered: (deposit: Deposit) => { state: 'completed' | 'failed' }) {
  // Resolve what needs other connections before the transaction; it then only locks, posts and marks. The preorder's
  // payment takes the settlement account's id; a plain deposit's posting names the account, which the ledger's
  // transfer resolves inside the transaction (one read, opening it only on the currency's first use).
  const preorder = found.pre_order_token ? await findPreorder(deps.database, found.pre_order_token) : undefined;
  const credit = await creditAccountId(deps, found, preorder);
  const settlement = found.pre_order_token ? await deps.ledger.platformAccount('settlement', found.currency) : undefined;
  let webhookId: string | null = null;
  const outcome = await deps.database.transaction(async (trx) => {
    const deposit = (await getDeposit(trx, found.reference, { forUpdate: true }))!;
    if (deposit.state !== 'pending') return answered(deposit);
    // The authority of this movement: the payer's confirmation of this deposit, recorded by the api and decided.
    const confirmation = await findConfirmation(trx, confirmation_id, deposit.reference);
    const decided = confirmation?.method === methodOf(deposit) && confirmation.outcome === (confirmation.method === 'card_form' ? 'approved' : 'password_valid');
    if (!decided) throw notRecorded(deposit.reference, 'no approved confirmation');
    const metadata = { merchant_id: deposit.merchant_id, reference: deposit.reference, user_id: deposit.user_id };
    let transactionId: string;
    if (deposit.pre_order_token) {
      assert(settlement, `deposit ${deposit.reference} has a preorder its settlement account was not resolved for`);
      const paid = await payPreorder(deps, trx, {
        preOrderToken: deposit.pre_order_token,
        sourceAccountId: settlement.id,
        sellerAccountId: credit,
        reference: deposit.reference,
        idempotencyKey: depositIdempotencyKey(deposit.reference),
        paidByUserId: deposit.user_id,
      });
      if (paid.status === 'already_paid') {
        await finishDeposit(trx, deposit.reference, { state: 'failed', failure_message: problem('preorder_paid') });
        return { state: 'failed' as const };
      }
      transactionId = paid.transactionId;
      webhookId = paid.webhookId;
    } else {
      const posted = await deps.ledger.transfer(
        {
          idempotency_key: depositIdempotencyKey(deposit.reference),
          description: `deposit ${deposit.reference}`,
          postings: [
            { platform: 'settlement', currency: deposit.currency, amount_units: -deposit.amount_units },
            { account_id: credit, amount_units: deposit.amount_units },
          ],
          metadata,
        },
        trx,
      );
      transactionId = posted.id;
    }
    // A card's authorization is captured after the completion (DEPOSIT_CAPTURE_DELAY_SECONDS): until then a refund
    // reverses it instead (docs/refunds.md "Area C").
    if (methodOf(deposit) === 'card_form') await moveCaptureState(trx, deposit.reference, [null], 'authorized');
    await finishDeposit(trx, deposit.reference, { state: 'completed', ledger_transaction_id: transactionId });
    return { state: 'completed' as const };
  });
  // The preorder's paid call-back was recorded with the payment; its delivery starts now that it committed. A deposit
  // without a preorder has no call-back.
  if (webhookId) await startWebhookDeliveriesAfterCommit(deps, [webhookId]);
  return outcome;
}

export function createDepositActivities(deps: PlatformDeps): DepositActivities {
  return {
    verifyDepositPassword: (input) => verifyDepositPassword(deps, input),
    authorizeDepositCard: (input) => authorizeDepositCard(deps, input),
    settleDepositCard: (input) => settleDepositCard(deps, input),
    completeDeposit: (input) => completeDeposit(deps, input),
    closeDeposit: (input) => closeDeposit(deps, input),
  };
}
