/**
 * The refund flow's service side (docs/refunds.md): a merchant's refund of its settled payin created (validated,
 * recorded, held on its wallet and announced in one transaction; its RefundWorkflow started after the commit, by
 * reference), read back, and the provider's signed decision recorded and handed to the workflow.
 *
 * Refundable amount, on the merchant's refund fee setting when the refund is created (stored on the refund): `kept`
 * (default), what the payin credited to the merchant (its settlement and additional payments, each less the payin fee
 * taken from it) less its refunds succeeded or still held: the platform keeps the fee, and a refund debits the wallet
 * by the refunded amount only. `returned`, what was paid less those refunds: the refund's share of the fee
 * (store.ts `feeShareOf`) is held on fee_revenue (`<ref>:hold-fee`) and the rest on the wallet; the payer receives
 * the refund's amount either way.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, WorkflowNotFoundError } from '@temporalio/client';
import { createHash, randomUUID } from 'node:crypto';
import { upstreamRefundUrl } from '../../config';
import { randomAlphanumeric } from '../../crypto/secrets';
import { DomainError, invalidFields, reasonError, type FieldViolations } from '../../errors';
import { recordEvent } from '../../events';
import { problem } from '../../field-problems';
import { IDEMPOTENCY_REASONS } from '../../idempotency/reasons';
import type { PlatformDeps } from '../../platform-deps';
import { startWorkflow } from '../../temporal/client';
import { withRequestDeadline } from '../../temporal/deadline';
import { paymentSearchAttributes } from '../../temporal/search-attributes';
import { hasControlCharacters } from '../../text';
import { refundWorkflow } from '../../../workflows/refund';
import { placeRefundHold, refundEventData } from './activities';
import { decidedSignal, REFUND_REASONS, type RefundWorkflowInput } from './contract';
import {
  feeShareOf,
  findRefund,
  findRefundByKey,
  insertRefund,
  insertRefundNotification,
  lockMerchantPayin,
  merchantRefundFee,
  refundBasis,
  refundableOf,
  updateRefund,
  type RefundRow,
} from './store';

export { createRefundActivities, type RefundProvider, type RefundProviderOutcome } from './activities';
export { listRefunds, overdueRefunds, orphanRefundNotifications, findRefund, type RefundRow, type RefundNotificationRow } from './store';

/** A TRON address (USDT TRC-20): `T` and 33 base58 characters. */
const TRON_ADDRESS = /^T[1-9A-HJ-NP-Za-km-z]{33}$/;
/** Longest reason a merchant may give, characters. */
export const REFUND_REASON_MAX = 255;

/** A merchant's refund request (Area B). Amounts in minor units. */
export interface RefundRequest {
  /** The payin, by its invoice_reference … */
  invoice_reference?: string;
  /** … or by the merchant's out_trade_no (its latest live payin). */
  out_trade_no?: string;
  /** Minor units to refund; absent: everything still refundable. */
  amount_units?: bigint;
  /** Why (≤ 255 characters, no control characters; may be empty). */
  reason: string;
  /** The payer's crypto address the money goes back to (TRON, for USDT TRC-20). */
  address: string;
}

/** `RFD-` + 20 uppercase letters and digits. */
export function newRefundReference(): string {
  return `RFD-${randomAlphanumeric(20)}`;
}

/** The refund workflow's input for a refund (its decision timeout: REFUND_DECISION_TIMEOUT_SECONDS). */
export function refundWorkflowInput(deps: PlatformDeps, refund_reference: string): RefundWorkflowInput {
  return { refund_reference, decision_timeout_seconds: deps.config.REFUND_DECISION_TIMEOUT_SECONDS };
}

/**
 * Starts the refund's workflow (id = its reference) unless one exists or existed. Outside any transaction.
 * @param recorded the refund's row when the caller has it as committed (spares reading it again)
 * @throws what the Temporal client throws (the refund stays held; reconciliation starts it again)
 */
