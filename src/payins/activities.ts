/**
 * Area B activities (issue 5, platform decisions §4, §5): settle, expire and close a payin (each writes its webhook
 * event in the same database transaction), and one webhook delivery attempt. Idempotent: settlement passes the
 * ledger the key `payin:{invoice_reference}:settle`, webhook ids are derived from the invoice and the event.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import { request } from 'undici';
import type { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery';
import { hmacSha256Hex } from '../crypto/hmac';
import type { Knex } from 'knex';
import { amountJson, percentOf, stringifyJson } from '../money';
import { getMerchant, merchantHmacSecret } from '../onboarding/merchants';
import type { PlatformDeps } from '../platform';
import type { PayinRow } from './service';

export type WebhookEvent = 'payin.success' | 'payin.expired' | 'payin.closed';

/** Stable webhook id (X-Webhook-Id, also the WebhookDeliveryWorkflow id) of one event of one payin. */
export function webhookIdOf(invoice_reference: string, event: WebhookEvent): string {
  return `WH-${invoice_reference.replace(/^PAYIN-/, '')}-${event.split('.')[1]!.toUpperCase()}`;
}

/**
 * The webhook body (platform decisions §5): `{"success": true, "code": 200, "event", "data": {...}}`, data keys
 * in the interface's order. For expired/closed payins nothing was received: amount and fee are 0 and
 * original_amount is the requested amount.
 */
export function webhookBody(payin: PayinRow, event: WebhookEvent): string {
  const paid = payin.status === 'success' ? (payin.paid_amount_units ?? 0n) : 0n;
  const data: Record<string, unknown> = {
    trx_ref: payin.trx_ref,
    amount: amountJson(paid, payin.currency),
    currency: payin.currency,
    fee: amountJson(payin.status === 'success' ? payin.fee_units : 0n, payin.currency),
    invoice_reference: payin.invoice_reference,
    out_trade_no: payin.out_trade_no,
    status: payin.status,
  };
  if (paid !== payin.amount_units) data.original_amount = amountJson(payin.amount_units, payin.currency);
  if (payin.status === 'success' && payin.payment_match_status) data.payment_match_status = payin.payment_match_status;
  return stringifyJson({ success: true, code: 200, event, data });
}

async function recordWebhookEvent(deps: PlatformDeps, trx: Knex.Transaction, payin: PayinRow, event: WebhookEvent): Promise<string> {
  const merchant = await getMerchant(trx, payin.merchant_id);
  if (!merchant) throw new Error(`merchant ${payin.merchant_id} of ${payin.invoice_reference} not found`);
  const id = webhookIdOf(payin.invoice_reference, event);
  await trx('webhook_events')
    .insert({
      id,
      merchant_id: payin.merchant_id,
      invoice_reference: payin.invoice_reference,
      event,
      body: webhookBody(payin, event),
      callback_url: merchant.callback_url,
      signature_header: merchant.signature_header || 'X-Signature',
    })
    .onConflict('id')
    .ignore();
  return id;
}

/** Result of a payin transition: the webhook event to deliver, or null when nothing changed. */
export interface PayinTransition {
  webhook_id: string | null;
}

/** How the WebhookDeliveryWorkflow retries (platform decisions §5), in seconds. */
export interface WebhookRetrySettings {
  initial_seconds: number;
  max_interval_seconds: number;
  window_seconds: number;
}

