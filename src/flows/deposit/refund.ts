/**
 * refund_deposit and refund_deposit_status (docs/refunds.md "Area C", a platform extension of Area C): a merchant's
 * refund of (part of) its completed deposit, recorded and held in one transaction under the deposit's row lock, then
 * carried out by its DepositRefundWorkflow (workflows/deposit-refund.ts, id = the refund reference) through the card
 * acquirer (./refund-activities.ts).
 *
 * Refundable: the deposit's amount less its refunds succeeded or held. The refund is held on the account the deposit
 * credited (the user's wallet; a preorder's seller, less the commission, which fee_revenue returns). Before capture
 * (a Visa/Master deposit whose capture state is `authorized`), only the whole deposit: the authorization is reversed,
 * and the capture state moves to `reversing` in the same transaction so that the capture never happens.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { Knex } from 'knex';
import { COMMON_REASONS, DomainError, invalidFields, reasonError } from '../../errors';
import { recordEvent } from '../../events';
import { problem } from '../../field-problems';
import { newReference, referenceFromKey } from '../../idempotency';
import type { PlatformDeps } from '../../platform-deps';
import { findPreorder, preorderCommission, type Preorder } from '../../preorders';
import { startWorkflow } from '../../temporal/client';
import { withRequestDeadline } from '../../temporal/deadline';
import { paymentSearchAttributes } from '../../temporal/search-attributes';
import { hasControlCharacters } from '../../text';
import { depositRefundWorkflow } from '../../../workflows/deposit-refund';
import { DEPOSIT_REASONS, depositRefundIdempotencyKey, type DepositReason, type DepositRefundMethod } from './contract';
import { depositRefundEventData } from './refund-activities';
import { committedRefundUnits, findDepositRefund, insertDepositRefund, refundsOfDeposit, updateDepositRefund, type DepositRefundRow } from './refund-store';
import { creditedAccountId, getDeposit, moveCaptureState, type Deposit } from './store';

/** Longest reason a merchant may give, characters. */
export const DEPOSIT_REFUND_REASON_MAX = 255;

/** A merchant's refund_deposit request. */
export interface DepositRefundRequest {
  /** The deposit (DEP…). */
  reference: string;
  /** Minor units; 0: everything still refundable. */
  amountUnits: bigint;
  reason: string;
}

/** A refusal of `reason`, named by its reason (the façade words it). */
function refuse(reason: DepositReason, message: string): DomainError {
  return reasonError(DEPOSIT_REASONS, reason, message);
}

/** The deposit named is unknown or another merchant's: one answer for both, on `reference`. */
function unknownDeposit(): DomainError {
  return reasonError(DEPOSIT_REASONS, 'DEPOSIT_NOT_FOUND', 'no deposit of the merchant with this reference', { reference: [problem('not_found')] });
}

function checkRequest(request: DepositRefundRequest): void {
  if ([...request.reason].length > DEPOSIT_REFUND_REASON_MAX) throw invalidFields({ reason: [problem('max_length', DEPOSIT_REFUND_REASON_MAX)] });
  if (hasControlCharacters(request.reason)) throw invalidFields({ reason: [problem('control_characters')] });
  if (request.amountUnits < 0n) throw invalidFields({ amount: [problem('positive')] });
}

/** What the transaction needs resolved beforehand (other connections): the deposit, its preorder, the accounts. */
interface Resolved {
  deposit: Deposit;
  preorder: Preorder | undefined;
  credited: string;
  settlement: string;
  feeRevenue: string;
}

async function resolve(deps: PlatformDeps, merchantId: string, reference: string): Promise<Resolved> {
  const deposit = reference ? await getDeposit(deps.database, reference) : undefined;
  // Another merchant's deposit is answered as unknown: the caller cannot tell them apart.
  if (!deposit || deposit.merchant_id !== merchantId) throw unknownDeposit();
  if (deposit.state !== 'completed') throw refuse('DEPOSIT_REFUND_NOT_COMPLETED', `the deposit is ${deposit.state}`);
  if (deposit.instrument_kind === 'bank_account') throw refuse('DEPOSIT_REFUND_NOT_SUPPORTED', 'bank-account deposits cannot be refunded');
  const preorder = deposit.pre_order_token ? await findPreorder(deps.database, deposit.pre_order_token) : undefined;
  // The seller or user it credited is gone (a refusal, not a fault): there is no account to take the refund from.
  const gone = () => refuse('DEPOSIT_REFUND_INSUFFICIENT_BALANCE', 'the credited account no longer exists');
  const credited = await creditedAccountId(deps, deposit, preorder).catch((error: unknown) => {
    if (error instanceof DomainError) throw gone();
    throw error;
  });
  if (!credited) throw gone();
  const settlement = (await deps.ledger.platformAccount('settlement', deposit.currency)).id;
  const feeRevenue = (await deps.ledger.platformAccount('fee_revenue', deposit.currency)).id;
  return { deposit, preorder, credited, settlement, feeRevenue };
}

