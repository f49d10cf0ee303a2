/**
 * RefundService (docs/refunds.md): a merchant's refund of its settled payin created (validated, recorded, held on its
 * wallet and announced in one transaction; its RefundWorkflow started after the commit, by reference) and read back,
 * over Connect, and the operators' views. The merchant's calls carry its Area B API key, checked by
 * `deps.merchantAuth.requireApiKey` (src/merchant-auth); a refund is found only for the merchant that owns it
 * (another merchant's answers REFUND_NOT_FOUND, never more). The provider's signed decision is ./notifications.ts.
 *
 * Refundable amount, on the merchant's refund fee setting when the refund is created (stored on the refund): `kept`
 * (default), what the payin credited to the merchant (its settlement and additional payments, each less the payin fee
 * taken from it) less its refunds succeeded or still held: the platform keeps the fee, and a refund debits the wallet
 * by the refunded amount only. `returned`, what was paid less those refunds: the refund's share of the fee
 * (store.ts `feeShareOf`) is held on fee_revenue (`<ref>:hold-fee`) and the rest on the wallet; the payer receives
 * the refund's amount either way.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import { createHash, randomUUID } from 'node:crypto';
import { retryingDeadlocks } from '../../db/knex';
import { randomAlphanumeric } from '../../crypto/secrets';
import { DomainError, invalidFields, reasonError, type FieldViolations } from '../../errors';
import { recordEvent } from '../../events';
import { problem } from '../../field-problems';
import type { RefundService } from '../../gen/payments/refund/v1/refund_pb';
import { IDEMPOTENCY_REASONS } from '../../idempotency/reasons';
import type { PlatformDeps } from '../../platform-deps';
import { startWorkflow } from '../../temporal/client';
import { withRequestDeadline } from '../../temporal/deadline';
import { paymentSearchAttributes } from '../../temporal/search-attributes';
import { hasControlCharacters } from '../../text';
import { refundWorkflow } from '../../../workflows/refund';
import { placeRefundHold, refundEventData } from './activities';
import { REFUND_REASONS, type RefundWorkflowInput } from './contract';
import {
  feeShareOf,
  findRefund,
  findRefundByKey,
  insertRefund,
  listRefunds,
  lockMerchantPayin,
  merchantRefundFee,
  refundBasis,
  refundableOf,
  updateRefund,
  type RefundRow,
} from './store';

export { createRefundActivities } from './activities';
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
          ? paymentSearchAttributes({
              owner: { merchant_id: refund.merchant_id },
              kind: 'refund',
              amount_units: refund.amount_units,
              currency: refund.currency,
              status: refund.status,
              order_id: refund.out_trade_no,
            })
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
 * chosen beforehand, and only the event (the transaction's last write) follows the
 * hold. @returns the refund as recorded
 */
