/**
 * What the payer does in a browser, as typed answers (`DepositPage`: not found, confirmation, result, preorder page
 * with its field problems); the façade renders them (rest-facade/views/deposit-pages.ts). The Visa/Master
 * confirmation page of a deposit and its submission (recorded, then sent as the workflow's Update), and a preorder's
 * hosted page with its card form, which starts a guest card deposit.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { HandlerContext } from '@connectrpc/connect';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { DomainError, type FieldViolations } from '../../errors';
import { problem } from '../../field-problems';
import type { DepositPageSchema, PayPreOrderByCardRequest, PreorderPage } from '../../gen/payments/deposit/v1/deposit_pb';
import { normalizeCardNumber, requireInstrument, validSecurityCode, vaultGuestCard, type Instrument } from '../../instruments/store';
import { findMerchantUserByWalletRef, getMerchant, merchantApiUser } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { findPreorder, type Preorder } from '../../preorders';
import { clientAddressOf } from '../../rpc/client-address';
import { fieldViolationList } from '../../rpc/errors';
import { submitCardConfirmationUpdate } from './contract';
import { cardConfirmation, confirmDeposit, createDeposit, rejectionOf } from './start';
import { depositResult, findDepositByToken, lifetimeOver, recordConfirmation, TOKEN_TYPE, type Deposit } from './store';

/** A page view (DepositPage init shape). */
export type PageView = MessageInitShape<typeof DepositPageSchema>;
export const NOT_FOUND_PAGE: PageView = { view: { case: 'notFound', value: {} } };

/** The summary of the hosted preorder page (PreorderPage without the answer to a submission). */
type PreorderSummary = Pick<PreorderPage, 'preOrderToken' | 'sellerName' | 'description' | 'amountUnits' | 'currency' | 'paid'>;

/** Seller name shown on the hosted page: the merchant's name, or the name of the merchant's user who sells. */
async function sellerName(deps: PlatformDeps, preorder: Preorder): Promise<string> {
  const merchant = await getMerchant(deps.database, preorder.merchant_id);
  const apiUser = await merchantApiUser(deps.database, preorder.merchant_id);
  if (preorder.seller_code !== preorder.merchant_id && preorder.seller_code !== apiUser.wallet_ref) {
    const user = await findMerchantUserByWalletRef(deps.database, preorder.merchant_id, preorder.seller_code);
    if (user) return user.full_name;
  }
  return merchant?.name ?? '';
}

async function preorderView(deps: PlatformDeps, preorder: Preorder): Promise<PreorderSummary> {
  return {
    preOrderToken: preorder.token,
    sellerName: await sellerName(deps, preorder),
    description: preorder.description,
    amountUnits: preorder.amount_units,
    currency: preorder.currency,
    paid: preorder.status !== 'pending',
  };
}

/** The deposit of a Visa/Master confirmation URL, else undefined. */
async function cardFormDeposit(deps: PlatformDeps, depositToken: string): Promise<Deposit | undefined> {
  const deposit = await findDepositByToken(deps.database, depositToken);
  return deposit && deposit.token_type === TOKEN_TYPE.cardForm ? deposit : undefined;
}

/** The Visa/Master confirmation page of `depositToken`: the form while pending, else the deposit's result. */
export async function visaMasterConfirmationPage(deps: PlatformDeps, depositToken: string): Promise<{ page: PageView }> {
  const deposit = await cardFormDeposit(deps, depositToken);
  if (!deposit) return { page: NOT_FOUND_PAGE };
  if (deposit.state !== 'pending' || lifetimeOver(deposit)) return { page: { view: { case: 'result', value: depositResult(deposit) } } };
  const instrument = await requireInstrument(deps.database, { merchantId: deposit.merchant_id, token: deposit.instrument_token });
  const preorder = deposit.pre_order_token ? await findPreorder(deps.database, deposit.pre_order_token) : undefined;
  return { page: { view: { case: 'confirmation', value: await cardConfirmation(deps, depositToken, deposit, instrument, preorder) } } };
}

/**
 * The payer's submission of a pending Visa/Master deposit's confirmation form, proven by its page token
 * `depositToken` (checked by the caller): recorded (from which address, when) before the Update that names it. A
 * refusal because the deposit ended meanwhile, or a closed workflow, is no error: the row tells the outcome.
 */