/**
 * The refund's amount and method under the deposit's lock (the capture state cannot move meanwhile).
 * @throws DomainError DEPOSIT_REFUND_AMOUNT_EXCEEDS_REFUNDABLE, DEPOSIT_REFUND_PREORDER_WHOLE_ONLY, DEPOSIT_REFUND_PARTIAL_BEFORE_CAPTURE
 */
async function amountAndMethod(trx: Knex.Transaction, deposit: Deposit, request: DepositRefundRequest, preorder: Preorder | undefined) {
  const refundable = deposit.amount_units - (await committedRefundUnits(trx, deposit.reference));
  const amount_units = request.amountUnits > 0n ? request.amountUnits : refundable;
  if (amount_units <= 0n || amount_units > refundable) {
    throw refuse('DEPOSIT_REFUND_AMOUNT_EXCEEDS_REFUNDABLE', `at most ${refundable > 0n ? refundable : 0n} minor units are refundable`);
  }
  const whole = amount_units === deposit.amount_units;
  if (preorder && !whole) throw refuse('DEPOSIT_REFUND_PREORDER_WHOLE_ONLY', 'a deposit that paid a preorder is refunded whole only');
  const beforeCapture = deposit.instrument_kind === 'visa_master' && (deposit.capture_state === null || deposit.capture_state === 'authorized');
  if (beforeCapture && !whole) throw refuse('DEPOSIT_REFUND_PARTIAL_BEFORE_CAPTURE', 'before its capture a card deposit is refunded whole only (a reversal)');
  const method: DepositRefundMethod = beforeCapture ? 'reversal' : 'refund';
  return { amount_units, method, commission_units: preorder ? preorderCommission(preorder) : 0n };
}

/** Holds the refund: the credited account's part and fee_revenue's commission, each towards settlement. */
async function placeHolds(deps: PlatformDeps, trx: Knex.Transaction, refund: DepositRefundRow, resolved: Resolved): Promise<void> {
  const hold = (debit_account_id: string, amount_units: bigint, step: 'hold' | 'hold-commission') =>
    deps.ledger.createPendingTransfer(
      {
        idempotency_key: depositRefundIdempotencyKey(refund.deposit_reference, refund.refund_reference, step),
        debit_account_id,
        credit_account_id: resolved.settlement,
        amount_units,
        description: `refund ${refund.refund_reference} of deposit ${refund.deposit_reference} held`,
        metadata: { refund_reference: refund.refund_reference, reference: refund.deposit_reference },
      },
      trx,
    );
  const credited = refund.amount_units - refund.commission_units;
  try {
    const change: Partial<DepositRefundRow> = {};
    if (credited > 0n) change.hold_transfer_id = (await hold(resolved.credited, credited, 'hold')).id;
    if (refund.commission_units > 0n) change.commission_hold_transfer_id = (await hold(resolved.feeRevenue, refund.commission_units, 'hold-commission')).id;
    await updateDepositRefund(trx, refund.refund_reference, change);
  } catch (error) {
    if (error instanceof DomainError && error.reason === 'INSUFFICIENT_FUNDS') throw refuse('DEPOSIT_REFUND_INSUFFICIENT_BALANCE', 'the credited account has less available than the refund');
    throw error;
  }
}

/** Records the refund, its holds, a reversal's capture state and `refund.created`, in one transaction. */
async function recordRefund(deps: PlatformDeps, merchantId: string, refund_reference: string, request: DepositRefundRequest, resolved: Resolved): Promise<void> {
  await deps.database.transaction(async (trx) => {
    const deposit = (await getDeposit(trx, resolved.deposit.reference, { forUpdate: true }))!;
    const { amount_units, method, commission_units } = await amountAndMethod(trx, deposit, request, resolved.preorder);
    const row = { refund_reference, merchant_id: merchantId, deposit_reference: deposit.reference, method, amount_units, commission_units, currency: deposit.currency, reason: request.reason };
    await insertDepositRefund(trx, row);
    const refund = (await findDepositRefund(trx, refund_reference))!;
    await placeHolds(deps, trx, refund, resolved);
    if (method === 'reversal') await moveCaptureState(trx, deposit.reference, [null, 'authorized'], 'reversing');
    await recordEvent(trx, { owner: { type: 'merchant', id: merchantId }, subject: deposit.reference, type: 'refund.created', data: depositRefundEventData(refund) });
  });
}

/**
 * Starts the refund's workflow (id = its reference) unless one exists or existed, within the request's Temporal
 * deadline.
 * @throws DomainError UNAVAILABLE when it did not start: the refund stays held, and the same request again (its
 *   idempotency key is not completed by an UNAVAILABLE answer) finds the refund by its derived reference and starts it
 */