async function recordRefund(deps: PlatformDeps, merchant_id: string, request: RefundRequest, request_key: string | null, fingerprint: string): Promise<RefundRow> {
  const refund_reference = newRefundReference();
  // Run again when PostgreSQL picked it as a deadlock's victim: its two holds lock the wallet, then the fee's account.
  return retryingDeadlocks(() => deps.database.transaction(async (trx) => {
    const payin = await lockMerchantPayin(trx, merchant_id, request);
    if (!payin) throw reasonError(REFUND_REASONS, 'REFUND_PAYIN_NOT_FOUND', 'no payin of the merchant with this reference');
    if (payin.status !== 'success') throw reasonError(REFUND_REASONS, 'REFUND_PAYIN_NOT_SETTLED', 'the payin is not settled');
    // The setting in force now is the refund's for good (stored on its row).
    const refund_fee = await merchantRefundFee(trx, merchant_id);
    const basis = await refundBasis(deps.ledger, trx, payin.invoice_reference);
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
      const held = await placeRefundHold(deps, trx, created, 'direct', created.pending_transfer_id!, payin);
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
  }));
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
  if (!deps.upstream) throw reasonError(REFUND_REASONS, 'REFUND_PROVIDER_NOT_CONFIGURED', 'no refund provider is configured');
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

// ---- The RPC ----

/** Most refunds one answer lists. */
const LIST_MAX = 500;
const LIST_DEFAULT = 100;

/** An Idempotency-Key: 1 to 255 visible ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** A refund as the RPC answers it; `merchant_id` only in operators' answers. */
export function refundMessage(row: RefundRow, operator = false) {
  return {
    refundReference: row.refund_reference,
    invoiceReference: row.invoice_reference,
    outTradeNo: row.out_trade_no,
    amountUnits: row.amount_units,
    currency: row.currency,
    status: row.status,
    address: row.address,
    reason: row.reason,
    refundTrxRef: row.refund_trx_ref ?? '',
    failureReason: row.failure_reason ?? '',
    createdAt: row.created_at.toISOString(),
    decidedAt: row.decided_at ? row.decided_at.toISOString() : '',
    merchantId: operator ? row.merchant_id : '',
  };
}

/** The merchant's payin named by out_trade_no or invoice_reference (latest live one for out_trade_no). */
async function payinOf(deps: PlatformDeps, merchant_id: string, name: { out_trade_no: string; invoice_reference: string }) {
  const query = deps.database('payins').select('invoice_reference').where({ merchant_id }).whereNot({ status: 'failed' });
  if (name.invoice_reference) query.where({ invoice_reference: name.invoice_reference });
  else query.where({ out_trade_no: name.out_trade_no }).orderBy('created_at', 'desc');
  return (await query.first()) as { invoice_reference: string } | undefined;
}

export function createRefundService(deps: PlatformDeps): ServiceImpl<typeof RefundService> {
  const authenticate = deps.merchantAuth.requireApiKey;
  return {
    async createRefund(request, context) {
      const merchant = await authenticate(request.apiKey, context);
      // Required, not optional: a refund moves money, and a client's retry without a key would refund twice.
      if (!IDEMPOTENCY_KEY.test(request.idempotencyKey)) {
        throw reasonError(IDEMPOTENCY_REASONS, 'IDEMPOTENCY_KEY_INVALID', 'the Idempotency-Key must be 1 to 255 visible ASCII characters');
      }
      const refund = await createRefund(
        deps,
        merchant.id,
        {
          ...(request.invoiceReference ? { invoice_reference: request.invoiceReference } : {}),
          ...(request.outTradeNo ? { out_trade_no: request.outTradeNo } : {}),
          ...(request.amountUnits !== undefined ? { amount_units: request.amountUnits } : {}),
          reason: request.reason,
          address: request.address,
        },
        request.idempotencyKey || undefined,
      );
      return { refund: refundMessage(refund) };
    },

    async getRefundStatus(request, context) {
      const merchant = await authenticate(request.apiKey, context);
      if (request.refundReference) return { refunds: [refundMessage(await refundOf(deps, merchant.id, request.refundReference))], refundableUnits: 0n };
      if (!request.outTradeNo && !request.invoiceReference) throw invalidFields({ out_trade_no: [problem('required')] });
      const payin = await payinOf(deps, merchant.id, { out_trade_no: request.outTradeNo, invoice_reference: request.invoiceReference });
      if (!payin) throw reasonError(REFUND_REASONS, 'REFUND_PAYIN_NOT_FOUND', 'no payin of the merchant with this reference');
      const refunds = await listRefunds(deps.database, { merchant_id: merchant.id, invoice_reference: payin.invoice_reference, limit: LIST_MAX });
      // Under the merchant's setting now: what a refund asked now could take.
      const refundable = refundableOf(await refundBasis(deps.ledger, deps.database, payin.invoice_reference), await merchantRefundFee(deps.database, merchant.id));
      return { refunds: refunds.map((row) => refundMessage(row)), refundableUnits: refundable > 0n ? refundable : 0n };
    },

    async listRefunds(request) {
      const rows = await listRefunds(deps.database, { merchant_id: request.merchantId || undefined, limit: request.limit || LIST_DEFAULT });
      return { refunds: rows.map((row) => refundMessage(row, true)) };
    },

    async showRefund(request) {
      const row = await findRefund(deps.database, request.refundReference);
      if (!row) throw reasonError(REFUND_REASONS, 'REFUND_NOT_FOUND', 'no refund with this reference');
      return { refund: refundMessage(row, true) };
    },
  };
}
