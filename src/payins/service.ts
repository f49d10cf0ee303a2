/**
 * PayinService (issue 5, interface Area B, platform decisions §4, §5, §8): the business rules of the crypto payin
 * portal. The façade calls it over Connect; it reads and writes the `payins`, `upstream_notifications` and
 * `webhook_events` tables, reads balances from the ledger, and drives the PayinWorkflow (id = invoice_reference)
 * and the WebhookDeliveryWorkflow (id = webhook id) through Temporal.
 */
import { LRUCache } from 'lru-cache';
import type { ServiceImpl } from '@connectrpc/connect';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { randomInt } from 'node:crypto';
import type { payinWorkflow, PayinWorkflowInput } from '../../workflows/payin';
import type { webhookDeliveryWorkflow } from '../../workflows/webhook-delivery';
import { verifyHmacSha256Hex } from '../crypto/hmac';
import { DomainError, invalidFields, type FieldViolations } from '../errors';
import type { PayinService } from '../gen/payments/payin/v1/payin_pb';
import { AmountError, CURRENCIES, decimalsOf, parseJsonLossless, percentOf, readAmount } from '../money';
import { sha256Hex } from '../crypto/secrets';
import { findMerchantByApiKey, type Merchant } from '../onboarding/merchants';
import type { PlatformDeps } from '../platform';
import { PAYIN_LIMITS, PAYIN_REASONS } from './contract';
import { PAYIN_OUTBOX_TABLE, payinWorkflowInputOf, wakePayinOutbox } from './outbox';
import { renderQrPng } from '../web/qr-png';
import { forwardPayin, UpstreamUnavailableError } from './upstream-client';

export type PayinStatus = 'waiting' | 'success' | 'expired' | 'close' | 'failed';

/** A row of `payins`. Amounts in minor units of `currency`. */
export interface PayinRow {
  invoice_reference: string;
  merchant_id: string;
  out_trade_no: string;
  amount_units: bigint;
  paid_amount_units: bigint | null;
  fee_units: bigint;
  payin_fee_percent: string;
  currency: 'USDT';
  memo: string | null;
  status: PayinStatus;
  late: boolean;
  payment_match_status: 'exact' | 'overpaid' | 'underpaid' | null;
  trx_ref: string | null;
  qr_content: string | null;
  /** created_at + PAYIN_TTL_SECONDS: where the PayinWorkflow's expiry timer ends. */
  expires_at?: Date | null;
  created_at: Date;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** `PAYIN-` + 20 random uppercase letters and digits (platform decisions §4). */
export function newInvoiceReference(): string {
  let suffix = '';
  for (let index = 0; index < 20; index += 1) suffix += ALPHABET[randomInt(ALPHABET.length)];
  return `PAYIN-${suffix}`;
}

function unauthenticated(): DomainError {
  return new DomainError('unauthenticated', PAYIN_REASONS.unauthenticated, 'invalid or missing API key');
}

/**
 * Active merchants by SHA-256 of their API key, for AUTH_CACHE_SECONDS (per process, per deps). Only active
 * merchants are kept: an unknown or suspended key is looked up every time, and a suspension (or a fee change)
 * reaches Area B within AUTH_CACHE_SECONDS. Bounded: at most 10,000 keys, least recently used evicted (lru-cache).
 */
const apiKeyCaches = new WeakMap<PlatformDeps, LRUCache<string, Merchant>>();

async function merchantOfApiKey(deps: PlatformDeps, api_key: string): Promise<Merchant | undefined> {
  const ttl_ms = deps.config.AUTH_CACHE_SECONDS * 1000;
  if (ttl_ms <= 0) return findMerchantByApiKey(deps.database, api_key);
  let cache = apiKeyCaches.get(deps);
  if (!cache) apiKeyCaches.set(deps, (cache = new LRUCache<string, Merchant>({ max: 10_000, ttl: ttl_ms })));
  const key = sha256Hex(api_key);
  const hit = cache.get(key);
  if (hit) return hit;
  const merchant = await findMerchantByApiKey(deps.database, api_key);
  if (merchant?.status === 'active') cache.set(key, merchant);
  return merchant;
}

/**
 * The merchant owning `api_key` (cached up to AUTH_CACHE_SECONDS). @throws DomainError UNAUTHENTICATED
 * (unknown/missing key), MERCHANT_SUSPENDED (suspended account).
 */
export async function authenticateApiKey(deps: PlatformDeps, api_key: string): Promise<Merchant> {
  if (!api_key) throw unauthenticated();
  const merchant = await merchantOfApiKey(deps, api_key);
  if (!merchant) throw unauthenticated();
  if (merchant.status !== 'active') {
    throw new DomainError('permission_denied', PAYIN_REASONS.suspended, 'merchant account is suspended');
  }
  return merchant;
}

function parseBodyObject(raw: Uint8Array): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseJsonLossless(Buffer.from(raw).toString('utf8'));
  } catch {
    throw invalidFields({ body: ['The request body must be a JSON object.'] });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidFields({ body: ['The request body must be a JSON object.'] });
  }
  return parsed as Record<string, unknown>;
}

