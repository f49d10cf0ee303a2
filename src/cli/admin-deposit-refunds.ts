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
import { registerListShowCommands } from './admin-list-show';

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

/** Adds `deposit-refunds list` and `deposit-refunds show` under the existing `admin` command of `program` (./admin-list-show.ts). */
export function registerDepositRefundCommands(program: Command): void {
  registerListShowCommands(program, {
    name: 'deposit-refunds',
    description: 'refunds of Area C deposits (docs/refunds.md "Area C")',
    listDescription: 'deposit refunds, newest first',
    showDescription: 'one deposit refund',
    referenceHelp: 'the refund\'s reference (DRF…)',
    plural: 'refunds',
    singular: 'refund',
    list: async (clients, merchantId, limit) => (await clients.deposit.operatorListDepositRefunds({ merchantId, limit })).refunds.map(depositRefundJson),
    show: async (clients, refundReference) => depositRefundJson((await clients.deposit.operatorShowDepositRefund({ refundReference })).refund!),
  });
}
