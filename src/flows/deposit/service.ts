/**
 * DepositService (Area C deposits; docs/area-c.md "Deposits and confirmations"; platform decisions §7):
 * deposit_by_local_card, deposit_by_bank_account, deposit_by_visa_master, confirm_payments, the Visa/Master
 * confirmation form and the hosted preorder page. Merchant calls are verified with `authenticateAction` like
 * WalletService. A deposit is a pending `deposits` row plus its DepositWorkflow (id = reference), started in the
 * same database transaction; confirmations are Updates of that workflow, which alone moves the money.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { WorkflowNotFoundError } from '@temporalio/client';
import { decryptField, fieldNotDecryptable } from '../../crypto/field-decryption';
import { DomainError, invalidFields, reasonError, type FieldViolations } from '../../errors';
import {
  DepositByBankAccountResponseSchema,
  DepositByLocalCardResponseSchema,
  DepositByVisaMasterResponseSchema,
  type DepositService,
  type PayPreOrderByCardRequest,
} from '../../gen/payments/deposit/v1/deposit_pb';
import { answerIdempotently } from '../../idempotency';
import { CARD_MESSAGES, isExpired, normalizeCardNumber, validSecurityCode } from '../../instruments/cards';
import { requireInstrument, vaultGuestCard, type Instrument, type InstrumentKind } from '../../instruments/store';
import { formatAmount, isCurrency, type Currency } from '../../money';
import { getMerchant, getUser } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { clientAddressOf } from '../../rpc/client-address';
import { withRequestDeadline } from '../../temporal/deadline';
import { failureType } from '../../temporal/failures';
import { MESSAGES, WALLET_CURRENCIES } from '../wallet/fields';
import { merchantUser } from '../wallet/activities';
import { merchantApiUser } from '../../merchant-auth';
import { depositWorkflow } from '../../../workflows/deposit';
import {
  DEPOSIT_REASONS,
  confirmWithPasswordUpdate,
  submitCardConfirmationUpdate,
  type DepositConfirmation,
  type DepositRejection,
  type DepositWorkflowInput,
} from './contract';
import { DEPOSIT_MESSAGES, type CardFormFields } from './fields';
import { confirmationPage, notFoundPage, preorderPage, resultPage } from '../../web/deposit-pages';
import { sealDepositPassword } from './sealing';
import {
  encodeResult,
  findDepositByToken,
  findPreorder,
  insertDeposit,
  lifetimeOver,
  newDepositIdentity,
  resultObject,
  TOKEN_TYPE,
  type Deposit,
  type PreorderForDeposit,
} from './store';

function fail(field: string, message: string, reason: string, kind: DomainError['kind'] = 'failed_precondition'): DomainError {
  return new DomainError(kind, reason, message, { [field]: [message] });
}

/** The confirm_payments answer for a deposit that is no longer pending (or whose lifetime is over). */
function notPending(deposit: Deposit): DomainError {
  switch (deposit.state) {
    case 'completed':
      return fail('token', DEPOSIT_MESSAGES.confirmed, 'DEPOSIT_COMPLETED');
    case 'cancelled':
      return fail('token', DEPOSIT_MESSAGES.cancelled, 'DEPOSIT_CANCELLED');
    case 'failed':
      return fail('token', DEPOSIT_MESSAGES.failed, 'DEPOSIT_FAILED');
    case 'declined':
      return fail('token', DEPOSIT_MESSAGES.declined, 'DEPOSIT_DECLINED');
    default:
      return fail('token', DEPOSIT_MESSAGES.expired, 'DEPOSIT_EXPIRED');
  }
}