const AMOUNT_MESSAGES: Record<AmountError['problem'], string> = {
  not_a_number: 'The amount must be a number.',
  too_many_decimals: 'The amount must not have more than 6 decimal places.',
  negative: 'The amount must be at least 0.01.',
  zero: 'The amount must be at least 0.01.',
  too_large: 'The amount is too large.',
};

const characters = (text: string) => [...text].length;

/**
 * B1 validation, in the interface's order: amount (≥ 0.01, ≤ 6 decimals, read losslessly), currency (USDT only,
 * default USDT), memo (≤ 255), out_trade_no (required, ≤ 255, unique per merchant among non-failed payins), then the
 * upstream configuration. Returns every failing field at once.
 */
async function validateCreate(
  deps: PlatformDeps,
  merchant: Merchant,
  body: Record<string, unknown>,
): Promise<{ amount_units: bigint; memo: string | null; out_trade_no: string }> {
  const fields: FieldViolations = {};
  let amount_units = 0n;
  if (body.amount === undefined || body.amount === null || body.amount === '') {
    fields.amount = ['The amount field is required.'];
  } else {
    try {
      amount_units = readAmount(body.amount, 'USDT', { allowZero: true });
      if (amount_units < PAYIN_LIMITS.minAmountUnits) fields.amount = ['The amount must be at least 0.01.'];
    } catch (error) {
      if (!(error instanceof AmountError)) throw error;
      fields.amount = [AMOUNT_MESSAGES[error.problem]];
    }
  }
  if (body.currency !== undefined && body.currency !== null && body.currency !== PAYIN_LIMITS.currency) {
    fields.currency = ['The selected currency is invalid. Only USDT is supported.'];
  }
  let memo: string | null = null;
  if (body.memo !== undefined && body.memo !== null) {
    if (typeof body.memo !== 'string') fields.memo = ['The memo must be a string.'];
    else if (characters(body.memo) > PAYIN_LIMITS.memoMaxLength) fields.memo = ['The memo must not be greater than 255 characters.'];
    else memo = body.memo;
  }
  let out_trade_no = '';
  if (body.out_trade_no === undefined || body.out_trade_no === null || body.out_trade_no === '') {
    fields.out_trade_no = ['The out trade no field is required.'];
  } else if (typeof body.out_trade_no !== 'string') {
    fields.out_trade_no = ['The out trade no must be a string.'];
  } else if (characters(body.out_trade_no) > PAYIN_LIMITS.outTradeNoMaxLength) {
    fields.out_trade_no = ['The out trade no must not be greater than 255 characters.'];
  } else {
    out_trade_no = body.out_trade_no;
  }
  if (!deps.config.UPSTREAM_PAYIN_URL) fields.upstream = ['No upstream payin server is configured.'];
  // A taken out_trade_no is looked up only to join other failing fields in one 422; alone, the unique index
  // payins_merchant_out_trade_no_live refuses the insert (createPayin), which answers the same 422.
  if (out_trade_no && Object.keys(fields).length > 0) {
    const taken = await deps
      .database('payins')
      .where({ merchant_id: merchant.id, out_trade_no })
      .whereNot({ status: 'failed' })
      .first('invoice_reference');
    if (taken) fields.out_trade_no = ['The out trade no has already been taken.'];
  }
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
  return { amount_units, memo, out_trade_no };
}

async function markFailed(deps: PlatformDeps, invoice_reference: string, reason: string): Promise<void> {
  await deps
    .database('payins')
    .where({ invoice_reference })
    .update({ status: 'failed', failure_reason: reason.slice(0, 255), updated_at: deps.database.fn.now() });
}

