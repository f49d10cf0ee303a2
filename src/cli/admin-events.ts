/**
 * `payments admin events ...` (docs/events.md "Operators") over the EventsService (Connect, `RPC_URL`, the admin
 * scope):
 *
 *   admin events list --merchant-id ID | --partner-id ID [--after SEQ] [--limit N] [--subject REF] [--type T] [--json]
 *       one page of the owner's events after SEQ (default 0), in seq order, with has_more and next_after
 *   admin events redeliver --merchant-id ID --after SEQ [--json]
 *       sends again every webhook produced from the merchant's events after SEQ (at most 500 per call, each
 *       payment's in order; audited); ask again with the answer's next_after while has_more
 *
 * With `--json` prints exactly one JSON object; a failure exits 1 with one line on stderr.
 */
import type { Command } from 'commander';
import type { Event } from '../gen/payments/events/v1/events_pb';
import { runAdminCall } from './admin-webhooks';

/** A whole number from 0 given on the command line. @throws Error naming the option otherwise */
function seqOption(value: string): bigint {
  if (!/^\d{1,19}$/.test(value)) throw new Error(`--after must be a whole number from 0 (got ${value})`);
  return BigInt(value);
}

/** The JSON shape printed for one event (snake_case; seq as a number). */
export function eventJson(event: Event) {
  return {
    seq: Number(event.seq),
    type: event.type,
    subject: event.subject,
    created_at: event.createdAt,
    ledger_transaction_id: event.ledgerTransactionId || null,
    data: JSON.parse(event.dataJson) as unknown,
  };
}

/** Adds `events list` and `events redeliver` under the existing `admin` command of `program`. */
export function registerEventCommands(program: Command): void {
  const admin = program.commands.find((command) => command.name() === 'admin') ?? program.command('admin');
  const events = admin.command('events').description('merchants\' and partners\' event streams (docs/events.md)');
  events
    .command('list')
    .description('one page of an owner\'s events after a seq, in seq order')
    .option('--merchant-id <id>', 'a merchant\'s events')
    .option('--partner-id <id>', 'a partner\'s events')
    .option('--after <seq>', 'the seq of the last event seen', '0')
    .option('--limit <n>', 'events per page, 1 to 500', '100')
    .option('--type <type>', 'only events of this type')
    .option('--subject <reference>', 'only events about this payment')
    .option('--json', 'print one JSON object')
    .action((options: { merchantId?: string; partnerId?: string; after: string; limit: string; type?: string; subject?: string; json?: boolean }) =>
      runAdminCall(async (clients) => {
        if (Boolean(options.merchantId) === Boolean(options.partnerId)) throw new Error('give exactly one of --merchant-id and --partner-id');
        const owner = options.merchantId ? { case: 'merchantId' as const, value: options.merchantId } : { case: 'partnerId' as const, value: options.partnerId! };
        const { page } = await clients.events.listOwnerEvents({
          owner: { owner: owner },
          query: { after: seqOption(options.after), limit: Number(options.limit), type: options.type ?? '', subject: options.subject ?? '' },
        });
        return { events: (page?.events ?? []).map(eventJson), has_more: page?.hasMore ?? false, next_after: Number(page?.nextAfter ?? 0n) };
      }, Boolean(options.json)),
    );
  events
    .command('redeliver')
    .description('send again every webhook of a merchant\'s events after a seq, each payment\'s in order (audited)')
    .requiredOption('--merchant-id <id>', 'merchant id')
    .requiredOption('--after <seq>', 'the seq after which to send again')
    .option('--json', 'print one JSON object')
    .action((options: { merchantId: string; after: string; json?: boolean }) =>
      runAdminCall(async (clients) => {
        const answer = await clients.events.redeliverEvents({ merchantId: options.merchantId, after: seqOption(options.after) });
        return { webhook_ids: answer.webhookIds, has_more: answer.hasMore, next_after: Number(answer.nextAfter) };
      }, Boolean(options.json)),
    );
}