async function submitCardConfirmation(deps: PlatformDeps, depositToken: string, deposit: Deposit, context: HandlerContext): Promise<void> {
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

/**
 * The card confirmation form. The payer's submission, proven by the deposit's page token, is recorded (from which
 * address, when) before the Update that names it. A declined card of a hosted preorder page counts as a failed
 * attempt of that preorder's card form (src/abuse), so the page cannot be used to test card numbers one decline at a
 * time. @returns the deposit's result page and the preorder's redirect URL ("" without one)
 */
export async function submitVisaMasterConfirmation(
  deps: PlatformDeps,
  depositToken: string,
  context: HandlerContext,
): Promise<{ page: PageView; redirectUrl?: string }> {
  const found = await cardFormDeposit(deps, depositToken);
  if (!found) return { page: NOT_FOUND_PAGE };
  if (found.state === 'pending' && !lifetimeOver(found)) await submitCardConfirmation(deps, depositToken, found, context);
  const deposit = (await findDepositByToken(deps.database, depositToken))!;
  if (deposit.state === 'declined' && deposit.pre_order_token && found.state === 'pending') {
    await deps.abuse.recordFailure('preorder_card', deposit.pre_order_token, clientAddressOf(context));
  }
  const preorder = deposit.pre_order_token ? await findPreorder(deps.database, deposit.pre_order_token) : undefined;
  return { page: { view: { case: 'result', value: depositResult(deposit) } }, redirectUrl: preorder?.redirect_url ?? '' };
}

/** The hosted page of a preorder, else the not-found page. */
export async function preorderPage(deps: PlatformDeps, preOrderToken: string): Promise<{ page: PageView }> {
  const preorder = await findPreorder(deps.database, preOrderToken);
  if (!preorder) return { page: NOT_FOUND_PAGE };
  return { page: { view: { case: 'preorder', value: await preorderView(deps, preorder) } } };
}

/**
 * The hosted card form. Refused submissions (unknown page, bad card fields) and declined cards (counted at the
 * confirmation) are counted per preorder token and per client address (src/abuse): past the limit the form answers
 * RATE_LIMITED, so it cannot test card numbers.
 * @throws DomainError RATE_LIMITED
 */
export async function payPreOrderByCard(deps: PlatformDeps, request: PayPreOrderByCardRequest, context: HandlerContext): Promise<{ page: PageView }> {
  const address = clientAddressOf(context);
  // A shown confirmation page is no success of the token: its card's decline is counted at the confirmation.
  const attempt = await deps.abuse.beginAttempt('preorder_card', request.preOrderToken, address);
  let answer;
  try {
    answer = await payPreorderForm(deps, request);
  } catch (error) {
    await attempt.withdrawn();
    throw error;
  }
  await (answer.refused ? attempt.failed() : attempt.withdrawn());
  return { page: answer.page };
}

/** The card form's fields refused before any card is vaulted: the security code first, then the card number. */
function refusedCardFields(form: PayPreOrderByCardRequest): FieldViolations | undefined {
  if (validSecurityCode(form.securityCode.trim())) return undefined;
  const problems: FieldViolations = { security_code: [problem('security_code')] };
  if (!normalizeCardNumber(form.cardNumber)) problems.number = [problem('card_number')];
  return problems;
}

/**
 * The card form's answer: not found, the preorder page (paid, no acquirer, or refused fields), or the confirmation.
 * `refused`: an unknown page or refused fields, counted as a failed attempt of the form.
 */
async function payPreorderForm(deps: PlatformDeps, form: PayPreOrderByCardRequest): Promise<{ page: PageView; refused: boolean }> {
  const preorder = await findPreorder(deps.database, form.preOrderToken);
  if (!preorder) return { page: NOT_FOUND_PAGE, refused: true };
  const view = await preorderView(deps, preorder);
  // What a refused submission adds: its field problems and what was typed (never the number or security code).
  const preorderPage = (errors: FieldViolations = {}, typed: Partial<Pick<PreorderPage, 'holderName' | 'expiryMonth' | 'expiryYear'>> = {}, refused = false) => ({
    page: { view: { case: 'preorder' as const, value: { ...view, ...typed, errors: fieldViolationList(errors) } } },
    refused,
  });
  if (view.paid) return preorderPage();
  if (!deps.acquirer) return preorderPage({ number: [problem('acquirer_missing')] });
  const values = { holderName: form.holderName, expiryMonth: form.expiryMonth, expiryYear: form.expiryYear };
  const refusedFields = refusedCardFields(form);
  if (refusedFields) return preorderPage(refusedFields, values, true);
  const month = /^\d{1,2}$/.test(form.expiryMonth.trim()) ? Number(form.expiryMonth.trim()) : NaN;
  const year = /^(\d{2}|\d{4})$/.test(form.expiryYear.trim()) ? Number(form.expiryYear.trim()) : NaN;
  let instrument: Instrument;
  try {
    instrument = await vaultGuestCard(deps, { merchantId: preorder.merchant_id, holderName: form.holderName, number: form.cardNumber, expiryMonth: month, expiryYear: year });
  } catch (error) {
    if (error instanceof DomainError) return preorderPage(error.fields, values, true);
    throw error;
  }
  const { deposit, token } = await createDeposit(deps, instrument, preorder, preorder.amount_units, preorder.currency);
  const shown = { ...deposit, merchant_id: preorder.merchant_id, amount_units: preorder.amount_units, currency: preorder.currency };
  return { page: { view: { case: 'confirmation', value: await cardConfirmation(deps, token, shown, instrument, preorder) } }, refused: false };
}
