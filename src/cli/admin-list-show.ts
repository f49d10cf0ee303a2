/**
 * The `list` and `show` pair an operator gets for each kind of record (`admin refunds`, `admin deposit-refunds`): one
 * shape of options, limits and output, each kind naming only its RPC calls and its JSON form.
 *
 *   admin <name> list [--merchant-id ID] [--limit N] [--json]   newest first (every merchant's without an id)
 *   admin <name> show REFERENCE [--json]                        one record
 *
 * With `--json` prints exactly one JSON object; a failure (a bad --limit, an unknown reference) exits 1 with one line
 * on stderr.
 */
import type { Command } from 'commander';
import type { PlatformClients } from '../rpc/clients';
import { runAdminCall } from './admin-webhooks';

/** Most records one `list` answers. */
export const ADMIN_LIST_LIMIT_MAX = 500;

export interface ListShowCommands {
  /** The subcommand of `admin` (`refunds`). */
  name: string;
  description: string;
  listDescription: string;
  showDescription: string;
  /** The argument's help (`the refund's reference (RFD-…)`). */
  referenceHelp: string;
  /** The list call: its records in their JSON form. */
  list(clients: PlatformClients, merchantId: string, limit: number): Promise<unknown[]>;
  /** The show call: the record in its JSON form (the RPC's NotFound exits 1). */
  show(clients: PlatformClients, reference: string): Promise<unknown>;
  /** Keys of the printed object: `{[plural]: [...]}` and `{[singular]: {...}}`. */
  plural: string;
  singular: string;
}

/** Adds `<name> list` and `<name> show` under the existing `admin` command of `program`. */
export function registerListShowCommands(program: Command, commands: ListShowCommands): void {
  const admin = program.commands.find((command) => command.name() === 'admin') ?? program.command('admin');
  const group = admin.command(commands.name).description(commands.description);
  group
    .command('list')
    .description(commands.listDescription)
    .option('--merchant-id <id>', 'only this merchant\'s')
    .option('--limit <n>', `at most this many, 1 to ${ADMIN_LIST_LIMIT_MAX}`, '100')
    .option('--json', 'print one JSON object')
    .action((options: { merchantId?: string; limit: string; json?: boolean }) =>
      runAdminCall(async (clients) => {
        const limit = Number(options.limit);
        if (!/^\d{1,3}$/.test(options.limit) || limit < 1 || limit > ADMIN_LIST_LIMIT_MAX) {
          throw new Error(`--limit must be 1 to ${ADMIN_LIST_LIMIT_MAX} (got ${options.limit})`);
        }
        return { [commands.plural]: await commands.list(clients, options.merchantId ?? '', limit) };
      }, Boolean(options.json)),
    );
  group
    .command('show')
    .description(commands.showDescription)
    .argument('<reference>', commands.referenceHelp)
    .option('--json', 'print one JSON object')
    .action((reference: string, options: { json?: boolean }) =>
      runAdminCall(async (clients) => ({ [commands.singular]: await commands.show(clients, reference) }), Boolean(options.json)),
    );
}
