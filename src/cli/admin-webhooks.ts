/**
 * `payments admin webhooks ...` (platform decisions §2, §5) over the PayinService (Connect, `RPC_URL`):
 *
 *   admin webhooks list --merchant-id ID [--json]   the merchant's webhook events, each with every delivery attempt
 *   admin webhooks redeliver --id ID [--json]       starts a new delivery run (same X-Webhook-Id)
 *
 * With `--json` prints exactly one JSON object; a failure exits 1 with one line on stderr.
 */
import type { Command } from 'commander';
import { stringifyJson } from '../money';
import type { PlatformClients } from '../rpc/clients';
import { adminClients, describeFailure, DEFAULT_RPC_URL } from './admin';

type Delivery = {
  webhookId: string;
  merchantId: string;
  invoiceReference: string;
  event: string;
  status: string;
  callbackUrl: string;
  createdAt: string;
  deliveredAt: string;
  eventSeq: bigint;
  attempts: Array<{ attempt: number; attemptedAt: string; statusCode: number; latencyMs: number; error: string; nextRetryAt: string }>;
};

/** The JSON shape printed for one delivery record (snake_case, null for absent values). */
export function deliveryJson(delivery: Delivery) {
  return {
    webhook_id: delivery.webhookId,
    merchant_id: delivery.merchantId,
    invoice_reference: delivery.invoiceReference,
    event: delivery.event,
    status: delivery.status,
    callback_url: delivery.callbackUrl,
    created_at: delivery.createdAt,
    delivered_at: delivery.deliveredAt || null,
    event_seq: delivery.eventSeq ? Number(delivery.eventSeq) : null,
    attempts: delivery.attempts.map((attempt) => ({
      attempt: attempt.attempt,
      attempted_at: attempt.attemptedAt,
      status_code: attempt.statusCode || null,
      latency_ms: attempt.latencyMs,
      error: attempt.error || null,
      next_retry_at: attempt.nextRetryAt || null,
    })),
  };
}

/**
 * Runs one admin call against `RPC_URL` and prints its result (with `json`, one JSON object on one line); a failure
 * exits 1 with one line on stderr.
 */
export async function runAdminCall(work: (clients: PlatformClients) => Promise<Record<string, unknown>>, json: boolean) {
  const rpcUrl = process.env.RPC_URL || DEFAULT_RPC_URL;
  try {
    const result = await work(adminClients(rpcUrl));
    process.stdout.write(json ? `${stringifyJson(result)}\n` : `${JSON.stringify(result, null, 2)}\n`);
  } catch (error) {
    process.stderr.write(`${describeFailure(error, rpcUrl)}\n`);
    process.exitCode = 1;
  }
  // Flush stdout, then exit (no keep-alive socket holds the process open).
  process.stdout.write('', () => process.exit(Number(process.exitCode ?? 0)));
}

/** Adds `webhooks list` and `webhooks redeliver` under the existing `admin` command of `program`. */
export function registerWebhookCommands(program: Command): void {
  const admin = program.commands.find((command) => command.name() === 'admin') ?? program.command('admin');
  const webhooks = admin.command('webhooks').description('merchant webhook deliveries (Area B)');
  webhooks
    .command('list')
    .description('webhook events of a merchant with every delivery attempt')
    .requiredOption('--merchant-id <id>', 'merchant id')
    .option('--json', 'print one JSON object')
    .action((options: { merchantId: string; json?: boolean }) =>
      runAdminCall(async (clients) => {
        const answer = await clients.payin.listWebhookDeliveries({ merchantId: options.merchantId });
        return { deliveries: answer.deliveries.map(deliveryJson) };
      }, Boolean(options.json)),
    );
  webhooks
    .command('redeliver')
    .description('deliver a webhook event again (same X-Webhook-Id)')
    .requiredOption('--id <webhook_id>', 'webhook id')
    .option('--json', 'print one JSON object')
    .action((options: { id: string; json?: boolean }) =>
      runAdminCall(async (clients) => {
        const answer = await clients.payin.redeliverWebhook({ webhookId: options.id });
        return deliveryJson(answer.delivery!);
      }, Boolean(options.json)),
    );
}
