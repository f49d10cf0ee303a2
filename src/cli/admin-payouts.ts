/**
 * `payments admin payouts ...` and `payments admin merchant payout-limits` (docs/payouts.md "Operators") over the
 * PayoutService (Connect, `RPC_URL`, the admin scope):
 *
 *   admin payouts list [--merchant-id ID] [--limit N] [--json]   payouts newest first (every merchant's without an id)
 *   admin payouts show PAYOUT_REFERENCE [--json]                 one payout
 *   admin payouts approve PAYOUT_REFERENCE [--note TEXT] [--json]  approve a payout awaiting approval (audited)
 *   admin payouts reject PAYOUT_REFERENCE [--note TEXT] [--json]   reject it: its holds are voided (audited)
 *   admin merchant payout-limits --merchant-id ID [--currency USDT|USD] [--min A] [--per-payout-max A] [--daily-max A]
 *                                [--approval-threshold A] [--json]   set a merchant's limits in one currency (0 or absent: none)
 *   admin merchant payout-schedule --merchant-id ID --every daily|weekly --minimum USDT [--reserve USDT]
 *                                  --address T… [--json]    automatic payouts (a Temporal Schedule per merchant)
 *   admin merchant payout-schedule --merchant-id ID --remove [--json]
 *
 * With `--json` prints exactly one JSON object; a failure exits 1 with one line on stderr.
 */
import type { Command } from 'commander';
import type { Payout } from '../gen/payments/payout/v1/payout_pb';
import { formatAmount, parseAmount } from '../money';
import { registerListShowCommands } from './admin-list-show';
import { runAdminCall } from './admin-webhooks';

/** The JSON shape printed for one payout (snake_case; amounts in minor units as decimal strings). */
export function payoutJson(payout: Payout) {
  return {
    payout_reference: payout.payoutReference,
    merchant_id: payout.merchantId,
    kind: payout.kind,
    source: payout.source,
    out_trade_no: payout.outTradeNo || null,
    amount_units: payout.amountUnits.toString(),
    fee_units: payout.feeUnits.toString(),
    currency: payout.currency,
    channel: payout.channel,
    status: payout.status,
    address: payout.address,
    memo: payout.memo,
    payout_trx_ref: payout.payoutTrxRef || null,
    failure_reason: payout.failureReason || null,
    created_at: payout.createdAt,
    decided_at: payout.decidedAt || null,
  };
}

const units = (text: string | undefined, currency: 'USDT' | 'USD') => (text === undefined || text === '0' ? 0n : parseAmount(text, currency));

/** Adds `payouts list|show|approve|reject` and `merchant payout-limits` under the existing `admin` command. */
export function registerPayoutCommands(program: Command): void {
  registerListShowCommands(program, {
    name: 'payouts',
    description: 'payouts of merchants\' wallets (docs/payouts.md)',
    listDescription: 'payouts, newest first',
    showDescription: 'one payout',
    referenceHelp: 'the payout\'s reference (PO-…)',
    plural: 'payouts',
    singular: 'payout',
    list: async (clients, merchantId, limit) => (await clients.payout.listPayouts({ merchantId, limit })).payouts.map(payoutJson),
    show: async (clients, payoutReference) => payoutJson((await clients.payout.showPayout({ payoutReference })).payout!),
  });
  const admin = program.commands.find((command) => command.name() === 'admin')!;
  const payouts = admin.commands.find((command) => command.name() === 'payouts')!;
  for (const decision of ['approve', 'reject'] as const) {
    payouts
      .command(decision)
      .description(decision === 'approve' ? 'approve a payout awaiting approval: it is sent (audited)' : 'reject a payout awaiting approval: its holds are voided (audited)')
      .argument('<reference>', 'the payout\'s reference (PO-…)')
      .option('--note <text>', 'why (kept with the approval record)', '')
      .option('--json', 'print one JSON object')
      .action((payoutReference: string, options: { note: string; json?: boolean }) =>
        runAdminCall(async (clients) => ({ payout: payoutJson((await clients.payout.decidePayoutApproval({ payoutReference, decision, note: options.note })).payout!) }), Boolean(options.json)),
      );
  }
  const merchant = admin.commands.find((command) => command.name() === 'merchant') ?? admin.command('merchant');
  merchant
    .command('payout-limits')
    .description('set a merchant\'s payout limits in one currency (docs/payouts.md "Limits"): USDT for its crypto payouts, USD for its users\' bank payouts; an absent or 0 limit is none')
    .requiredOption('--merchant-id <id>', 'merchant id')
    .option('--currency <code>', 'USDT (crypto payouts) or USD (Area C bank payouts)', 'USDT')
    .option('--min <amount>', 'smallest payout')
    .option('--per-payout-max <amount>', 'largest payout')
    .option('--daily-max <amount>', 'most paid out per day (UTC), fees excluded')
    .option('--approval-threshold <amount>', 'a payout above it waits for an operator\'s approval')
    .option('--json', 'print one JSON object')
    .action((options: { merchantId: string; currency: string; min?: string; perPayoutMax?: string; dailyMax?: string; approvalThreshold?: string; json?: boolean }) =>
      runAdminCall(async (clients) => {
        if (options.currency !== 'USDT' && options.currency !== 'USD') throw new Error(`--currency must be USDT or USD, not ${options.currency}`);
        const currency = options.currency;
        const set = await clients.payout.setPayoutSettings({
          merchantId: options.merchantId,
          currency,
          minUnits: units(options.min, currency),
          perPayoutMaxUnits: units(options.perPayoutMax, currency),
          dailyMaxUnits: units(options.dailyMax, currency),
          approvalThresholdUnits: units(options.approvalThreshold, currency),
        });
        const shown = (value: bigint) => (value > 0n ? formatAmount(value, currency) : null);
        return {
          merchant_id: set.merchantId,
          currency: set.currency,
          min: shown(set.minUnits),
          per_payout_max: shown(set.perPayoutMaxUnits),
          daily_max: shown(set.dailyMaxUnits),
          approval_threshold: shown(set.approvalThresholdUnits),
        };
      }, Boolean(options.json)),
    );
  merchant
    .command('payout-schedule')
    .description('set or remove a merchant\'s automatic payouts (docs/payouts.md "Schedules"): one Temporal Schedule per merchant')
    .requiredOption('--merchant-id <id>', 'merchant id')
    .option('--every <period>', 'daily (00:05 UTC) or weekly (Mondays, 00:05 UTC)')
    .option('--minimum <usdt>', 'the smallest scheduled payout; a period with less is skipped')
    .option('--reserve <usdt>', 'what stays on the wallet', '0')
    .option('--address <address>', 'the saved destination (TRON)')
    .option('--remove', 'remove the schedule')
    .option('--json', 'print one JSON object')
    .action((options: { merchantId: string; every?: string; minimum?: string; reserve: string; address?: string; remove?: boolean; json?: boolean }) =>
      runAdminCall(async (clients) => {
        const set = await clients.payout.setPayoutSchedule({
          merchantId: options.merchantId,
          remove: Boolean(options.remove),
          every: options.every ?? '',
          minimumUnits: options.remove ? 0n : parseAmount(options.minimum ?? '', 'USDT'),
          reserveUnits: units(options.reserve, 'USDT'),
          address: options.address ?? '',
        });
        return {
          merchant_id: set.merchantId,
          schedule_id: set.scheduleId,
          every: set.every || null,
          minimum: set.every ? formatAmount(set.minimumUnits, 'USDT') : null,
          reserve: set.every ? formatAmount(set.reserveUnits, 'USDT') : null,
          address: set.address || null,
        };
      }, Boolean(options.json)),
    );
}
