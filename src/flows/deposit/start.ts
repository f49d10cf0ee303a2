/**
 * A deposit and its workflow. Starting one (deposit_by_local_card, deposit_by_bank_account, deposit_by_visa_master,
 * and the hosted card form's deposit): the request's checks, then the pending `deposits` row, committed on its own,
 * then its DepositWorkflow (id = reference) started within the request's Temporal deadline (no transaction stays
 * open across it). Confirming one (the merchant's confirm_payments in ./service.ts, the payer's card form in
 * ./pages.ts) sends its Update with the workflow's start (Update-with-Start, `confirmDeposit`), so a start that did
 * not get through is made by the first confirmation; a deposit nobody confirms is expired by reconciliation.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import { fieldNotDecryptable, tryDecryptField } from '../../crypto/field-decryption';
import { DomainError, invalidFields, reasonError, type FieldViolations } from '../../errors';
import { problem, type FieldProblem } from '../../field-problems';
import type { CardConfirmationSchema } from '../../gen/payments/deposit/v1/deposit_pb';
import { isExpired, requireInstrument, validSecurityCode, type Instrument, type InstrumentKind } from '../../instruments/store';
import { movementRequest } from '../../idempotency';
import type { MerchantAct } from '../../merchant-auth';
import { isAreaCCurrency, type Currency } from '../../money';
import { getMerchant, merchantUser } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { findPreorder, type Preorder } from '../../preorders';
import { startWorkflow } from '../../temporal/client';
import { withRequestDeadline } from '../../temporal/deadline';
import { paymentSearchAttributes } from '../../temporal/search-attributes';
import { failureType } from '../../temporal/failures';
import { depositWorkflow } from '../../../workflows/deposit';
import { DEPOSIT_REASONS, type DepositConfirmation, type DepositReason, type DepositRejection, type DepositWorkflowInput } from './contract';
import { insertDeposit, newDepositIdentity, TOKEN_TYPE, type Deposit } from './store';

/** A deposit refusal of `reason` on one field, its problem `code`. */
export function fail(field: string, code: FieldProblem, reason: DepositReason): DomainError<DepositReason> {
  return reasonError(DEPOSIT_REASONS, reason, undefined, { [field]: [problem(code)] });
}

/** A merchant's deposit request, whichever instrument kind. */
export interface StartInput {
  merchantId: string;
  kind: InstrumentKind;
  instrumentToken: string;
  /** Empty when the request names no user. */
  userId: string;
  preOrderToken: string;
  amountUnits: bigint;
  currency: string;
  /** deposit_by_visa_master only: the encrypted CVV. */
  securityCode?: string;
}

/**
 * The idempotent request of a deposit start: a repeat of the signed body, or a retry with the same request_id or
 * Idempotency-Key and the same fields, answers the first deposit (its token and confirmation page) instead of
 * starting a second one. The encrypted CVV is not one of the compared fields: it is encrypted anew on every retry
 * and discarded after its check.
 */
export function startRequest(input: StartInput, act: MerchantAct, idempotencyKey: string) {
  return movementRequest(act, idempotencyKey, `area-c.deposit_by_${input.kind}`, [input.instrumentToken, input.userId, input.preOrderToken, input.amountUnits, input.currency]);
}

/** The merchant's unpaid preorder matching the deposit's amount and currency; violations are collected. */
async function checkPreorder(deps: PlatformDeps, input: StartInput, problems: FieldViolations): Promise<Preorder | undefined> {
  if (!input.preOrderToken) return undefined;
  const preorder = await findPreorder(deps.database, input.preOrderToken);
  if (!preorder || preorder.merchant_id !== input.merchantId) {
    problems.pre_order_token = [problem('not_found')];
    return undefined;
  }
  if (preorder.status !== 'pending') problems.pre_order_token = [problem('preorder_paid')];
  if (preorder.currency !== input.currency) problems.currency = [problem('currency_mismatch')];
  else if (preorder.amount_units !== input.amountUnits) problems.amount = [problem('amount_mismatch')];
  return preorder;
}