export async function startDepositRefundWorkflow(deps: PlatformDeps, refund: DepositRefundRow): Promise<void> {
  try {
    await withRequestDeadline(deps, () =>
      startWorkflow(deps.temporal, depositRefundWorkflow, {
        taskQueue: deps.temporal.taskQueue,
        workflowId: refund.refund_reference,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        args: [{ refund_reference: refund.refund_reference }],
        ...paymentSearchAttributes({ owner: { merchant_id: refund.merchant_id }, kind: 'refund', amount_units: refund.amount_units, currency: refund.currency, status: refund.status }),
      }),
    );
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return;
    deps.logger.warn({ refund_reference: refund.refund_reference, err: (error as Error).message }, 'deposit refund workflow not started; the refund stays held');
    throw reasonError(COMMON_REASONS, 'UNAVAILABLE', 'the refund is held but its workflow did not start: send the same request again');
  }
}

/**
 * Reconciliation's repair of a deposit refund held with no workflow: starts it (a no-op for a decided refund).
 * @throws DomainError UNAVAILABLE when Temporal does not take the start (the next run tries again)
 */
export async function restartDepositRefund(deps: PlatformDeps, refund_reference: string): Promise<void> {
  const refund = await findDepositRefund(deps.database, refund_reference);
  if (refund?.status === 'held') await startDepositRefundWorkflow(deps, refund);
}

/**
 * refund_deposit: refunds (part of) the merchant's completed deposit. `ownKey` (the request's idempotency key, see
 * src/idempotency) derives the refund reference, so a re-run after a crash finds the refund it recorded.
 * @returns the refund (status `held` when new)
 * @throws DomainError VALIDATION_FAILED (reason, amount), DEPOSIT_NOT_FOUND (unknown or another merchant's),
 *   DEPOSIT_REFUND_NOT_COMPLETED, DEPOSIT_REFUND_NOT_SUPPORTED (bank account), DEPOSIT_REFUND_AMOUNT_EXCEEDS_REFUNDABLE,
 *   DEPOSIT_REFUND_PREORDER_WHOLE_ONLY, DEPOSIT_REFUND_PARTIAL_BEFORE_CAPTURE, DEPOSIT_REFUND_INSUFFICIENT_BALANCE;
 *   nothing is held or recorded for any of them. UNAVAILABLE when the refund is held but its workflow did not start
 *   (the same request again starts it)
 */
export async function refundDeposit(deps: PlatformDeps, merchantId: string, request: DepositRefundRequest, ownKey?: string): Promise<DepositRefundRow> {
  checkRequest(request);
  const refund_reference = ownKey ? referenceFromKey('DRF', ownKey) : newReference('DRF');
  let refund = await findDepositRefund(deps.database, refund_reference);
  if (!refund) {
    await recordRefund(deps, merchantId, refund_reference, request, await resolve(deps, merchantId, request.reference));
    refund = (await findDepositRefund(deps.database, refund_reference))!;
  }
  if (refund.status === 'held') await startDepositRefundWorkflow(deps, refund);
  return refund;
}

/**
 * refund_deposit_status: one refund of the merchant (`refund_reference`), or every refund of its deposit
 * (`reference`, newest first), with what is still refundable of the deposit.
 * @throws DomainError DEPOSIT_REFUND_NOT_FOUND, DEPOSIT_NOT_FOUND (unknown or another merchant's), VALIDATION_FAILED (neither named)
 */
export async function depositRefunds(
  deps: PlatformDeps,
  merchantId: string,
  query: { refund_reference: string; reference: string },
): Promise<{ refunds: DepositRefundRow[]; refundable_units: bigint; currency: string }> {
  let reference = query.reference;
  let refunds: DepositRefundRow[] | undefined;
  if (query.refund_reference) {
    const refund = await findDepositRefund(deps.database, query.refund_reference);
    if (!refund || refund.merchant_id !== merchantId) {
      throw reasonError(DEPOSIT_REASONS, 'DEPOSIT_REFUND_NOT_FOUND', 'no refund of the merchant with this reference', { refund_reference: [problem('not_found')] });
    }
    reference = refund.deposit_reference;
    refunds = [refund];
  }
  if (!reference) throw invalidFields({ refund_reference: [problem('required_without', 'refund_reference', 'reference')] });
  const deposit = await getDeposit(deps.database, reference);
  if (!deposit || deposit.merchant_id !== merchantId) throw unknownDeposit();
  refunds ??= await refundsOfDeposit(deps.database, reference);
  const refundable = deposit.state === 'completed' && deposit.instrument_kind !== 'bank_account' ? deposit.amount_units - (await committedRefundUnits(deps.database, reference)) : 0n;
  return { refunds, refundable_units: refundable > 0n ? refundable : 0n, currency: deposit.currency };
}
