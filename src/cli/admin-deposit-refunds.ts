/**
 * `payments admin deposit-refunds ...` (docs/refunds.md "Area C", "Operators") over the DepositService (Connect,
 * `RPC_URL`, the admin scope): the operators' view of Area C refunds of deposits.
 *
 *   admin deposit-refunds list [--merchant-id ID] [--limit N] [--json]   newest first (every merchant's without an id)
 *   admin deposit-refunds show DRF… [--json]                             one refund (DEPOSIT_REFUND_NOT_FOUND: exit 1)
 *
 * With `--json` prints exactly one JSON object; a failure exits 1 with one line on stderr.
 */
import type { Command } from 'commander';
import type { DepositRefund } from '../gen/payments/deposit/v1/deposit_pb';
import { runAdminCall } from './admin-webhooks';

/** The JSON shape printed for one deposit refund (snake_case; amounts in minor units as decimal strings). */
export function depositRefundJson(refund: DepositRefund) {
  return {
    refund_reference: refund.refundReference,
    merchant_id: refund.merchantId,
    deposit_reference: refund.reference,
    method: refund.method,
    status: refund.status,
    amount_units: refund.amountUnits.toString(),
    commission_units: refund.commissionUnits.toString(),
    currency: refund.currency,
    reason: refund.reason,
    acquirer_refund_id: refund.acquirerRefundId || null,
    failure_reason: refund.failureReason || null,
    created_at: refund.createdAt,
    decided_at: refund.decidedAt || null,
  };
}

/** Adds `deposit-refunds list` and `deposit-refunds show` under the existing `admin` command of `program`. */
export function registerDepositRefundCommands(program: Command): void {
  const admin = program.commands.find((command) => command.name() === 'admin') ?? program.command('admin');
  const refunds = admin.command('deposit-refunds').description('refunds of Area C deposits (docs/refunds.md "Area C")');
  refunds
    .command('list')
    .description('deposit refunds, newest first')
    .option('--merchant-id <id>', 'only this merchant\'s')
    .option('--limit <n>', 'at most this many, 1 to 500', '100')
    .option('--json', 'print one JSON object')
    .action((options: { merchantId?: string; limit: string; json?: boolean }) =>
      runAdminCall(async (clients) => {
        if (!/^\d{1,3}$/.test(options.limit) || Number(options.limit) < 1 || Number(options.limit) > 500) throw new Error(`--limit must be 1 to 500 (got ${options.limit})`);
        const answer = await clients.deposit.operatorListDepositRefunds({ merchantId: options.merchantId ?? '', limit: Number(options.limit) });
        return { refunds: answer.refunds.map(depositRefundJson) };
      }, Boolean(options.json)),
    );
  refunds
    .command('show')
    .description('one deposit refund')
    .argument('<refund_reference>', 'the refund\'s reference (DRF…)')
    .option('--json', 'print one JSON object')
    .action((refund_reference: string, options: { json?: boolean }) =>
      runAdminCall(async (clients) => {
        const answer = await clients.deposit.operatorShowDepositRefund({ refundReference: refund_reference });
        return { refund: depositRefundJson(answer.refund!) };
      }, Boolean(options.json)),
    );
}