/** The merchant user's instrument of `kind` (guest cards are for the hosted page only); violations collected. */
async function checkInstrument(deps: PlatformDeps, input: StartInput, problems: FieldViolations): Promise<Instrument | undefined> {
  try {
    const instrument = await requireInstrument(deps.database, {
      merchantId: input.merchantId,
      token: input.instrumentToken,
      userId: input.userId || undefined,
      kinds: [input.kind],
    });
    if (instrument.userId === null) throw fail('token', 'not_found', 'INSTRUMENT_NOT_FOUND');
    const user = await merchantUser(deps.database, input.merchantId, instrument.userId, 'token');
    // Without a preorder the deposit credits this user's wallet, which holds one currency: refused now, before a card
    // is authorized for a posting that could never balance.
    if (!input.preOrderToken && user.currency !== input.currency) problems.currency ??= [problem('wallet_currency', input.currency)];
    if (instrument.kind === 'visa_master' && instrument.expiryMonth && instrument.expiryYear) {
      if (isExpired({ month: instrument.expiryMonth, year: instrument.expiryYear })) {
        throw fail('token', 'card_expired', 'CARD_EXPIRED');
      }
    }
    return instrument;
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    Object.assign(problems, error.fields);
    return undefined;
  }
}

/**
 * A Visa/Master deposit's encrypted CVV. No padding oracle (platform decisions §7): a CVV that does not decrypt and
 * one that decrypts to anything but 3 or 4 digits answer the same error, collected in `problems`.
 */
function checkSecurityCode(deps: PlatformDeps, encrypted: string, problems: FieldViolations): void {
  const securityCode = tryDecryptField(deps.keys.fieldEncryption, encrypted, (plaintext) => (validSecurityCode(plaintext) ? plaintext : undefined));
  if (securityCode === undefined) problems.security_code = [fieldNotDecryptable('security_code')];
}

/** The workflow input of a recorded deposit: its timer runs to the row's `expires_at`. */
export function depositWorkflowInput(deps: PlatformDeps, deposit: Deposit): DepositWorkflowInput {
  return {
    reference: deposit.reference,
    confirmation: deposit.token_type === TOKEN_TYPE.cardForm ? 'card_form' : 'password',
    ttl_seconds: deps.config.DEPOSIT_TTL_SECONDS,
    expires_at: deposit.expires_at.toISOString(),
    max_password_attempts: deposit.max_password_attempts ?? deps.config.DEPOSIT_MAX_OTP_ATTEMPTS,
    // Absent when 0, so a run's input reads as before the capture delay existed.
    ...(deps.config.DEPOSIT_CAPTURE_DELAY_SECONDS > 0 ? { capture_delay_seconds: deps.config.DEPOSIT_CAPTURE_DELAY_SECONDS } : {}),
  };
}

/**
 * Records the pending deposit (committed on its own), then starts its workflow within the request's Temporal
 * deadline. A start that fails or runs out of time is logged and left: the first confirmation starts the workflow
 * (Update-with-Start, `confirmDeposit`), and reconciliation expires a deposit nobody confirmed.
 */
export async function createDeposit(
  deps: PlatformDeps,
  instrument: Instrument,
  preorder: Preorder | undefined,
  amountUnits: bigint,
  currency: Currency,
): Promise<{ deposit: Pick<Deposit, 'reference'>; token: string }> {
  const { reference, token } = newDepositIdentity();
  const cardForm = instrument.kind === 'visa_master';
  const deposit = await insertDeposit(deps.database, {
    reference,
    token,
    ttl_seconds: deps.config.DEPOSIT_TTL_SECONDS,
    merchant_id: instrument.merchantId,
    user_id: instrument.userId,
    instrument_token: instrument.token,
    instrument_kind: instrument.kind,
    pre_order_token: preorder?.token ?? null,
    amount_units: amountUnits,
    currency,
    token_type: cardForm ? TOKEN_TYPE.cardForm : TOKEN_TYPE.otp,
    max_password_attempts: deps.config.DEPOSIT_MAX_OTP_ATTEMPTS,
  });
  try {
    await withRequestDeadline(deps, () =>
      startWorkflow(deps.temporal, depositWorkflow, { taskQueue: deps.temporal.taskQueue, workflowId: reference, args: [depositWorkflowInput(deps, deposit)], ...depositSearchAttributes(deposit) }),
    );
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) {
      deps.logger.warn({ reference, err: (error as Error).message }, 'deposit workflow not started; its first confirmation starts it');
    }
  }
  return { deposit: { reference }, token };
}

/** What the confirmation page (html_confirm_payment) of a Visa/Master deposit shows. */
export async function cardConfirmation(
  deps: PlatformDeps,
  depositToken: string,
  deposit: Pick<Deposit, 'reference' | 'merchant_id' | 'amount_units' | 'currency'>,
  instrument: Instrument,
  preorder: Preorder | undefined,
): Promise<MessageInitShape<typeof CardConfirmationSchema>> {
  const merchant = await getMerchant(deps.database, deposit.merchant_id);
  return {
    depositToken,
    merchantName: merchant?.name ?? '',
    description: preorder?.description ?? '',
    amountUnits: deposit.amount_units,
    currency: deposit.currency,
    brand: instrument.brand ?? '',
    last4: instrument.last4,
    holderName: instrument.holderName,
    reference: deposit.reference,
  };
}