/** Creates a payin (B1). See the RPC comment in payin.proto for the reasons thrown. */
export async function createPayin(deps: PlatformDeps, input: { api_key: string; raw_body: Uint8Array }) {
  const merchant = await authenticateApiKey(deps, input.api_key);
  const body = parseBodyObject(input.raw_body);
  const { amount_units, memo, out_trade_no } = await validateCreate(deps, merchant, body);
  const invoice_reference = newInvoiceReference();
  const fee_units = percentOf(amount_units, merchant.payin_fee_percent);
  try {
    // The payin and its workflow-start outbox row commit together: a committed payin always gets its
    // PayinWorkflow (src/payins/outbox.ts), and B1 does not wait for Temporal.
    // One statement, atomic on its own: INSERT the payin, then its outbox row from the payin's RETURNING.
    const insertPayin = deps
      .database('payins')
      .insert({
        invoice_reference,
        merchant_id: merchant.id,
        out_trade_no,
        amount_units,
        fee_units,
        payin_fee_percent: merchant.payin_fee_percent,
        currency: 'USDT',
        memo,
        status: 'waiting',
        expires_at: new Date(Date.now() + deps.config.PAYIN_TTL_SECONDS * 1000),
      })
      .returning('invoice_reference');
    await deps.database.raw('WITH payin AS (?) INSERT INTO ?? (invoice_reference) SELECT invoice_reference FROM payin', [
      insertPayin,
      PAYIN_OUTBOX_TABLE,
    ]);
  } catch (error) {
    if ((error as { code?: string }).code === '23505') {
      throw invalidFields({ out_trade_no: ['The out trade no has already been taken.'] });
    }
    throw error;
  }
  let answer;
  try {
    answer = await forwardPayin(deps.config.UPSTREAM_PAYIN_URL!, input.raw_body, {
      api_key: deps.config.UPSTREAM_API_KEY,
      invoice_reference,
      notify_url: `${deps.config.PUBLIC_BASE_URL}/api/v1/upstream/notifications`,
      timeout_seconds: deps.config.UPSTREAM_TIMEOUT_SECONDS,
    });
  } catch (error) {
    await markFailed(deps, invoice_reference, (error as Error).message);
    if (error instanceof UpstreamUnavailableError) {
      deps.logger.warn({ invoice_reference, err: error.message }, 'upstream payin server unavailable');
      throw new DomainError('unavailable', PAYIN_REASONS.upstreamUnavailable, 'upstream payin server unavailable');
    }
    deps.logger.error({ invoice_reference, err: error }, 'payin forwarding failed');
    throw new DomainError('internal', PAYIN_REASONS.payinFailed, 'payin forwarding failed');
  }
  wakePayinOutbox(deps);
  try {
    const qr_image = answer.qr_image ?? (await renderQrPng(answer.qr_content)).toString('base64');
    await deps
      .database('payins')
      .where({ invoice_reference })
      .update({
        qr_content: answer.qr_content,
        trx_ref: answer.trx_ref ?? null,
        updated_at: deps.database.fn.now(),
      });
    return {
      invoiceReference: invoice_reference,
      amountUnits: amount_units,
      currency: 'USDT',
      feeUnits: fee_units,
      qrContent: answer.qr_content,
      qrImage: qr_image,
      outTradeNo: out_trade_no,
    };
  } catch (error) {
    await markFailed(deps, invoice_reference, (error as Error).message).catch(() => undefined);
    deps.logger.error({ invoice_reference, err: error }, 'payin creation failed after forwarding');
    throw new DomainError('internal', PAYIN_REASONS.payinFailed, 'payin creation failed');
  }
}

function payinMessage(row: PayinRow) {
  return {
    invoiceReference: row.invoice_reference,
    outTradeNo: row.out_trade_no,
    amountUnits: row.amount_units,
    paidAmountUnits: row.paid_amount_units ?? 0n,
    feeUnits: row.fee_units,
    currency: row.currency,
    status: row.status,
    trxRef: row.trx_ref ?? '',
    late: row.late,
    paymentMatchStatus: row.payment_match_status ?? '',
  };
}

/** B2: the latest non-failed payin of the merchant with this out_trade_no. */
export async function getPayinStatus(deps: PlatformDeps, input: { api_key: string; raw_body: Uint8Array }) {
  const merchant = await authenticateApiKey(deps, input.api_key);
  let body: Record<string, unknown>;
  try {
    body = parseBodyObject(input.raw_body);
  } catch {
    throw invalidFields({ out_trade_no: ['The out trade no field is required.'] });
  }
  const out_trade_no = body.out_trade_no;
  if (out_trade_no === undefined || out_trade_no === null || out_trade_no === '') {
    throw invalidFields({ out_trade_no: ['The out trade no field is required.'] });
  }
  if (typeof out_trade_no !== 'string') throw invalidFields({ out_trade_no: ['The out trade no must be a string.'] });
  const row = (await deps
    .database('payins')
    .where({ merchant_id: merchant.id, out_trade_no })
    .whereNot({ status: 'failed' })
    .orderBy('created_at', 'desc')
    .first()) as PayinRow | undefined;
  if (!row) throw new DomainError('not_found', PAYIN_REASONS.notFound, 'top-up not found');
  return { payin: payinMessage(row) };
}

