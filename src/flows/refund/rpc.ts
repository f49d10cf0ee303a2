/**
 * RefundService (docs/refunds.md): the merchant's refunds of its settled payins over Connect, and the operators'
 * views. The merchant's calls carry its Area B API key, checked by the composition root's shared API-key check; a
 * refund is found only for the merchant that owns it (another merchant's answers REFUND_NOT_FOUND, never more).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { invalidFields, reasonError } from '../../errors';
import { problem } from '../../field-problems';
import type { RefundService } from '../../gen/payments/refund/v1/refund_pb';
import { IDEMPOTENCY_REASONS } from '../../idempotency/reasons';
import type { PlatformDeps } from '../../platform-deps';
import { REFUND_REASONS } from './contract';
import { createRefund, refundOf } from './service';
import { findRefund, listRefunds, merchantRefundFee, refundBasis, refundableOf, type RefundRow } from './store';

/** The merchant an Area B API key belongs to (the PayinService's check, shared by the composition root). */
export type RefundApiKeyCheck = (api_key: string, context: HandlerContext) => Promise<{ id: string }>;

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

export function createRefundService(deps: PlatformDeps, authenticate: RefundApiKeyCheck): ServiceImpl<typeof RefundService> {
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
      const refundable = refundableOf(await refundBasis(deps.database, payin.invoice_reference), await merchantRefundFee(deps.database, merchant.id));
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