/** A deposit's search attributes from its workflow's start: owner, kind, amount, currency, status `pending`. */
function depositSearchAttributes(deposit: Pick<Deposit, 'merchant_id' | 'amount_units' | 'currency'>) {
  return paymentSearchAttributes({ owner: { merchant_id: deposit.merchant_id }, kind: 'deposit', amount_units: BigInt(deposit.amount_units), currency: deposit.currency, status: 'pending' });
}

/**
 * A merchant's deposit call: checks, then the pending deposit and its workflow.
 * @throws DomainError ACQUIRER_NOT_CONFIGURED; VALIDATION_FAILED with every field problem found (currency, amount,
 *   security_code, token, pre_order_token)
 */
export async function startDeposit(deps: PlatformDeps, input: StartInput) {
  // Live mode without a configured acquirer: nothing could authorize the card or check the OTP, so nothing starts.
  if (!deps.acquirer) throw reasonError(DEPOSIT_REASONS, 'ACQUIRER_NOT_CONFIGURED', 'no card acquirer configured', { token: [problem('acquirer_missing')] });
  const problems: FieldViolations = {};
  if (!isAreaCCurrency(input.currency)) problems.currency = [problem('currency')];
  if (input.amountUnits <= 0n) problems.amount = [problem('positive')];
  if (input.kind === 'visa_master') checkSecurityCode(deps, input.securityCode ?? '', problems);
  const instrument = await checkInstrument(deps, input, problems);
  const preorder = await checkPreorder(deps, input, problems);
  if (Object.keys(problems).length > 0 || !instrument) throw invalidFields(problems);
  const currency = input.currency as Currency;
  const { deposit, token } = await createDeposit(deps, instrument, preorder, input.amountUnits, currency);
  const cardForm = instrument.kind === 'visa_master';
  return {
    deposit: {
      reference: deposit.reference,
      token,
      tokenType: cardForm ? TOKEN_TYPE.cardForm : TOKEN_TYPE.otp,
      needVerifyTrx: !cardForm,
      confirmation: cardForm
        ? await cardConfirmation(deps, token, { ...deposit, merchant_id: input.merchantId, amount_units: input.amountUnits, currency }, instrument, preorder)
        : undefined,
    },
  };
}

/** The merchant's answer to each typed rejection of a DepositWorkflow Update (a deposit it can no longer confirm). */
export const REJECTION_ERRORS: Record<DepositRejection, () => DomainError> = {
  DEPOSIT_COMPLETED: () => fail('token', 'payment_confirmed', 'DEPOSIT_COMPLETED'),
  DEPOSIT_DECLINED: () => fail('token', 'card_declined', 'DEPOSIT_DECLINED'),
  DEPOSIT_FAILED: () => fail('token', 'payment_failed', 'DEPOSIT_FAILED'),
  DEPOSIT_CANCELLED: () => fail('token', 'payment_cancelled', 'DEPOSIT_CANCELLED'),
  DEPOSIT_EXPIRED: () => fail('token', 'payment_expired', 'DEPOSIT_EXPIRED'),
  DEPOSIT_CONFIRMED_BY_FORM: () => fail('token', 'confirm_by_form', 'DEPOSIT_CONFIRMED_BY_FORM'),
  DEPOSIT_CONFIRMED_BY_PASSWORD: () => fail('token', 'not_found', 'DEPOSIT_NOT_FOUND'),
};

/** The typed rejection of a DepositWorkflow Update, if that is what `error` is (one of REJECTION_ERRORS' keys). */
export function rejectionOf(error: unknown): DepositRejection | undefined {
  const type = failureType(error);
  return type && Object.hasOwn(REJECTION_ERRORS, type) ? (type as DepositRejection) : undefined;
}

/**
 * Sends a recorded confirmation's Update to the deposit's workflow within the request deadline, starting the
 * workflow when its start after creation never got through (Update-with-Start; a run that already ended is not
 * started again).
 * @throws what the Update throws (its typed DepositRejection, an activity's failure), DomainError DEADLINE_EXCEEDED
 */
export function confirmDeposit(
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
    ...depositSearchAttributes(deposit),
  });
  return withRequestDeadline(deps, () => send(startWorkflowOperation));
}