/** B3: every wallet of the merchant, available balance (posted less holds), in USD, KHR, USDT order. */
export async function getBalances(deps: PlatformDeps, input: { api_key: string }) {
  const merchant = await authenticateApiKey(deps, input.api_key);
  const accounts = (await deps.ledger.accountsOf('merchant', merchant.id)).filter((account) => account.kind === 'wallet');
  accounts.sort((a, b) => CURRENCIES.indexOf(a.currency) - CURRENCIES.indexOf(b.currency));
  return {
    wallets: accounts.map((account) => ({
      currency: account.currency,
      availableUnits: account.available_units,
      postedUnits: account.posted_units,
      decimals: decimalsOf(account.currency),
    })),
  };
}

/**
 * Applies an upstream notification (platform decisions §4). Verifies `X-Upstream-Signature`, records the
 * notification once (key: invoice, status, trx_ref, amount) and signals the PayinWorkflow with signal-with-start,
 * so a success after expiry starts a new run that credits it late. Repeats and no-longer-applicable notifications
 * answer `applied: false` and change nothing.
 * @throws DomainError INVALID_SIGNATURE, VALIDATION_FAILED, PAYIN_NOT_FOUND
 */
export async function applyUpstreamNotification(deps: PlatformDeps, input: { raw_body: Uint8Array; signature: string }) {
  const secret = deps.config.UPSTREAM_WEBHOOK_SECRET;
  if (!secret || !verifyHmacSha256Hex(secret, input.raw_body, input.signature)) {
    throw new DomainError('unauthenticated', PAYIN_REASONS.invalidSignature, 'invalid upstream signature');
  }
  const body = parseBodyObject(input.raw_body);
  const fields: FieldViolations = {};
  const invoice_reference = body.invoice_reference;
  if (typeof invoice_reference !== 'string' || invoice_reference === '') fields.invoice_reference = ['The invoice reference field is required.'];
  const status = body.status;
  if (status !== 'success' && status !== 'close') fields.status = ['The selected status is invalid.'];
  let amount_units = 0n;
  if (status === 'success') {
    try {
      amount_units = readAmount(body.amount, 'USDT');
    } catch (error) {
      if (!(error instanceof AmountError)) throw error;
      fields.amount = [AMOUNT_MESSAGES[error.problem]];
    }
  }
  if (body.currency !== undefined && body.currency !== 'USDT') fields.currency = ['The selected currency is invalid.'];
  const trx_ref = typeof body.trx_ref === 'string' ? body.trx_ref : '';
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
  const reference = invoice_reference as string;
  const payin = (await deps.database('payins').where({ invoice_reference: reference }).first()) as PayinRow | undefined;
  if (!payin || payin.status === 'failed') throw new DomainError('not_found', PAYIN_REASONS.notFound, 'top-up not found');
  const idempotency_key = `${reference}|${status}|${trx_ref}|${amount_units}`;
  const inserted = await deps
    .database('upstream_notifications')
    .insert({
      idempotency_key,
      invoice_reference: reference,
      status,
      amount_units: status === 'success' ? amount_units : null,
      trx_ref: trx_ref || null,
      raw_body: Buffer.from(input.raw_body).toString('utf8'),
      outcome: 'received',
    })
    .onConflict('idempotency_key')
    .ignore()
    .returning('id');
  if (inserted.length === 0) return { applied: false, invoiceReference: reference, status: payin.status };
  // A success is applied to a waiting, expired (late) or closed payin; a close only to a waiting one.
  const applies = status === 'success' ? payin.status !== 'success' : payin.status === 'waiting';
  await deps
    .database('upstream_notifications')
    .where({ idempotency_key })
    .update({ outcome: applies ? 'applied' : 'ignored' });
  if (!applies) return { applied: false, invoiceReference: reference, status: payin.status };
  const start = {
    taskQueue: deps.temporal.taskQueue,
    workflowId: reference,
    args: [payinWorkflowInputOf(deps, payin)] as [PayinWorkflowInput],
  };
  if (status === 'success') {
    await deps.temporal.client.workflow.signalWithStart<typeof payinWorkflow, [{ amount_units: string; trx_ref: string }]>('payinWorkflow', {
      ...start,
      signal: 'settled',
      signalArgs: [{ amount_units: amount_units.toString(), trx_ref }],
    });
  } else {
    await deps.temporal.client.workflow.signalWithStart<typeof payinWorkflow, [{ trx_ref: string }]>('payinWorkflow', {
      ...start,
      signal: 'closed',
      signalArgs: [{ trx_ref }],
    });
  }
  return { applied: true, invoiceReference: reference, status: status as string };
}

