/**
 * `payments admin refunds ...` (docs/refunds.md "Operators") over the RefundService (Connect, `RPC_URL`, the admin
 * scope):
 *
 *   admin refunds list [--merchant-id ID] [--limit N] [--json]   refunds newest first (every merchant's without an id)
 *   admin refunds show REFUND_REFERENCE [--json]                 one refund
 *
 * With `--json` prints exactly one JSON object; a failure exits 1 with one line on stderr.
 */
import type { Command } from 'commander';
import type { Refund } from '../gen/payments/refund/v1/refund_pb';
import { registerListShowCommands } from './admin-list-show';

/** The JSON shape printed for one refund (snake_case; amounts in minor units as decimal strings). */
export function refundJson(refund: Refund) {
  return {
    refund_reference: refund.refundReference,
    merchant_id: refund.merchantId,
    invoice_reference: refund.invoiceReference,
    out_trade_no: refund.outTradeNo,
    amount_units: refund.amountUnits.toString(),
    currency: refund.currency,
    status: refund.status,
    address: refund.address,
    reason: refund.reason,
    refund_trx_ref: refund.refundTrxRef || null,
    failure_reason: refund.failureReason || null,
    created_at: refund.createdAt,
    decided_at: refund.decidedAt || null,
  };
}

/** Adds `refunds list` and `refunds show` under the existing `admin` command of `program` (./admin-list-show.ts). */
export function registerRefundCommands(program: Command): void {
  registerListShowCommands(program, {
    name: 'refunds',
    description: 'refunds of Area B payins (docs/refunds.md)',
    listDescription: 'refunds, newest first',
    showDescription: 'one refund',
    referenceHelp: 'the refund\'s reference (RFD-…)',
    plural: 'refunds',
    singular: 'refund',
    list: async (clients, merchantId, limit) => (await clients.refund.listRefunds({ merchantId, limit })).refunds.map(refundJson),
    show: async (clients, refundReference) => refundJson((await clients.refund.showRefund({ refundReference })).refund!),
  });
}
