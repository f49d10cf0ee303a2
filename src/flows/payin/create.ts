/**
 * B1, creating a payin (platform decisions §4): the payin and its workflow-start outbox row recorded together, the
 * request forwarded to the upstream payin server, its answer (the QR code) kept and answered. B1 does not wait for
 * Temporal: the dispatcher (./outbox.ts) starts the PayinWorkflow.
 *
 * The recorded payin holds its out_trade_no only while its forward can still answer (UPSTREAM_TIMEOUT_SECONDS plus a
 * margin): a process that died mid-forward leaves a payin that a retry then marks failed and replaces (a failed
 * forward does not hold the key). A duplicate of a forwarded payin stays 422 as the interface documents; a retry that
 * must get the first answer sends an Idempotency-Key.
 */
import { activeTraceparent } from '../../tracing';
import { randomInt } from 'node:crypto';
import { reasonError, type FieldViolations } from '../../errors';
import { problem } from '../../field-problems';
import type { CreatePayinRequest } from '../../gen/payments/payin/v1/payin_pb';
import { percentOf } from '../../money';
import type { Merchant } from '../../onboarding/merchants';
import type { PlatformDeps } from '../../platform-deps';
import { renderQrPng } from '../../web/qr-png';
import { PAYIN_REASONS, type PayinReason } from './contract';
import { findLatestPayin, insertPayinWithOutbox, markPayinFailed, recordForwarded, releaseAbandonedForward, type PayinRow } from './store';
import { forwardPayin, UpstreamUnavailableError } from '../../upstream/client';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/**
 * How long past UPSTREAM_TIMEOUT_SECONDS an unanswered forward still holds its out_trade_no: covers recording the
 * answer after it arrived, so only a forward whose process died is ever released.
 */
const FORWARD_MARGIN_SECONDS = 30;

const refuse = (reason: PayinReason, detail?: string, fields?: FieldViolations) => reasonError(PAYIN_REASONS, reason, detail, fields);
const taken = () => refuse('OUT_TRADE_NO_TAKEN', 'out_trade_no held by a live payin', { out_trade_no: [problem('taken', 'out trade no')] });
const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505';

/** `PAYIN-` + 20 random uppercase letters and digits (platform decisions §4). */
export function newInvoiceReference(): string {
  let suffix = '';
  for (let index = 0; index < 20; index += 1) suffix += ALPHABET[randomInt(ALPHABET.length)];
  return `PAYIN-${suffix}`;
}

/** B1's answer for a forwarded payin. */
function payinAnswer(payin: Pick<PayinRow, 'invoice_reference' | 'amount_units' | 'fee_units' | 'out_trade_no' | 'qr_content'>, qr_image: string) {
  return {
    invoiceReference: payin.invoice_reference,
    amountUnits: payin.amount_units,
    currency: 'USDT',
    feeUnits: payin.fee_units,
    qrContent: payin.qr_content ?? '',
    qrImage: qr_image,
    outTradeNo: payin.out_trade_no,
  };
}

type PayinAnswer = ReturnType<typeof payinAnswer>;
type NewPayin = Pick<PayinRow, 'invoice_reference' | 'amount_units' | 'fee_units' | 'out_trade_no'>;

type SettlementAccounts = { wallet_account_id: string; settlement_account_id: string; fee_revenue_account_id: string };

/** Merchants whose settlement accounts one process remembers; past it the memory starts again (ids never change). */
const SETTLEMENT_ACCOUNTS_CACHED_MAX = 10_000;

/**
 * The ledger accounts the payin's settlement posts to: the merchant's USDT wallet, the platform's settlement and
 * fee_revenue accounts (opened when missing). Resolved once here and stored on the payin (migration 038), so the
 * settlement, on the upstream's notification, posts with them without looking them up.
 *
 * An account's id never changes (accounts are never deleted), so each process resolves a merchant's once: concurrent
 * creates share the one lookup in flight (a burst of a merchant's payins would otherwise take three pool connections
 * each, at once, beside the create's own transaction), and a failed lookup is forgotten so the next create asks again.
 */
function settlementAccounts(deps: PlatformDeps, merchant_id: string): Promise<SettlementAccounts> {
  const cache = settlementAccountsCache(deps);
  const cached = cache.get(merchant_id);
  if (cached) return cached;
  if (cache.size >= SETTLEMENT_ACCOUNTS_CACHED_MAX) cache.clear();
  const lookup = (async () => {
    const wallet = await deps.ledger.openAccount({ owner_type: 'merchant', owner_id: merchant_id, currency: 'USDT', kind: 'wallet' });
    const settlement = await deps.ledger.platformAccount('settlement', 'USDT');
    const revenue = await deps.ledger.platformAccount('fee_revenue', 'USDT');
    return { wallet_account_id: wallet.id, settlement_account_id: settlement.id, fee_revenue_account_id: revenue.id };
  })();
  cache.set(merchant_id, lookup);
  lookup.catch(() => cache.delete(merchant_id));
  return lookup;
}

/** One memory per platform (per database), so test platforms in one process never share ids. */
const settlementAccountsCaches = new WeakMap<object, Map<string, Promise<SettlementAccounts>>>();
function settlementAccountsCache(deps: PlatformDeps): Map<string, Promise<SettlementAccounts>> {
  let cache = settlementAccountsCaches.get(deps.database);
  if (!cache) settlementAccountsCaches.set(deps.database, (cache = new Map()));
  return cache;
}