export async function startRefundWorkflow(deps: PlatformDeps, refund_reference: string, recorded?: RefundRow): Promise<void> {
  // The search attributes an operator filters the Web UI by (owner, kind, amount, currency, status), from the row.
  const refund = recorded?.refund_reference === refund_reference ? recorded : await findRefund(deps.database, refund_reference);
  try {
    await withRequestDeadline(deps, () =>
      startWorkflow(deps.temporal, refundWorkflow, {
        taskQueue: deps.temporal.taskQueue,
        workflowId: refund_reference,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        args: [refundWorkflowInput(deps, refund_reference)],
        ...(refund
          ? paymentSearchAttributes({ owner: { merchant_id: refund.merchant_id }, kind: 'refund', amount_units: refund.amount_units, currency: refund.currency, status: refund.status })
          : {}),
      }),
    );
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** startRefundWorkflow after a commit: a failure is logged (the refund stays held, reconciliation reports it). */
async function startAfterCommit(deps: PlatformDeps, refund: RefundRow): Promise<void> {
  const { refund_reference } = refund;
  try {
    await startRefundWorkflow(deps, refund_reference, refund);
  } catch (error) {
    deps.logger.warn({ refund_reference, err: (error as Error).message }, 'refund workflow not started; the refund stays held');
  }
}

function checkRequest(request: RefundRequest): void {
  const fields: FieldViolations = {};
  if (!request.invoice_reference && !request.out_trade_no) fields.out_trade_no = [problem('required')];
  if (!TRON_ADDRESS.test(request.address ?? '')) fields.address = [request.address ? problem('invalid') : problem('required')];
  if ([...(request.reason ?? '')].length > REFUND_REASON_MAX) fields.reason = [problem('max_length', REFUND_REASON_MAX)];
  else if (hasControlCharacters(request.reason ?? '')) fields.reason = [problem('control_characters')];
  if (request.amount_units !== undefined && request.amount_units <= 0n) fields.amount = [problem('positive')];
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
}

/** What a repeated Idempotency-Key must match: the request's parameters, in one digest. */
function fingerprintOf(request: RefundRequest): string {
  const parameters = [request.invoice_reference ?? null, request.out_trade_no ?? null, request.amount_units?.toString() ?? null, request.reason, request.address];
  return createHash('sha256').update(JSON.stringify(parameters)).digest('hex');
}

/** The refund an Idempotency-Key already created, or undefined. @throws IDEMPOTENCY_KEY_REUSED with other parameters */
async function replayed(deps: PlatformDeps, merchant_id: string, key: string, fingerprint: string): Promise<RefundRow | undefined> {
  const first = await findRefundByKey(deps.database, merchant_id, key);
  if (first && first.request_fingerprint !== fingerprint) throw reasonError(IDEMPOTENCY_REASONS, 'IDEMPOTENCY_KEY_REUSED', 'the Idempotency-Key was used with other parameters');
  return first;
}

const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505';

/**
 * Records a refund, holds it and announces it, in one transaction. Every payment of the merchant waits on its
 * wallet's lock, which the hold takes until the commit: so the refund's row is written first, naming the hold's id
 * chosen beforehand, and only the event (the transaction's last write: it locks the merchant's sequence) follows the
 * hold. @returns the refund as recorded
 */
async function recordRefund(deps: PlatformDeps, merchant_id: string, request: RefundRequest, request_key: string | null, fingerprint: string): Promise<RefundRow> {
  const refund_reference = newRefundReference();
  return deps.database.transaction(async (trx) => {
    const payin = await lockMerchantPayin(trx, merchant_id, request);
    if (!payin) throw reasonError(REFUND_REASONS, 'REFUND_PAYIN_NOT_FOUND', 'no payin of the merchant with this reference');
    if (payin.status !== 'success') throw reasonError(REFUND_REASONS, 'REFUND_PAYIN_NOT_SETTLED', 'the payin is not settled');
    // The setting in force now is the refund's for good (stored on its row).
    const refund_fee = await merchantRefundFee(trx, merchant_id);
    const basis = await refundBasis(trx, payin.invoice_reference);
    const refundable = refundableOf(basis, refund_fee);
    const amount_units = request.amount_units ?? refundable;
    if (amount_units <= 0n || amount_units > refundable) {
      throw reasonError(REFUND_REASONS, 'REFUND_AMOUNT_EXCEEDS_REFUNDABLE', `at most ${refundable > 0n ? refundable : 0n} minor units are refundable`);
    }
    const row = {
      refund_reference,
      merchant_id,
      invoice_reference: payin.invoice_reference,
      out_trade_no: payin.out_trade_no,
      trx_ref: payin.trx_ref ?? payin.invoice_reference,
      amount_units,
      currency: payin.currency,
      address: request.address,
      reason: request.reason ?? '',
      refund_fee,
      fee_units: feeShareOf(basis, refund_fee, amount_units),
      request_key,
      request_fingerprint: request_key ? fingerprint : null,
      decision_due_at: new Date(Date.now() + deps.config.REFUND_DECISION_TIMEOUT_SECONDS * 1000),
    };
    const created = await insertRefund(trx, { ...row, pending_transfer_id: randomUUID() });
    try {
      // `direct`: an error here rolls the whole request back (nothing recorded, nothing held).
      const held = await placeRefundHold(deps, trx, created, 'direct', created.pending_transfer_id!);
      // A fresh reference's key: never a replay of another hold (which would name another id).
      if (held.pending_transfer_id !== created.pending_transfer_id) throw new Error(`refund ${refund_reference}: hold ${held.pending_transfer_id} is not the one recorded`);
      // The fee share's hold (after the wallet's, whose id the row names already); recorded in the same transaction.
      if (held.fee_pending_transfer_id) {
        await updateRefund(trx, refund_reference, { fee_pending_transfer_id: held.fee_pending_transfer_id });
        created.fee_pending_transfer_id = held.fee_pending_transfer_id;
      }
    } catch (error) {
      if (error instanceof DomainError && error.reason === 'INSUFFICIENT_FUNDS') {
        throw reasonError(REFUND_REASONS, 'REFUND_INSUFFICIENT_BALANCE', 'the wallet has less available than the refund');
      }
      throw error;
    }
    await recordEvent(trx, { owner: { type: 'merchant', id: merchant_id }, subject: payin.invoice_reference, type: 'refund.created', data: refundEventData(created) });
    return created;
  });
}

/**
 * Creates a refund of the merchant's settled payin: checks the request, the refundable amount and the wallet, records
 * the refund with its hold (`<ref>:hold`) and its `refund.created` event in one transaction, then starts its
 * RefundWorkflow. The same `request_key` (Idempotency-Key) with the same parameters answers the first refund.
 * @returns the refund (status `held` when new)
 * @throws DomainError VALIDATION_FAILED (out_trade_no, address, reason, amount), REFUND_PROVIDER_NOT_CONFIGURED,
 *   REFUND_PAYIN_NOT_FOUND, REFUND_PAYIN_NOT_SETTLED, REFUND_AMOUNT_EXCEEDS_REFUNDABLE, REFUND_INSUFFICIENT_BALANCE,
 *   IDEMPOTENCY_KEY_REUSED; nothing is held or recorded for any of them
 */
export async function createRefund(deps: PlatformDeps, merchant_id: string, request: RefundRequest, request_key?: string): Promise<RefundRow> {
  checkRequest(request);
  if (!upstreamRefundUrl(deps.config)) throw reasonError(REFUND_REASONS, 'REFUND_PROVIDER_NOT_CONFIGURED', 'no refund provider is configured');
  const fingerprint = fingerprintOf(request);
  let refund = request_key ? await replayed(deps, merchant_id, request_key, fingerprint) : undefined;
  if (!refund) {
    try {
      refund = await recordRefund(deps, merchant_id, request, request_key ?? null, fingerprint);
    } catch (error) {
      // The same key at the same time: the other request recorded it.
      const first = request_key && isUniqueViolation(error) ? await replayed(deps, merchant_id, request_key, fingerprint) : undefined;
      if (!first) throw error;
      refund = first;
    }
  }
  // A replay starts a workflow that did not start the first time (a no-op when it did).
  if (refund.status === 'held') await startAfterCommit(deps, refund);
  return refund;
}

/** The caller's refund. @throws DomainError REFUND_NOT_FOUND (another merchant's refund is not found either) */
export async function refundOf(deps: PlatformDeps, merchant_id: string, refund_reference: string): Promise<RefundRow> {
  const refund = await findRefund(deps.database, refund_reference);
  if (!refund || refund.merchant_id !== merchant_id) throw reasonError(REFUND_REASONS, 'REFUND_NOT_FOUND', 'no refund with this reference');
  return refund;
}

/** A signed refund notification, opened by the notification route (src/flows/payin/upstream-refunds.ts). */
export interface VerifiedRefundNotification {
  refund_reference: string;
  status: 'refund_succeeded' | 'refund_failed';
  amount_units: bigint;
  refund_trx_ref?: string;
  failure_reason?: string;
}

/**
 * Records a verified refund notification (the authority the RefundWorkflow's decision rests on) and signals the
 * refund's workflow. A notification of an unknown refund is recorded too (reconciliation reports it); one whose amount
 * is not the refund's is refused and recorded nowhere.
 * @returns whether this call recorded it, and the refund's status as it is now ('' when unknown)
 * @throws DomainError REFUND_NOTIFICATION_MISMATCH
 */
export async function receiveRefundNotification(
  deps: PlatformDeps,
  notification: VerifiedRefundNotification,
  raw_body: string,
): Promise<{ applied: boolean; refund?: RefundRow }> {
  const refund = await findRefund(deps.database, notification.refund_reference);
  if (refund && refund.amount_units !== notification.amount_units) {
    throw reasonError(REFUND_REASONS, 'REFUND_NOTIFICATION_MISMATCH', 'the notification names another amount than the refund');
  }
  const recorded = await insertRefundNotification(deps.database, {
    refund_reference: notification.refund_reference,
    status: notification.status,
    amount_units: notification.amount_units,
    refund_trx_ref: notification.refund_trx_ref ?? null,
    failure_reason: notification.failure_reason ?? null,
    raw_body,
  });
  if (!refund) {
    deps.logger.warn({ refund_reference: notification.refund_reference }, 'refund notification of an unknown refund recorded');
    return { applied: false };
  }
  if (refund.status === 'held' || refund.status === 'pending') {
    try {
      await deps.temporal.client.workflow.getHandle(refund.refund_reference).signal(decidedSignal, { status: notification.status });
    } catch (error) {
      // No run (not started yet, or gone): the run that starts reads the record; reconciliation reports it meanwhile.
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      deps.logger.warn({ refund_reference: refund.refund_reference }, 'refund notification recorded; no running workflow to tell');
    }
  }
  return { applied: recorded, refund: (await findRefund(deps.database, refund.refund_reference)) ?? refund };
}
