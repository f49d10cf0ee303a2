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
import { runAdminCall } from './admin-webhooks';

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

/** Adds `refunds list` and `refunds show` under the existing `admin` command of `program`. */
export function registerRefundCommands(program: Command): void {
  const admin = program.commands.find((command) => command.name() === 'admin') ?? program.command('admin');
  const refunds = admin.command('refunds').description('refunds of Area B payins (docs/refunds.md)');
  refunds
    .command('list')
    .description('refunds, newest first')
    .option('--merchant-id <id>', 'only this merchant\'s')
    .option('--limit <n>', 'at most this many, 1 to 500', '100')
    .option('--json', 'print one JSON object')
    .action((options: { merchantId?: string; limit: string; json?: boolean }) =>
      runAdminCall(async (clients) => {
        if (!/^\d{1,3}$/.test(options.limit) || Number(options.limit) < 1 || Number(options.limit) > 500) throw new Error(`--limit must be 1 to 500 (got ${options.limit})`);
        const answer = await clients.refund.listRefunds({ merchantId: options.merchantId ?? '', limit: Number(options.limit) });
        return { refunds: answer.refunds.map(refundJson) };
      }, Boolean(options.json)),
    );
  refunds
    .command('show')
    .description('one refund')
    .argument('<refund_reference>', 'the refund\'s reference (RFD-…)')
    .option('--json', 'print one JSON object')
    .action((refund_reference: string, options: { json?: boolean }) =>
      runAdminCall(async (clients) => {
        const answer = await clients.refund.showRefund({ refundReference: refund_reference });
        return { refund: refundJson(answer.refund!) };
      }, Boolean(options.json)),
    );
}