/**
 * Records the payin with its outbox row (they commit together: a committed payin always gets its PayinWorkflow).
 * When a live payin holds the out_trade_no: the answer of this same request's earlier run (same Idempotency-Key,
 * whose process died before the answer was kept), else the holder released if its forward was abandoned.
 * @returns the earlier run's answer, or undefined once this payin is recorded
 * @throws DomainError OUT_TRADE_NO_TAKEN
 */
async function recordPayin(deps: PlatformDeps, merchant: Merchant, payin: NewPayin, memo: string | null, ownKey: string | undefined): Promise<PayinAnswer | undefined> {
  const accounts = await settlementAccounts(deps, merchant.id);
  const record = () =>
    insertPayinWithOutbox(deps.database, {
      ...payin,
      ...accounts,
      merchant_id: merchant.id,
      payin_fee_percent: merchant.payin_fee_percent,
      currency: 'USDT',
      memo,
      expires_at: new Date(Date.now() + deps.config.PAYIN_TTL_SECONDS * 1000),
      forwarding_until: new Date(Date.now() + (deps.config.UPSTREAM_TIMEOUT_SECONDS + FORWARD_MARGIN_SECONDS) * 1000),
      request_key: ownKey ?? null,
    }, activeTraceparent());
  try {
    await record();
    return undefined;
  } catch (error) {
    // The unique index payins_merchant_out_trade_no_live owns "taken".
    if (!isUniqueViolation(error)) throw error;
  }
  const holder = ownKey ? await findLatestPayin(deps.database, merchant.id, payin.out_trade_no) : undefined;
  if (holder && holder.request_key === ownKey && holder.qr_content) {
    return payinAnswer(holder, holder.qr_image ?? (await renderQrPng(holder.qr_content)).toString('base64'));
  }
  if (!(await releaseAbandonedForward(deps.database, merchant.id, payin.out_trade_no))) throw taken();
  deps.logger.warn({ merchant_id: merchant.id, out_trade_no: payin.out_trade_no }, 'released an abandoned payin forward');
  try {
    await record();
    return undefined;
  } catch (error) {
    throw isUniqueViolation(error) ? taken() : error;
  }
}

/**
 * Forwards a recorded payin upstream (the merchant's body as received) and keeps the upstream's answer.
 * @throws DomainError UPSTREAM_UNAVAILABLE, PAYIN_FAILED (the payin is marked failed: it holds its out_trade_no no more)
 */
async function forwardRecorded(deps: PlatformDeps, upstreamUrl: string, payin: NewPayin, upstreamBody: Uint8Array): Promise<PayinAnswer> {
  const { invoice_reference } = payin;
  let answer;
  try {
    answer = await forwardPayin(upstreamUrl, upstreamBody, {
      api_key: deps.config.UPSTREAM_API_KEY,
      invoice_reference,
      notify_url: `${deps.config.PUBLIC_BASE_URL}/api/v1/upstream/notifications`,
      timeout_seconds: deps.config.UPSTREAM_TIMEOUT_SECONDS,
    });
  } catch (error) {
    await markPayinFailed(deps.database, invoice_reference, (error as Error).message);
    if (error instanceof UpstreamUnavailableError) {
      deps.logger.warn({ invoice_reference, err: error.message }, 'upstream payin server unavailable');
      throw refuse('UPSTREAM_UNAVAILABLE');
    }
    deps.logger.error({ invoice_reference, err: error }, 'payin forwarding failed');
    throw refuse('PAYIN_FAILED', 'payin forwarding failed');
  }
  deps.payinOutbox?.wake();
  try {
    const qr_image = answer.qr_image ?? (await renderQrPng(answer.qr_content)).toString('base64');
    await recordForwarded(deps.database, invoice_reference, { qr_content: answer.qr_content, trx_ref: answer.trx_ref ?? null, qr_image });
    return payinAnswer({ ...payin, qr_content: answer.qr_content }, qr_image);
  } catch (error) {
    await markPayinFailed(deps.database, invoice_reference, (error as Error).message).catch(() => undefined);
    deps.logger.error({ invoice_reference, err: error }, 'payin creation failed after forwarding');
    throw refuse('PAYIN_FAILED', 'payin creation failed');
  }
}

/**
 * B1 for an authenticated merchant: records the payin with its outbox row, forwards it, answers its QR.
 * @param ownKey the request's own idempotency key (its Idempotency-Key), when it has one
 * @throws DomainError UPSTREAM_NOT_CONFIGURED, OUT_TRADE_NO_TAKEN, UPSTREAM_UNAVAILABLE, PAYIN_FAILED
 */
export async function createPayin(deps: PlatformDeps, merchant: Merchant, request: CreatePayinRequest, ownKey: string | undefined): Promise<PayinAnswer> {
  const upstreamUrl = deps.config.UPSTREAM_PAYIN_URL;
  if (!upstreamUrl) throw refuse('UPSTREAM_NOT_CONFIGURED', 'no upstream payin server', { upstream: ['not configured'] });
  const payin: NewPayin = {
    invoice_reference: newInvoiceReference(),
    amount_units: request.amountUnits,
    fee_units: percentOf(request.amountUnits, merchant.payin_fee_percent),
    out_trade_no: request.outTradeNo,
  };
  const earlier = await recordPayin(deps, merchant, payin, request.memo ?? null, ownKey);
  return earlier ?? forwardRecorded(deps, upstreamUrl, payin, request.upstreamBody);
}