export function createPayinActivities(deps: PlatformDeps) {
  return {
    /**
     * Credits the paid amount to the merchant's USDT wallet and charges the fee, in one ledger transaction
     * (settlement → wallet `paid`, wallet → fee_revenue `fee`), then marks the payin success with its match status
     * (late when it had expired or closed) and records the payin.success webhook. Repeats return the same webhook.
     */
    async settlePayin(input: { invoice_reference: string; amount_units: string; trx_ref: string }): Promise<PayinTransition> {
      return deps.database.transaction(async (trx) => {
        const payin = (await trx('payins').where({ invoice_reference: input.invoice_reference }).forUpdate().first()) as PayinRow | undefined;
        if (!payin || payin.status === 'failed') return { webhook_id: null };
        if (payin.status === 'success') return { webhook_id: webhookIdOf(payin.invoice_reference, 'payin.success') };
        const paid = BigInt(input.amount_units);
        const fee = percentOf(paid, payin.payin_fee_percent);
        const wallet = await deps.ledger.openAccount(
          { owner_type: 'merchant', owner_id: payin.merchant_id, currency: payin.currency, kind: 'wallet' },
          trx,
        );
        const settlement = await deps.ledger.platformAccount('settlement', payin.currency, trx);
        // settlement → merchant wallet: the paid amount; merchant wallet → fee_revenue: the fee. One transaction.
        const postings = [
          { account_id: settlement.id, amount_units: -paid },
          { account_id: wallet.id, amount_units: paid },
        ];
        if (fee > 0n) {
          const revenue = await deps.ledger.platformAccount('fee_revenue', payin.currency, trx);
          postings.push({ account_id: wallet.id, amount_units: -fee }, { account_id: revenue.id, amount_units: fee });
        }
        const transaction = await deps.ledger.transfer(
          {
            idempotency_key: `payin:${payin.invoice_reference}:settle`,
            description: `payin ${payin.invoice_reference} settled (paid ${paid}, fee ${fee})`,
            postings: postings.filter((posting) => posting.amount_units !== 0n),
            metadata: { invoice_reference: payin.invoice_reference, paid_units: paid.toString(), fee_units: fee.toString() },
          },
          trx,
        );
        const settled: PayinRow = {
          ...payin,
          status: 'success',
          late: payin.status !== 'waiting',
          paid_amount_units: paid,
          fee_units: fee,
          payment_match_status: paid === payin.amount_units ? 'exact' : paid > payin.amount_units ? 'overpaid' : 'underpaid',
          trx_ref: input.trx_ref || payin.trx_ref,
        };
        await trx('payins').where({ invoice_reference: payin.invoice_reference }).update({
          status: settled.status,
          late: settled.late,
          paid_amount_units: paid,
          fee_units: fee,
          payment_match_status: settled.payment_match_status,
          trx_ref: settled.trx_ref,
          ledger_transaction_id: transaction.id,
          settled_at: trx.fn.now(),
          updated_at: trx.fn.now(),
        });
        return { webhook_id: await recordWebhookEvent(deps, trx, settled, 'payin.success') };
      });
    },

    /** waiting → expired (PAYIN_TTL_SECONDS elapsed) and the payin.expired webhook; anything else: no change. */
    async expirePayin(input: { invoice_reference: string }): Promise<PayinTransition> {
      return transition(deps, input.invoice_reference, 'expired', 'payin.expired');
    },

    /** waiting → close (upstream closed it) and the payin.closed webhook; anything else: no change. */
    async closePayin(input: { invoice_reference: string }): Promise<PayinTransition> {
      return transition(deps, input.invoice_reference, 'close', 'payin.closed');
    },

    /**
     * One delivery attempt of a webhook event: POST the stored body with the merchant's signature header (hex
     * HMAC-SHA256 under its hmac_secret), X-Webhook-Id, X-Webhook-Event and X-Webhook-Attempt; any 2xx within
     * WEBHOOK_TIMEOUT_SECONDS is delivered. Records the attempt (time, status code, latency, error).
     */
    async attemptWebhookDelivery(input: { webhook_id: string }): Promise<{ delivered: boolean; attempt: number; retry: WebhookRetrySettings }> {
      const retry = {
        initial_seconds: deps.config.WEBHOOK_RETRY_INITIAL_SECONDS,
        max_interval_seconds: deps.config.WEBHOOK_RETRY_MAX_INTERVAL_SECONDS,
        window_seconds: deps.config.WEBHOOK_RETRY_WINDOW_SECONDS,
      };
      // The event and its last attempt number in one query.
      const event = await deps
        .database('webhook_events')
        .where({ id: input.webhook_id })
        .first(
          'webhook_events.*',
          deps.database('webhook_delivery_attempts').where('webhook_id', input.webhook_id).max('attempt').as('last_attempt'),
        );
      if (!event) throw new Error(`webhook ${input.webhook_id} not found`);
      const attempt = Number(event.last_attempt ?? 0) + 1;
      const secret = await merchantHmacSecret(deps, event.merchant_id);
      const timeoutMs = Math.round(deps.config.WEBHOOK_TIMEOUT_SECONDS * 1000);
      const attempted_at = new Date();
      const started = performance.now();
      let status_code: number | null = null;
      let error: string | null = null;
      try {
        const response = await request(event.callback_url, {
          method: 'POST',
          body: event.body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
          signal: AbortSignal.timeout(timeoutMs),
          headers: {
            'content-type': 'application/json',
            [event.signature_header]: hmacSha256Hex(secret, event.body),
            'x-webhook-id': event.id,
            'x-webhook-event': event.event,
            'x-webhook-attempt': String(attempt),
          },
        });
        status_code = response.statusCode;
        await response.body.dump();
        if (status_code < 200 || status_code > 299) error = `HTTP ${status_code}`;
      } catch (failure) {
        error = ((failure as Error).message || String(failure)).slice(0, 500);
      }
      const latency_ms = Math.round(performance.now() - started);
      const delivered = error === null;
      // The attempt and the event's counters in one statement (atomic on its own).
      const record = deps
        .database('webhook_delivery_attempts')
        .insert({ webhook_id: event.id, attempt, attempted_at, status_code, latency_ms, error })
        .onConflict(['webhook_id', 'attempt'])
        .ignore();
      const update = deps
        .database('webhook_events')
        .where({ id: event.id })
        .update({
          attempt_count: deps.database.raw('greatest(attempt_count, ?)', [attempt]),
          ...(delivered ? { status: 'delivered', delivered_at: deps.database.fn.now() } : {}),
        });
      await deps.database.raw('WITH recorded AS (?) ?', [record, update]);
      return { delivered, attempt, retry };
    },

    /**
     * Starts the WebhookDeliveryWorkflow of each event (id = webhook id) unless one was ever started for it
     * (`REJECT_DUPLICATE`: a retried activity or a replayed payin never delivers twice; redelivery is an explicit
     * admin action). Called by the PayinWorkflow right after the transition that recorded the events.
     */
    async startWebhookDeliveries(input: { webhook_ids: string[] }): Promise<void> {
      for (const webhook_id of input.webhook_ids) {
        try {
          await deps.temporal.client.workflow.start<typeof webhookDeliveryWorkflow>('webhookDeliveryWorkflow', {
            taskQueue: deps.temporal.taskQueue,
            workflowId: webhook_id,
            workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
            args: [{ webhook_id }],
          });
        } catch (error) {
          if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
        }
      }
    },

    /** Marks a webhook event failed once its retry window has passed without a 2xx. */
    async markWebhookFailed(input: { webhook_id: string }): Promise<void> {
      await deps.database('webhook_events').where({ id: input.webhook_id }).whereNot({ status: 'delivered' }).update({ status: 'failed' });
    },
  };
}

async function transition(
  deps: PlatformDeps,
  invoice_reference: string,
  status: 'expired' | 'close',
  event: WebhookEvent,
): Promise<PayinTransition> {
  return deps.database.transaction(async (trx) => {
    const payin = (await trx('payins').where({ invoice_reference }).forUpdate().first()) as PayinRow | undefined;
    if (!payin) return { webhook_id: null };
    if (payin.status === status) return { webhook_id: webhookIdOf(invoice_reference, event) };
    if (payin.status !== 'waiting') return { webhook_id: null };
    await trx('payins').where({ invoice_reference }).update({ status, updated_at: trx.fn.now() });
    return { webhook_id: await recordWebhookEvent(deps, trx, { ...payin, status }, event) };
  });
}