const REJECTION_ERRORS: Record<DepositRejection, () => DomainError> = {
  DEPOSIT_COMPLETED: () => fail('token', DEPOSIT_MESSAGES.confirmed, 'DEPOSIT_COMPLETED'),
  DEPOSIT_DECLINED: () => fail('token', DEPOSIT_MESSAGES.declined, 'DEPOSIT_DECLINED'),
  DEPOSIT_FAILED: () => fail('token', DEPOSIT_MESSAGES.failed, 'DEPOSIT_FAILED'),
  DEPOSIT_CANCELLED: () => fail('token', DEPOSIT_MESSAGES.cancelled, 'DEPOSIT_CANCELLED'),
  DEPOSIT_EXPIRED: () => fail('token', DEPOSIT_MESSAGES.expired, 'DEPOSIT_EXPIRED'),
  DEPOSIT_CONFIRMED_BY_FORM: () => fail('token', DEPOSIT_MESSAGES.confirmByForm, 'DEPOSIT_CONFIRMED_BY_FORM', 'invalid_argument'),
  DEPOSIT_CONFIRMED_BY_PASSWORD: () => fail('token', DEPOSIT_MESSAGES.tokenInvalid, 'DEPOSIT_NOT_FOUND', 'not_found'),
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
 * The idempotent request of a deposit start: a retry with the same key and the same fields answers the first
 * deposit (its token and confirmation page) instead of starting a second one. The encrypted CVV is not one of the
 * compared fields: it is encrypted anew on every retry and discarded after its check.
 */
function startRequest(input: StartInput, key: string) {
  return {
    scope: `merchant:${input.merchantId}`,
    key,
    operation: `area-c.deposit_by_${input.kind}`,
    parameters: [input.instrumentToken, input.userId, input.preOrderToken, input.amountUnits, input.currency],
  };
}

export function createDepositService(deps: PlatformDeps): ServiceImpl<typeof DepositService> {
  const { database, config } = deps;
  const baseUrl = `${config.PUBLIC_BASE_URL}${config.MERCHANT_PREFIX}`;
  const confirmUrl = (depositToken: string) => `${baseUrl}/visa-master/confirm/${encodeURIComponent(depositToken)}`;
  const preorderPayUrl = (preOrderToken: string) => `${baseUrl}/pre-order/${encodeURIComponent(preOrderToken)}/pay`;

  // The merchant each request acts for is the one its ActionAuth proves (src/merchant-auth), never an asserted id.
  const { requireMerchant } = deps.merchantAuth;

  /** The merchant's unpaid preorder matching the deposit's amount and currency; violations are collected. */
  async function checkPreorder(merchantId: string, input: StartInput, problems: FieldViolations): Promise<PreorderForDeposit | undefined> {
    if (!input.preOrderToken) return undefined;
    const preorder = await findPreorder(database, input.preOrderToken);
    if (!preorder || preorder.merchant_id !== merchantId) {
      problems.pre_order_token = [DEPOSIT_MESSAGES.preorderInvalid];
      return undefined;
    }
    if (preorder.status !== 'pending') problems.pre_order_token = [DEPOSIT_MESSAGES.preorderPaid];
    if (preorder.currency !== input.currency) problems.currency = [DEPOSIT_MESSAGES.currencyMismatch];
    else if (preorder.amount_units !== input.amountUnits) problems.amount = [DEPOSIT_MESSAGES.amountMismatch];
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
      if (instrument.userId === null) throw fail('token', DEPOSIT_MESSAGES.tokenInvalid, 'INSTRUMENT_NOT_FOUND', 'not_found');
      await merchantUser(database, input.merchantId, instrument.userId, 'token');
      if (instrument.kind === 'visa_master' && instrument.expiryMonth && instrument.expiryYear) {
        if (isExpired({ month: instrument.expiryMonth, year: instrument.expiryYear })) {
          throw fail('token', DEPOSIT_MESSAGES.cardExpired, 'CARD_EXPIRED', 'invalid_argument');
        }
      }
      return instrument;
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      Object.assign(problems, error.fields);
      return undefined;
    }
  }

  /** Inserts the pending deposit and starts its workflow in one database transaction. */
  async function createDeposit(
    instrument: Instrument,
    preorder: PreorderForDeposit | undefined,
    amountUnits: bigint,
    currency: Currency,
  ): Promise<{ deposit: Pick<Deposit, 'reference'>; token: string }> {
    const { reference, token } = newDepositIdentity();
    const cardForm = instrument.kind === 'visa_master';
    const ttl = config.DEPOSIT_TTL_SECONDS;
    await database.transaction(async (trx) => {
      await insertDeposit(trx, {
        reference,
        token,
        ttl_seconds: ttl,
        merchant_id: instrument.merchantId,
        user_id: instrument.userId,
        instrument_token: instrument.token,
        instrument_kind: instrument.kind,
        pre_order_token: preorder?.token ?? null,
        amount_units: amountUnits,
        currency,
        token_type: cardForm ? TOKEN_TYPE.cardForm : TOKEN_TYPE.otp,
      });
      // Started inside the transaction: when the start fails nothing is written; when the commit fails the
      // workflow finds no row and its activities fail without moving money.
      const input: DepositWorkflowInput = {
        reference,
        confirmation: cardForm ? 'card_form' : 'password',
        ttl_seconds: ttl,
        max_password_attempts: config.DEPOSIT_MAX_OTP_ATTEMPTS,
      };
      await deps.temporal.client.workflow.start(depositWorkflow, {
        taskQueue: deps.temporal.taskQueue,
        workflowId: reference,
        args: [input],
      });
    });
    return { deposit: { reference }, token };
  }

  /** The confirmation page (html_confirm_payment) of a Visa/Master deposit. */
  async function confirmationHtml(depositToken: string, deposit: Pick<Deposit, 'reference' | 'merchant_id' | 'amount_units' | 'currency'>, instrument: Instrument, preorder: PreorderForDeposit | undefined) {
    const merchant = await getMerchant(database, deposit.merchant_id);
    return confirmationPage({
      actionUrl: confirmUrl(depositToken),
      merchantName: merchant?.name ?? '',
      description: preorder?.description ?? null,
      amount: formatAmount(deposit.amount_units, deposit.currency),
      currency: deposit.currency,
      brand: instrument.brand,
      last4: instrument.last4,
      holderName: instrument.holderName,
      reference: deposit.reference,
    });
  }

  /** A merchant's deposit call: checks, then the pending deposit and its workflow. */
  async function startDeposit(input: StartInput) {
    // Live mode without a configured acquirer: nothing could authorize the card or check the OTP, so nothing starts.
    if (!deps.acquirer) throw reasonError(DEPOSIT_REASONS, 'ACQUIRER_NOT_CONFIGURED', 'no card acquirer configured', { token: [DEPOSIT_MESSAGES.acquirerMissing] });
    const problems: FieldViolations = {};
    if (!isCurrency(input.currency) || !WALLET_CURRENCIES.includes(input.currency)) problems.currency = [MESSAGES.currency('currency')];
    if (input.amountUnits <= 0n) problems.amount = ['The amount must be greater than 0.'];
    if (input.kind === 'visa_master') {
      // No padding oracle (platform decisions §7): a CVV that does not decrypt and one that decrypts to anything but
      // 3 or 4 digits answer the same error.
      let valid = false;
      try {
        valid = validSecurityCode(await decryptField(deps.keys.fieldEncryption, 'security_code', input.securityCode ?? ''));
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
        htmlConfirmPayment: cardForm
          ? await confirmationHtml(token, { ...deposit, merchant_id: input.merchantId, amount_units: input.amountUnits, currency }, instrument, preorder)
          : '',
      },
    };
  }

  /** Seller name shown on the hosted page: the merchant's name, or the name of the merchant's user who sells. */
  async function sellerName(preorder: PreorderForDeposit): Promise<string> {
    const merchant = await getMerchant(database, preorder.merchant_id);
    const apiUser = await merchantApiUser(database, preorder.merchant_id);
    if (preorder.seller_code !== preorder.merchant_id && preorder.seller_code !== apiUser.wallet_ref) {
      const row = (await database('users').where({ wallet_ref: preorder.seller_code, merchant_id: preorder.merchant_id }).first('id')) as
        | { id: bigint }
        | undefined;
      const user = row ? await getUser(database, String(row.id)) : undefined;
      if (user) return user.full_name;
    }
    return merchant?.name ?? '';
  }

  async function preorderView(preorder: PreorderForDeposit) {
    return {
      actionUrl: preorderPayUrl(preorder.token),
      sellerName: await sellerName(preorder),
      description: preorder.description,
      amount: formatAmount(preorder.amount_units, preorder.currency),
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
    async depositByLocalCard(request) {
      const merchantId = await requireMerchant(request);
      const input: StartInput = { ...request, merchantId, kind: 'local_card', instrumentToken: request.token };
      return answerIdempotently(deps.idempotency, startRequest(input, request.idempotencyKey), DepositByLocalCardResponseSchema, () => startDeposit(input));
    },

    async depositByBankAccount(request) {
      const merchantId = await requireMerchant(request);
      const input: StartInput = { ...request, merchantId, kind: 'bank_account', instrumentToken: request.token };
      return answerIdempotently(deps.idempotency, startRequest(input, request.idempotencyKey), DepositByBankAccountResponseSchema, () => startDeposit(input));
    },

    async depositByVisaMaster(request) {
      const merchantId = await requireMerchant(request);
      const input: StartInput = { ...request, merchantId, kind: 'visa_master', instrumentToken: request.token };
      return answerIdempotently(deps.idempotency, startRequest(input, request.idempotencyKey), DepositByVisaMasterResponseSchema, () => startDeposit(input));
    },

    async confirmPayment(request) {
      const merchantId = await requireMerchant(request);
      const user = await merchantUser(database, merchantId, request.userId, 'user_id');
      const deposit = await findDepositByToken(database, request.token);
      if (!deposit || deposit.merchant_id !== merchantId || deposit.user_id !== user.id) {
        throw fail('token', DEPOSIT_MESSAGES.tokenInvalid, 'DEPOSIT_NOT_FOUND', 'not_found');
      }
      if (deposit.token_type === TOKEN_TYPE.cardForm) throw REJECTION_ERRORS.DEPOSIT_CONFIRMED_BY_FORM();
      if (deposit.state !== 'pending' || lifetimeOver(deposit)) throw notPending(deposit);
      let confirmation: DepositConfirmation;
      try {
        confirmation = await withRequestDeadline(deps, () =>
          deps.temporal.client.workflow.getHandle<typeof depositWorkflow>(deposit.reference).executeUpdate(confirmWithPasswordUpdate, {
            args: [{ sealed_password: sealDepositPassword(deps.keys.dataKeys, deposit.reference, request.password) }],
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
          throw fail('password', DEPOSIT_MESSAGES.passwordIncorrect, 'PASSWORD_INCORRECT', 'invalid_argument');
        case 'cancelled':
          throw new DomainError('failed_precondition', 'DEPOSIT_CANCELLED', 'deposit cancelled', {
            password: [DEPOSIT_MESSAGES.passwordIncorrect],
            token: [DEPOSIT_MESSAGES.cancelled],
          });
        default:
          // failed: the preorder was paid by someone else meanwhile; nothing moved.
          throw new DomainError('failed_precondition', 'PREORDER_ALREADY_PAID', 'preorder already paid', {
            pre_order_token: [DEPOSIT_MESSAGES.preorderPaid],
          });
      }
    },

    async getVisaMasterConfirmation(request) {
      const deposit = await cardFormDeposit(request.depositToken);
      if (!deposit) return { page: { statusCode: 404, html: notFoundPage() } };
      if (deposit.state !== 'pending' || lifetimeOver(deposit)) {
        const result = resultObject(deposit);
        return { page: { statusCode: 200, html: resultPage({ ...result, reference: deposit.reference, resultBase64: encodeResult(deposit) }) } };
      }
      const merchant = deposit.merchant_id;
      const instrument = await requireInstrument(database, { merchantId: merchant, token: deposit.instrument_token });
      const preorder = deposit.pre_order_token ? await findPreorder(database, deposit.pre_order_token) : undefined;
      return { page: { statusCode: 200, html: await confirmationHtml(request.depositToken, deposit, instrument, preorder) } };
    },

    /**
     * The card confirmation form. A declined card of a hosted preorder page counts as a failed attempt of that
     * preorder's card form (src/abuse), so the page cannot be used to test card numbers one decline at a time.
     */
    async submitVisaMasterConfirmation(request, context) {
      const found = await cardFormDeposit(request.depositToken);
      if (!found) return { outcome: { case: 'page', value: { statusCode: 404, html: notFoundPage() } } };
      if (found.state === 'pending' && !lifetimeOver(found)) {
        try {
          await withRequestDeadline(deps, () =>
            deps.temporal.client.workflow.getHandle<typeof depositWorkflow>(found.reference).executeUpdate(submitCardConfirmationUpdate),
          );
        } catch (error) {
          // Refused because the deposit ended meanwhile, or the workflow closed: the row tells the outcome.
          if (!rejectionOf(error) && !(error instanceof WorkflowNotFoundError)) {
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
      const resultBase64 = encodeResult(deposit);
      if (preorder?.redirect_url) {
        const target = new URL(preorder.redirect_url);
        const parameter = `result=${encodeURIComponent(resultBase64)}`;
        target.search = target.search ? `${target.search}&${parameter}` : `?${parameter}`;
        return { outcome: { case: 'redirectLocation', value: target.toString() } };
      }
      const result = resultObject(deposit);
      return {
        outcome: { case: 'page', value: { statusCode: 200, html: resultPage({ ...result, reference: deposit.reference, resultBase64 }) } },
      };
    },

    async getPreOrderPage(request) {
      const preorder = await findPreorder(database, request.preOrderToken);
      if (!preorder) return { page: { statusCode: 404, html: notFoundPage() } };
      return { page: { statusCode: 200, html: preorderPage(await preorderView(preorder)) } };
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
      await (answer.page.statusCode === 400 || answer.page.statusCode === 404 ? attempt.failed() : attempt.withdrawn());
      return answer;
    },
  };

  /** The card form's answer: a page (400 for refused fields, 404 unknown, 409 paid, 503 no acquirer, 200 the confirmation). */
  async function payPreorderForm(request: PayPreOrderByCardRequest): Promise<{ page: { statusCode: number; html: string } }> {
    const preorder = await findPreorder(database, request.preOrderToken);
    if (!preorder) return { page: { statusCode: 404, html: notFoundPage() } };
    const view = await preorderView(preorder);
    if (view.paid) return { page: { statusCode: 409, html: preorderPage(view) } };
    if (!deps.acquirer) return { page: { statusCode: 503, html: preorderPage({ ...view, errors: { number: [DEPOSIT_MESSAGES.acquirerMissing] } }) } };
    const form: CardFormFields = request;
    const values = { holderName: form.holderName, expiryMonth: form.expiryMonth, expiryYear: form.expiryYear };
    const refused = (errors: FieldViolations) => ({ page: { statusCode: 400, html: preorderPage({ ...view, errors, values }) } });
    // The security code is checked first so that no card is vaulted for a submission that is refused anyway.
    if (!validSecurityCode(form.securityCode.trim())) {
      const problems: FieldViolations = { security_code: [CARD_MESSAGES.securityCode] };
      if (!normalizeCardNumber(form.cardNumber)) problems.number = [CARD_MESSAGES.number];
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
    const html = await confirmationHtml(token, { ...deposit, merchant_id: preorder.merchant_id, amount_units: preorder.amount_units, currency: preorder.currency }, instrument, preorder);
    return { page: { statusCode: 200, html } };
  }
}