interface WebhookEventRow {
  id: string;
  merchant_id: string;
  invoice_reference: string;
  event: string;
  status: string;
  callback_url: string;
  created_at: Date;
  delivered_at: Date | null;
}

interface AttemptRow {
  webhook_id: string;
  attempt: number;
  attempted_at: Date;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
}

async function deliveryRecords(deps: PlatformDeps, events: WebhookEventRow[]) {
  const ids = events.map((event) => event.id);
  const attempts = (ids.length
    ? await deps.database('webhook_delivery_attempts').whereIn('webhook_id', ids).orderBy(['webhook_id', 'attempt'])
    : []) as AttemptRow[];
  return events.map((event) => ({
    webhookId: event.id,
    merchantId: event.merchant_id,
    invoiceReference: event.invoice_reference,
    event: event.event,
    status: event.status,
    callbackUrl: event.callback_url,
    createdAt: event.created_at.toISOString(),
    deliveredAt: event.delivered_at ? event.delivered_at.toISOString() : '',
    attempts: attempts
      .filter((attempt) => attempt.webhook_id === event.id)
      .map((attempt) => ({
        attempt: attempt.attempt,
        attemptedAt: attempt.attempted_at.toISOString(),
        statusCode: attempt.status_code ?? 0,
        latencyMs: attempt.latency_ms,
        error: attempt.error ?? '',
      })),
  }));
}

/** The merchant's webhook events, newest first, each with every delivery attempt. */
export async function listWebhookDeliveries(deps: PlatformDeps, input: { merchant_id: string }) {
  if (!input.merchant_id) throw invalidFields({ merchant_id: ['merchant_id is required'] });
  const events = (await deps
    .database('webhook_events')
    .where({ merchant_id: input.merchant_id })
    .orderBy('created_at', 'desc')
    .limit(500)) as WebhookEventRow[];
  return { deliveries: await deliveryRecords(deps, events) };
}

/**
 * Starts a new WebhookDeliveryWorkflow run for an event (same webhook id, attempt numbers continue). A run still
 * retrying is left alone. @throws DomainError WEBHOOK_NOT_FOUND
 */
export async function redeliverWebhook(deps: PlatformDeps, input: { webhook_id: string }) {
  const event = (await deps.database('webhook_events').where({ id: input.webhook_id }).first()) as WebhookEventRow | undefined;
  if (!event) throw new DomainError('not_found', PAYIN_REASONS.webhookNotFound, 'webhook not found');
  try {
    await deps.temporal.client.workflow.start<typeof webhookDeliveryWorkflow>('webhookDeliveryWorkflow', {
      taskQueue: deps.temporal.taskQueue,
      workflowId: event.id,
      args: [{ webhook_id: event.id }],
    });
    await deps.database('webhook_events').where({ id: event.id }).update({ status: 'pending' });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
  const [delivery] = await deliveryRecords(deps, [
    (await deps.database('webhook_events').where({ id: event.id }).first()) as WebhookEventRow,
  ]);
  return { delivery };
}

/** The Connect implementation; every method delegates to the functions above. */
export function createPayinService(deps: PlatformDeps): ServiceImpl<typeof PayinService> {
  return {
    createPayin: (request) => createPayin(deps, { api_key: request.apiKey, raw_body: request.rawBody }),
    getPayinStatus: (request) => getPayinStatus(deps, { api_key: request.apiKey, raw_body: request.rawBody }),
    getBalances: (request) => getBalances(deps, { api_key: request.apiKey }),
    applyUpstreamNotification: (request) =>
      applyUpstreamNotification(deps, { raw_body: request.rawBody, signature: request.signature }),
    listWebhookDeliveries: (request) => listWebhookDeliveries(deps, { merchant_id: request.merchantId }),
    redeliverWebhook: (request) => redeliverWebhook(deps, { webhook_id: request.webhookId }),
  };
}
