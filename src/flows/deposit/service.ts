/**
 * DepositService (Area C deposits; docs/area-c.md "Deposits and confirmations"; platform decisions §7):
 * deposit_by_local_card, deposit_by_bank_account, deposit_by_visa_master, confirm_payments, the Visa/Master
 * confirmation form and the hosted preorder page. Merchant calls are verified with `requireMerchant` like
 * WalletService. A deposit is a pending `deposits` row plus its DepositWorkflow (id = reference): the row commits
 * first, then the workflow starts within the request's Temporal deadline (no transaction stays open across it); a
 * start that did not get through is made by the first confirmation (Update-with-Start), and a deposit nobody
 * confirms is expired by reconciliation. A confirmation is recorded (`deposit_confirmations`: who, when, from where)
 * before its Update is sent, and the workflow's activities move money only on that record (docs/security.md
 * "Temporal messages").
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, WorkflowNotFoundError } from '@temporalio/client';
import { fieldNotDecryptable } from '../../crypto/field-decryption';
import { DomainError, invalidFields, reasonError, type FieldViolations } from '../../errors';
import {
  ConfirmPaymentResponseSchema,
  DepositByBankAccountResponseSchema,
  DepositByLocalCardResponseSchema,
  DepositByVisaMasterResponseSchema,
  type CardConfirmationSchema,
  type DepositPageSchema,
  type DepositService,
  type PayPreOrderByCardRequest,
  type PreorderPage,
} from '../../gen/payments/deposit/v1/deposit_pb';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { problem, type FieldProblem } from '../../field-problems';
import { answerIdempotently } from '../../idempotency';
import { isExpired, normalizeCardNumber, validSecurityCode } from '../../instruments/cards';
import { requireInstrument, vaultGuestCard, type Instrument, type InstrumentKind } from '../../instruments/store';
import { isCurrency, type Currency } from '../../money';
import { getMerchant } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
import { fieldViolationList } from '../../rpc/errors';
import { startWorkflow } from '../../temporal/client';
import { withRequestDeadline } from '../../temporal/deadline';
import { failureType } from '../../temporal/failures';
import { WALLET_CURRENCIES } from '../wallet/contract';
import { movementKeys } from '../../merchant-auth';
import { findMerchantUserByWalletRef, merchantApiUser, merchantUser } from '../../merchant-users';
import { depositWorkflow } from '../../../workflows/deposit';
import {
  DEPOSIT_REASONS,
  confirmWithPasswordUpdate,
  submitCardConfirmationUpdate,
  type DepositConfirmation,
  type DepositRejection,
  type DepositWorkflowInput,
} from './contract';
import { sealDepositPassword } from './sealing';
import {
  depositResult,
  findDepositByToken,
  insertDeposit,
  lifetimeOver,
  newDepositIdentity,
  recordConfirmation,
  TOKEN_TYPE,
  type Deposit,
} from './store';
import { findPreorder, type Preorder } from '../../preorders';

function fail(field: string, code: FieldProblem, reason: string, kind: DomainError['kind'] = 'failed_precondition'): DomainError {
  return new DomainError(kind, reason, reason.toLowerCase().replace(/_/g, ' '), { [field]: [problem(code)] });
}

/** A page view (DepositPage init shape). */
type PageView = MessageInitShape<typeof DepositPageSchema>;
const NOT_FOUND_PAGE: PageView = { view: { case: 'notFound', value: {} } };

/** The summary of the hosted preorder page (PreorderPage without the answer to a submission). */
type PreorderSummary = Pick<PreorderPage, 'preOrderToken' | 'sellerName' | 'description' | 'amountUnits' | 'currency' | 'paid'>;

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
  DEPOSIT_CONFIRMED_BY_FORM: () => fail('token', 'confirm_by_form', 'DEPOSIT_CONFIRMED_BY_FORM', 'invalid_argument'),
  DEPOSIT_CONFIRMED_BY_PASSWORD: () => fail('token', 'not_found', 'DEPOSIT_NOT_FOUND', 'not_found'),
};

