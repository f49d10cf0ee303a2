/**
 * `payments admin merchant policy` (docs/refunds.md "Outcome policies") over the AdminService (Connect, `RPC_URL`,
 * the admin scope; a change is audited):
 *
 *   admin merchant policy --merchant-id ID [--underpaid credit|refund] [--overpaid credit|refund-excess]
 *     [--late credit|refund] [--tolerance-percent P] [--refund-fee kept|returned] [--json]
 *
 * No option: shows the merchant's policy (the default, `stored: false`, when none is set). Any option: sets those
 * fields, keeps the others, and shows the policy as stored. A bad value is refused by the service (VALIDATION_FAILED
 * naming the field), nothing changed; the command exits 1 with one line on stderr.
 */
import type { Command } from 'commander';
import type { MerchantOutcomePolicy } from '../gen/payments/admin/v1/admin_pb';
import { runAdminCall } from './admin-webhooks';

/** The JSON shape printed for a policy (snake_case; the rule values as the service names them). */
export function outcomePolicyJson(policy: MerchantOutcomePolicy) {
  return {
    merchant_id: policy.merchantId,
    underpaid: policy.underpaid,
    overpaid: policy.overpaid,
    late: policy.late,
    tolerance_percent: policy.tolerancePercent,
    refund_fee: policy.refundFee,
    stored: policy.stored,
    updated_at: policy.updatedAt || null,
    updated_by: policy.updatedBy || null,
  };
}

interface PolicyOptions {
  merchantId: string;
  underpaid?: string;
  overpaid?: string;
  late?: string;
  tolerancePercent?: string;
  refundFee?: string;
  json?: boolean;
}

/** Adds `policy` under the existing `admin merchant` command of `program` (registered by ./admin.ts). */
export function registerPolicyCommands(program: Command): void {
  const admin = program.commands.find((command) => command.name() === 'admin') ?? program.command('admin');
  const merchant = admin.commands.find((command) => command.name() === 'merchant') ?? admin.command('merchant');
  merchant
    .command('policy')
    .description("show or set a merchant's payment-outcome policy (docs/refunds.md \"Outcome policies\")")
    .requiredOption('--merchant-id <id>', 'merchant id')
    .option('--underpaid <rule>', 'credit | refund (the whole credited payment)')
    .option('--overpaid <rule>', 'credit | refund-excess (paid − invoice)')
    .option('--late <rule>', 'credit | refund (the whole late payment)')
    .option('--tolerance-percent <percent>', 'percent of the invoice counted as matching, 0 to 100, at most 2 decimals')
    .option('--refund-fee <setting>', 'kept | returned (whether a refund returns the payin fee\'s share)')
    .option('--json', 'print one JSON object')
    .action((options: PolicyOptions) =>
      runAdminCall(async (clients) => {
        const change = {
          underpaid: options.underpaid,
          // The CLI's spelling (refund-excess) is the service's refund_excess.
          overpaid: options.overpaid === 'refund-excess' ? 'refund_excess' : options.overpaid,
          late: options.late,
          tolerancePercent: options.tolerancePercent,
          refundFee: options.refundFee,
        };
        const changing = Object.values(change).some((value) => value !== undefined);
        const answer = changing
          ? await clients.admin.setMerchantOutcomePolicy({ merchantId: options.merchantId, ...change })
          : await clients.admin.getMerchantOutcomePolicy({ merchantId: options.merchantId });
        return { policy: outcomePolicyJson(answer.policy!) };
      }, Boolean(options.json)),
    );
}