/** The typed rejection of a DepositWorkflow Update, if that is what `error` is (one of REJECTION_ERRORS' keys). */
function rejectionOf(error: unknown): DepositRejection | undefined {
  const type = failureType(error);
  return type && Object.hasOwn(REJECTION_ERRORS, type) ? (type as DepositRejection) : undefined;
}

interface StartInput {
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
function startRequest(input: StartInput, keys: ReturnType<typeof movementKeys>) {
  return {
    scope: `merchant:${input.merchantId}`,
    ...keys,
    operation: `area-c.deposit_by_${input.kind}`,
    parameters: [input.instrumentToken, input.userId, input.preOrderToken, input.amountUnits, input.currency],
  };
}

export function createDepositService(deps: PlatformDeps): ServiceImpl<typeof DepositService> {
  const { database, config } = deps;

  // The merchant each request acts for is the one its ActionAuth proves (src/merchant-auth), never an asserted id.
  const { requireMerchant } = deps.merchantAuth;

  /** The merchant's unpaid preorder matching the deposit's amount and currency; violations are collected. */
  async function checkPreorder(merchantId: string, input: StartInput, problems: FieldViolations): Promise<Preorder | undefined> {
    if (!input.preOrderToken) return undefined;
    const preorder = await findPreorder(database, input.preOrderToken);
    if (!preorder || preorder.merchant_id !== merchantId) {
      problems.pre_order_token = [problem('not_found')];
      return undefined;
    }
    if (preorder.status !== 'pending') problems.pre_order_token = [problem('preorder_paid')];
    if (preorder.currency !== input.currency) problems.currency = [problem('currency_mismatch')];
    else if (preorder.amount_units !== input.amountUnits) problems.amount = [problem('amount_mismatch')];
    return preorder;
  }

  /** The merchant user's instrument of `kind` (guest cards are for the hosted page only); violations collected. */
  async function checkInstrument(input: StartInput, problems: FieldViolations): Promise<Instrument | undefined> {
    try {
      const instrument = await requireInstrument(database, {
        merchantId: input.merchantId,
        token: input.instrumentToken,
        userId: input.userId || undefined,
        kinds: [input.kind],
      });
      if (instrument.userId === null) throw fail('token', 'not_found', 'INSTRUMENT_NOT_FOUND', 'not_found');
      await merchantUser(database, input.merchantId, instrument.userId, 'token');
      if (instrument.kind === 'visa_master' && instrument.expiryMonth && instrument.expiryYear) {
        if (isExpired({ month: instrument.expiryMonth, year: instrument.expiryYear })) {
          throw fail('token', 'card_expired', 'CARD_EXPIRED', 'invalid_argument');
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
   * Records the pending deposit (committed on its own), then starts its workflow within the request's Temporal
   * deadline. A start that fails or runs out of time is logged and left: the first confirmation starts the workflow
   * (Update-with-Start, `confirmDeposit`), and reconciliation expires a deposit nobody confirmed.
   */
  async function createDeposit(
    instrument: Instrument,
    preorder: Preorder | undefined,
    amountUnits: bigint,
    currency: Currency,
  ): Promise<{ deposit: Pick<Deposit, 'reference'>; token: string }> {
    const { reference, token } = newDepositIdentity();
    const cardForm = instrument.kind === 'visa_master';
    const deposit = await insertDeposit(database, {
      reference,
      token,
      ttl_seconds: config.DEPOSIT_TTL_SECONDS,
      merchant_id: instrument.merchantId,
      user_id: instrument.userId,
      instrument_token: instrument.token,
      instrument_kind: instrument.kind,
      pre_order_token: preorder?.token ?? null,
      amount_units: amountUnits,
      currency,
      token_type: cardForm ? TOKEN_TYPE.cardForm : TOKEN_TYPE.otp,
      max_password_attempts: config.DEPOSIT_MAX_OTP_ATTEMPTS,
    });
    try {
      await withRequestDeadline(deps, () =>
        startWorkflow(deps.temporal, depositWorkflow, { taskQueue: deps.temporal.taskQueue, workflowId: reference, args: [depositWorkflowInput(deposit)] }),
      );
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) {
        deps.logger.warn({ reference, err: (error as Error).message }, 'deposit workflow not started; its first confirmation starts it');
      }
    }
    return { deposit: { reference }, token };
  }

  /** The workflow input of a recorded deposit: its timer runs to the row's `expires_at`. */
  function depositWorkflowInput(deposit: Deposit): DepositWorkflowInput {
    return {
      reference: deposit.reference,
      confirmation: deposit.token_type === TOKEN_TYPE.cardForm ? 'card_form' : 'password',
      ttl_seconds: config.DEPOSIT_TTL_SECONDS,
      expires_at: deposit.expires_at.toISOString(),
      max_password_attempts: deposit.max_password_attempts ?? config.DEPOSIT_MAX_OTP_ATTEMPTS,
    };
  }

  /**
   * Sends a recorded confirmation's Update to the deposit's workflow within the request deadline, starting the
   * workflow when its start after creation never got through (Update-with-Start; a run that already ended is not
   * started again).
   * @throws what the Update throws (its typed DepositRejection, an activity's failure), DomainError DEADLINE_EXCEEDED
   */
  function confirmDeposit(deposit: Deposit, send: (operation: WithStartWorkflowOperation<typeof depositWorkflow>) => Promise<DepositConfirmation>) {
    const startWorkflowOperation = new WithStartWorkflowOperation(depositWorkflow, {
      taskQueue: deps.temporal.taskQueue,
      workflowId: deposit.reference,
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      args: [depositWorkflowInput(deposit)],
    });
    return withRequestDeadline(deps, () => send(startWorkflowOperation));
  }

  /** What the confirmation page (html_confirm_payment) of a Visa/Master deposit shows. */
  async function cardConfirmation(
    depositToken: string,
    deposit: Pick<Deposit, 'reference' | 'merchant_id' | 'amount_units' | 'currency'>,
    instrument: Instrument,
    preorder: Preorder | undefined,
  ): Promise<MessageInitShape<typeof CardConfirmationSchema>> {
    const merchant = await getMerchant(database, deposit.merchant_id);
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

  /** A merchant's deposit call: checks, then the pending deposit and its workflow. */
  async function startDeposit(input: StartInput) {
    // Live mode without a configured acquirer: nothing could authorize the card or check the OTP, so nothing starts.
    if (!deps.acquirer) throw reasonError(DEPOSIT_REASONS, 'ACQUIRER_NOT_CONFIGURED', 'no card acquirer configured', { token: [problem('acquirer_missing')] });
    const problems: FieldViolations = {};
    if (!isCurrency(input.currency) || !WALLET_CURRENCIES.includes(input.currency)) problems.currency = [problem('currency')];
    if (input.amountUnits <= 0n) problems.amount = [problem('positive')];
    if (input.kind === 'visa_master') {
      // No padding oracle (platform decisions §7): a CVV that does not decrypt and one that decrypts to anything but
      // 3 or 4 digits answer the same error.
      let valid = false;
      try {
        valid = validSecurityCode(await deps.fieldDecryption.decrypt(deps.keys.fieldEncryption, 'security_code', input.securityCode ?? ''));
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
      }
      if (!valid) problems.security_code = [fieldNotDecryptable('security_code')];
    }
    const instrument = await checkInstrument(input, problems);
    const preorder = await checkPreorder(input.merchantId, input, problems);
    if (Object.keys(problems).length > 0 || !instrument) throw invalidFields(problems);
    const currency = input.currency as Currency;
    const { deposit, token } = await createDeposit(instrument, preorder, input.amountUnits, currency);
    const cardForm = instrument.kind === 'visa_master';
    return {
      deposit: {
        reference: deposit.reference,
        token,
        tokenType: cardForm ? TOKEN_TYPE.cardForm : TOKEN_TYPE.otp,
        needVerifyTrx: !cardForm,
        confirmation: cardForm
          ? await cardConfirmation(token, { ...deposit, merchant_id: input.merchantId, amount_units: input.amountUnits, currency }, instrument, preorder)
          : undefined,
      },
    };
  }

  /** Seller name shown on the hosted page: the merchant's name, or the name of the merchant's user who sells. */
  async function sellerName(preorder: Preorder): Promise<string> {
    const merchant = await getMerchant(database, preorder.merchant_id);
    const apiUser = await merchantApiUser(database, preorder.merchant_id);
    if (preorder.seller_code !== preorder.merchant_id && preorder.seller_code !== apiUser.wallet_ref) {
      const user = await findMerchantUserByWalletRef(database, preorder.merchant_id, preorder.seller_code);
      if (user) return user.full_name;
    }
    return merchant?.name ?? '';
  }

  async function preorderView(preorder: Preorder): Promise<PreorderSummary> {
    return {
      preOrderToken: preorder.token,
      sellerName: await sellerName(preorder),
      description: preorder.description,
      amountUnits: preorder.amount_units,
      currency: preorder.currency,
      paid: preorder.status !== 'pending',
    };
  }

  /** The deposit of a Visa/Master confirmation URL, else undefined. */
  async function cardFormDeposit(depositToken: string): Promise<Deposit | undefined> {
    const deposit = await findDepositByToken(database, depositToken);
    return deposit && deposit.token_type === TOKEN_TYPE.cardForm ? deposit : undefined;
  }

  return {
    async depositByLocalCard(request, context) {
      const act = await requireMerchant(request, context);
      const input: StartInput = { ...request, merchantId: act.merchantId, kind: 'local_card', instrumentToken: request.token };
      return answerIdempotently(deps.idempotency, startRequest(input, movementKeys(act, request.idempotencyKey)), DepositByLocalCardResponseSchema, () => startDeposit(input));
    },

    async depositByBankAccount(request, context) {
      const act = await requireMerchant(request, context);
      const input: StartInput = { ...request, merchantId: act.merchantId, kind: 'bank_account', instrumentToken: request.token };
      return answerIdempotently(deps.idempotency, startRequest(input, movementKeys(act, request.idempotencyKey)), DepositByBankAccountResponseSchema, () => startDeposit(input));
    },

    async depositByVisaMaster(request, context) {
      const act = await requireMerchant(request, context);
      const input: StartInput = { ...request, merchantId: act.merchantId, kind: 'visa_master', instrumentToken: request.token };
      return answerIdempotently(deps.idempotency, startRequest(input, movementKeys(act, request.idempotencyKey)), DepositByVisaMasterResponseSchema, () => startDeposit(input));
    },

    /** A repeat of the same signed body answers its first answer (the OTP is then not tried again). */
    async confirmPayment(request, context) {
      const act = await requireMerchant(request, context);
      const { merchantId } = act;
      return answerIdempotently(
        deps.idempotency,
        // The deposit token is stored only as its hash, so this fingerprint tells nothing of the OTP it holds.
        { scope: `merchant:${merchantId}`, ...movementKeys(act, request.idempotencyKey), operation: 'area-c.confirm_payments', parameters: [request.userId, request.token, request.password] },
        ConfirmPaymentResponseSchema,
        async () => {
          const user = await merchantUser(database, merchantId, request.userId, 'user_id');
          const deposit = await findDepositByToken(database, request.token);
          if (!deposit || deposit.merchant_id !== merchantId || deposit.user_id !== user.id) {
            throw fail('token', 'not_found', 'DEPOSIT_NOT_FOUND', 'not_found');
          }
          if (deposit.token_type === TOKEN_TYPE.cardForm) throw REJECTION_ERRORS.DEPOSIT_CONFIRMED_BY_FORM();
          if (deposit.state !== 'pending' || lifetimeOver(deposit)) throw notPending(deposit);
          // The merchant's verified request is the authority of this confirmation: recorded before the Update, which
          // only names it.
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
            confirmation = await confirmDeposit(deposit, (startWorkflowOperation) =>
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
          switch (confirmation.outcome) {
            case 'completed':
              return {};
            case 'wrong_password':
              throw fail('password', 'password_incorrect', 'PASSWORD_INCORRECT', 'invalid_argument');
            case 'cancelled':
              throw new DomainError('failed_precondition', 'DEPOSIT_CANCELLED', 'deposit cancelled', {
                password: [problem('password_incorrect')],
                token: [problem('payment_cancelled')],
              });
            default:
              // failed: the preorder was paid by someone else meanwhile; nothing moved.
              throw new DomainError('failed_precondition', 'PREORDER_ALREADY_PAID', 'preorder already paid', {
                pre_order_token: [problem('preorder_paid')],
              });
          }
        },
      );
    },

    async getVisaMasterConfirmation(request) {
      const deposit = await cardFormDeposit(request.depositToken);
      if (!deposit) return { page: NOT_FOUND_PAGE };
      if (deposit.state !== 'pending' || lifetimeOver(deposit)) return { page: { view: { case: 'result', value: depositResult(deposit) } } };
      const merchant = deposit.merchant_id;
      const instrument = await requireInstrument(database, { merchantId: merchant, token: deposit.instrument_token });
      const preorder = deposit.pre_order_token ? await findPreorder(database, deposit.pre_order_token) : undefined;
      return { page: { view: { case: 'confirmation', value: await cardConfirmation(request.depositToken, deposit, instrument, preorder) } } };
    },

    /**
     * The card confirmation form. The payer's submission, proven by the deposit's page token, is recorded (from
     * which address, when) before the Update that names it. A declined card of a hosted preorder page counts as a
     * failed attempt of that preorder's card form (src/abuse), so the page cannot be used to test card numbers one
     * decline at a time.
     */
    async submitVisaMasterConfirmation(request, context) {
      const found = await cardFormDeposit(request.depositToken);
      if (!found) return { page: NOT_FOUND_PAGE };
      if (found.state === 'pending' && !lifetimeOver(found)) {
        const confirmation_id = await recordPayerConfirmation(found, context);
        try {
          await confirmDeposit(found, (startWorkflowOperation) =>
            deps.temporal.client.workflow.executeUpdateWithStart(submitCardConfirmationUpdate, { args: [{ confirmation_id }], startWorkflowOperation }),
          );
        } catch (error) {
          // Refused because the deposit ended meanwhile, or the workflow closed: the row tells the outcome.
          if (!rejectionOf(error) && !(error instanceof WorkflowNotFoundError) && !(error instanceof WorkflowExecutionAlreadyStartedError)) {
            const now = await findDepositByToken(database, request.depositToken);
            if (!now || (now.state === 'pending' && !lifetimeOver(now))) throw error;
          }
        }
      }
      const deposit = (await findDepositByToken(database, request.depositToken))!;
      if (deposit.state === 'declined' && deposit.pre_order_token && found.state === 'pending') {
        await deps.abuse.recordFailure('preorder_card', deposit.pre_order_token, clientAddressOf(context));
      }
      const preorder = deposit.pre_order_token ? await findPreorder(database, deposit.pre_order_token) : undefined;
      return { page: { view: { case: 'result', value: depositResult(deposit) } }, redirectUrl: preorder?.redirect_url ?? '' };
    },

    async getPreOrderPage(request) {
      const preorder = await findPreorder(database, request.preOrderToken);
      if (!preorder) return { page: NOT_FOUND_PAGE };
      return { page: { view: { case: 'preorder', value: await preorderView(preorder) } } };
    },

    /**
     * The hosted card form. Refused submissions (unknown page, bad card fields) and declined cards (counted at the
     * confirmation) are counted per preorder token and per client address (src/abuse): past the limit the form
     * answers RATE_LIMITED, so it cannot test card numbers.
     * @throws DomainError RATE_LIMITED
     */
    async payPreOrderByCard(request, context) {
      const address = clientAddressOf(context);
      // A shown confirmation page is no success of the token: its card's decline is counted at the confirmation.
      const attempt = await deps.abuse.beginAttempt('preorder_card', request.preOrderToken, address);
      let answer;
      try {
        answer = await payPreorderForm(request);
      } catch (error) {
        await attempt.withdrawn();
        throw error;
      }
      await (answer.refused ? attempt.failed() : attempt.withdrawn());
      return { page: answer.page };
    },
  };

  /** Records the payer's submission of a deposit's card confirmation page (its page token verified by the caller). */
  function recordPayerConfirmation(deposit: Deposit, context: HandlerContext): Promise<string> {
    return recordConfirmation(database, { deposit_reference: deposit.reference, method: 'card_form', actor: 'payer', client_address: clientAddressOf(context) });
  }

  /**
   * The card form's answer: not found, the preorder page (paid, no acquirer, or refused fields), or the confirmation.
   * `refused`: an unknown page or refused fields, counted as a failed attempt of the form.
   */
  async function payPreorderForm(request: PayPreOrderByCardRequest): Promise<{ page: PageView; refused: boolean }> {
    const preorder = await findPreorder(database, request.preOrderToken);
    if (!preorder) return { page: NOT_FOUND_PAGE, refused: true };
    const view = await preorderView(preorder);
    // What a refused submission adds: its field problems and what was typed (never the number or security code).
    const preorderPage = (errors: FieldViolations = {}, typed: Partial<Pick<PreorderPage, 'holderName' | 'expiryMonth' | 'expiryYear'>> = {}, refused = false) => ({
      page: { view: { case: 'preorder' as const, value: { ...view, ...typed, errors: fieldViolationList(errors) } } },
      refused,
    });
    if (view.paid) return preorderPage();
    if (!deps.acquirer) return preorderPage({ number: [problem('acquirer_missing')] });
    const form = request;
    const values = { holderName: form.holderName, expiryMonth: form.expiryMonth, expiryYear: form.expiryYear };
    const refused = (errors: FieldViolations) => preorderPage(errors, values, true);
    // The security code is checked first so that no card is vaulted for a submission that is refused anyway.
    if (!validSecurityCode(form.securityCode.trim())) {
      const problems: FieldViolations = { security_code: [problem('security_code')] };
      if (!normalizeCardNumber(form.cardNumber)) problems.number = [problem('card_number')];
      return refused(problems);
    }
    const month = /^\d{1,2}$/.test(form.expiryMonth.trim()) ? Number(form.expiryMonth.trim()) : NaN;
    const year = /^(\d{2}|\d{4})$/.test(form.expiryYear.trim()) ? Number(form.expiryYear.trim()) : NaN;
    let instrument: Instrument;
    try {
      instrument = await vaultGuestCard(deps, {
        merchantId: preorder.merchant_id,
        holderName: form.holderName,
        number: form.cardNumber,
        expiryMonth: month,
        expiryYear: year,
      });
    } catch (error) {
      if (error instanceof DomainError) return refused(error.fields);
      throw error;
    }
    const { deposit, token } = await createDeposit(instrument, preorder, preorder.amount_units, preorder.currency);
    const confirmation = await cardConfirmation(token, { ...deposit, merchant_id: preorder.merchant_id, amount_units: preorder.amount_units, currency: preorder.currency }, instrument, preorder);
    return { page: { view: { case: 'confirmation', value: confirmation } }, refused: false };
  }
}
