/**
 * PayoutService (docs/payouts.md): a merchant's payout from its wallet to a crypto address created (checked,
 * recorded, held with its fee and announced in one transaction; its PayoutWorkflow started after the commit, by
 * reference) and read back, over Connect; the operators' views, approvals and the merchants' limits. The merchant's
 * calls carry its Area B API key, checked by `deps.merchantAuth.requireApiKey` (src/merchant-auth); a payout is found
 * only for the merchant that owns it. The provider's signed decision is ./notifications.ts.
 *
 * Checks, in order, before anything is held: the request's fields (the address's TRON format and checksum), the
 * provider configured, the fee schedule's `fee_payout` of the channel, the merchant's minimum and per-payout limit,
 * then — under the merchant's payout lock, so two requests never both fit — its daily limit (payouts not failed since
 * 00:00 UTC) and its wallet (the holds of the amount and the fee: INSUFFICIENT_FUNDS rolls everything back).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, WorkflowNotFoundError } from '@temporalio/client';
import bs58check from 'bs58check';
import { createHash, randomUUID } from 'node:crypto';
import { retryingDeadlocks } from '../../db/knex';
import { randomAlphanumeric } from '../../crypto/secrets';
import { DomainError, invalidFields, reasonError, type FieldViolations } from '../../errors';
import { recordEvent } from '../../events';
import { problem } from '../../field-problems';
import { PayoutToBankResponseSchema, type PayoutService } from '../../gen/payments/payout/v1/payout_pb';
import { journaled } from '../../events';
import { answerIdempotently, movementRequest } from '../../idempotency';
import { requireInstrument } from '../../instruments/store';
import { clientAddressOf } from '../../rpc/client-address';
import { IDEMPOTENCY_REASONS } from '../../idempotency/reasons';
import { parseAmount } from '../../money';
import type { PlatformDeps } from '../../platform-deps';
import { callerOf } from '../../rpc/caller';
import { startWorkflow } from '../../temporal/client';
import { withRequestDeadline } from '../../temporal/deadline';
import { paymentSearchAttributes } from '../../temporal/search-attributes';
import { hasControlCharacters } from '../../text';
import { payoutWorkflow } from '../../../workflows/payout';
import { payoutEventData, placePayoutHolds } from './activities';
import { approvalSignal, PAYOUT_REASONS, type PayoutWorkflowInput } from './contract';
import {
  feePayoutOf,
  findPayout,
  findPayoutByKey,
  findPayoutByOutTradeNo,
  insertPayout,
  insertPayoutApproval,
  listPayouts,
  lockMerchantPayouts,
  payoutApprovalOf,
  payoutSettingsOf,
  payoutsSince,
  setPayoutSettings,
  type NewPayoutRow,
  type PayoutRow,
} from './store';

export { createPayoutActivities } from './activities';
export { listPayouts, overduePayouts, staleApprovals, orphanPayoutNotifications, findPayout, type PayoutRow } from './store';

/** The fee schedule's channel of a USDT (TRC-20) payout. */
export const CRYPTO_PAYOUT_CHANNEL = 'USDT_TRC20';
/** Longest memo, characters. */
export const PAYOUT_MEMO_MAX = 255;
/** Longest out_trade_no, characters. */
export const PAYOUT_OUT_TRADE_NO_MAX = 255;

/**
 * True for a TRON mainnet address: base58check (the checksum verified) of 21 bytes starting 0x41, as `T` and 33
 * characters. Checked before anything is held: a mistyped address is refused, never sent.
 */
export function isTronAddress(address: string): boolean {
  if (!/^T[1-9A-HJ-NP-Za-km-z]{33}$/.test(address)) return false;
  try {
    const bytes = bs58check.decode(address);
    return bytes.length === 21 && bytes[0] === 0x41;
  } catch {
    return false;
  }
}

/** A payout request (Area B, a schedule's run). Amounts in minor units. */
export interface PayoutRequest {
  amount_units: bigint;
  currency: string;
  /** The destination (TRON address for USDT). */
  address: string;
  memo: string;
  /** The merchant's own reference, unique per merchant; optional. */
  out_trade_no?: string;
  /** Where it came from (default `api`). */
  source?: PayoutRow['source'];
}

/** `PO-` + 20 uppercase letters and digits. */
export function newPayoutReference(): string {
  return `PO-${randomAlphanumeric(20)}`;
}

/** The payout workflow's input (its timeouts: PAYOUT_DECISION_TIMEOUT_SECONDS, PAYOUT_APPROVAL_TIMEOUT_SECONDS). */
export function payoutWorkflowInput(deps: PlatformDeps, payout: Pick<PayoutRow, 'payout_reference' | 'status'>): PayoutWorkflowInput {
  return {
    payout_reference: payout.payout_reference,
    decision_timeout_seconds: deps.config.PAYOUT_DECISION_TIMEOUT_SECONDS,
    approval_timeout_seconds: deps.config.PAYOUT_APPROVAL_TIMEOUT_SECONDS,
    awaiting_approval: payout.status === 'awaiting_approval',
  };
}

/**
 * Starts the payout's workflow (id = its reference) unless one exists or existed. Outside any transaction.
 * @throws what the Temporal client throws (the payout stays held; reconciliation reports it)
 */
export async function startPayoutWorkflow(deps: PlatformDeps, payout: PayoutRow): Promise<void> {
  try {
    await withRequestDeadline(deps, () =>
      startWorkflow(deps.temporal, payoutWorkflow, {
        taskQueue: deps.temporal.taskQueue,
        workflowId: payout.payout_reference,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        args: [payoutWorkflowInput(deps, payout)],
        ...paymentSearchAttributes({ owner: { merchant_id: payout.merchant_id }, kind: 'payout', amount_units: payout.amount_units, currency: payout.currency, status: payout.status }),
      }),
    );
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

async function startAfterCommit(deps: PlatformDeps, payout: PayoutRow): Promise<void> {
  try {
    await startPayoutWorkflow(deps, payout);
  } catch (error) {
    deps.logger.warn({ payout_reference: payout.payout_reference, err: (error as Error).message }, 'payout workflow not started; the payout stays held');
  }
}

function checkRequest(request: PayoutRequest): void {
  const fields: FieldViolations = {};
  if (typeof request.amount_units !== 'bigint' || request.amount_units <= 0n) fields.amount = [problem('positive')];
  if (request.currency !== 'USDT') fields.currency = [request.currency ? problem('invalid') : problem('required')];
  if (!request.address) fields.address = [problem('required')];
  else if (!isTronAddress(request.address)) fields.address = [problem('invalid')];
  if ([...(request.memo ?? '')].length > PAYOUT_MEMO_MAX) fields.memo = [problem('max_length', PAYOUT_MEMO_MAX)];
  else if (hasControlCharacters(request.memo ?? '')) fields.memo = [problem('control_characters')];
  if (request.out_trade_no !== undefined) {
    if ([...request.out_trade_no].length > PAYOUT_OUT_TRADE_NO_MAX) fields.out_trade_no = [problem('max_length', PAYOUT_OUT_TRADE_NO_MAX)];
    else if (hasControlCharacters(request.out_trade_no)) fields.out_trade_no = [problem('control_characters')];
  }
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
}

function fingerprintOf(request: PayoutRequest): string {
  const parameters = [request.amount_units.toString(), request.currency, request.address, request.memo ?? '', request.out_trade_no ?? null];
  return createHash('sha256').update(JSON.stringify(parameters)).digest('hex');
}

async function replayed(deps: PlatformDeps, merchant_id: string, key: string, fingerprint: string): Promise<PayoutRow | undefined> {
  const first = await findPayoutByKey(deps.database, merchant_id, key);
  if (first && first.request_fingerprint !== fingerprint) throw reasonError(IDEMPOTENCY_REASONS, 'IDEMPOTENCY_KEY_REUSED', 'the Idempotency-Key was used with other parameters');
  return first;
}

const isUniqueViolation = (error: unknown) => (error as { code?: string; constraint?: string }).code === '23505';

/** The payout fee of the channel, minor units. @throws DomainError PAYOUT_FEE_NOT_CONFIGURED */
async function feeOf(deps: PlatformDeps, channel: string): Promise<bigint> {
  const fee = await feePayoutOf(deps.database, channel);
  if (!fee || fee.currency !== 'USDT') throw reasonError(PAYOUT_REASONS, 'PAYOUT_FEE_NOT_CONFIGURED', `no USDT fee_payout for channel ${channel}`);
  return parseAmount(fee.amount, 'USDT', { allowZero: true, field: 'fee_payout' });
}

/** Midnight UTC of `now`'s day: the daily limit's window. */
function dayStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

/** What a payout is recorded with beyond its reference, status and timeouts. */
type PayoutDraft = Omit<NewPayoutRow, 'payout_reference' | 'status' | 'request_key' | 'request_fingerprint' | 'approval_due_at' | 'decision_due_at'>;

/**
 * Records a payout, holds it and its fee and announces it, in one transaction under the merchant's payout lock; it is
 * checked against the merchant's limits in its currency first (crypto payouts' in USDT, bank payouts' in USD: minimum
 * and per-payout before, daily under the lock), and waits for approval above that currency's threshold.
 * @returns the payout as recorded
 * @throws DomainError PAYOUT_BELOW_MINIMUM, PAYOUT_ABOVE_LIMIT, PAYOUT_DAILY_LIMIT_EXCEEDED, PAYOUT_INSUFFICIENT_BALANCE
 */
async function recordPayout(deps: PlatformDeps, draft: PayoutDraft, request_key: string | null, fingerprint: string): Promise<PayoutRow> {
  const payout_reference = newPayoutReference();
  const { merchant_id, amount_units } = draft;
  const settings = await payoutSettingsOf(deps.database, merchant_id, draft.currency);
  if (settings.min_units !== null && amount_units < settings.min_units) {
    throw reasonError(PAYOUT_REASONS, 'PAYOUT_BELOW_MINIMUM', `the minimum payout is ${settings.min_units} minor units`);
  }
  if (settings.per_payout_max_units !== null && amount_units > settings.per_payout_max_units) {
    throw reasonError(PAYOUT_REASONS, 'PAYOUT_ABOVE_LIMIT', `the largest payout is ${settings.per_payout_max_units} minor units`);
  }
  const now = new Date();
  return retryingDeadlocks(() => deps.database.transaction(async (trx) => {
    await lockMerchantPayouts(trx, merchant_id);
    if (settings.daily_max_units !== null && (await payoutsSince(trx, merchant_id, draft.currency, dayStart(now))) + amount_units > settings.daily_max_units) {
      throw reasonError(PAYOUT_REASONS, 'PAYOUT_DAILY_LIMIT_EXCEEDED', `the daily payout limit is ${settings.daily_max_units} minor units`);
    }
    const awaiting = settings.approval_threshold_units !== null && amount_units > settings.approval_threshold_units;
    // The holds' ids chosen beforehand and written with the row: nothing but the events follows the holds, which keep
    // the wallet locked until the commit.
    const created = await insertPayout(trx, {
      ...draft,
      pending_transfer_id: randomUUID(),
      fee_pending_transfer_id: draft.fee_units > 0n ? randomUUID() : null,
      payout_reference,
      status: awaiting ? 'awaiting_approval' : 'held',
      request_key,
      request_fingerprint: request_key ? fingerprint : null,
      approval_due_at: awaiting ? new Date(now.getTime() + deps.config.PAYOUT_APPROVAL_TIMEOUT_SECONDS * 1000) : null,
      decision_due_at: new Date(now.getTime() + (awaiting ? deps.config.PAYOUT_APPROVAL_TIMEOUT_SECONDS : 0) * 1000 + deps.config.PAYOUT_DECISION_TIMEOUT_SECONDS * 1000),
    });
    try {
      // `direct`: an error here rolls the whole request back (nothing recorded, nothing held).
      const held = await placePayoutHolds(deps, trx, created, 'direct');
      // A fresh reference's keys: never a replay of another hold (which would name other ids).
      if (held.pending_transfer_id !== created.pending_transfer_id || held.fee_pending_transfer_id !== created.fee_pending_transfer_id) {
        throw new Error(`payout ${payout_reference}: holds are not the ones recorded`);
      }
    } catch (error) {
      if (error instanceof DomainError && error.reason === 'INSUFFICIENT_FUNDS') {
        throw reasonError(PAYOUT_REASONS, 'PAYOUT_INSUFFICIENT_BALANCE', 'the wallet has less available than the payout and its fee');
      }
      throw error;
    }
    const owner = { type: 'merchant' as const, id: merchant_id };
    await recordEvent(trx, { owner, subject: payout_reference, type: 'payout.created', data: payoutEventData(created) });
    if (awaiting) await recordEvent(trx, { owner, subject: payout_reference, type: 'payout.pending_approval', data: payoutEventData(created) });
    return created;
  }));
}

/**
 * Creates a merchant's crypto payout: checks the request, the provider, the fee, the limits and the wallet, records
 * the payout with its holds (`<ref>:hold`, `<ref>:hold-fee`) and `payout.created` (and `payout.pending_approval` above
 * the approval threshold) in one transaction, then starts its PayoutWorkflow. The same `request_key` with the same
 * parameters answers the first payout.
 * @returns the payout (status `held` or `awaiting_approval` when new)
 * @throws DomainError VALIDATION_FAILED (amount, currency, address, memo, out_trade_no), PAYOUT_PROVIDER_NOT_CONFIGURED,
 *   PAYOUT_FEE_NOT_CONFIGURED, PAYOUT_BELOW_MINIMUM, PAYOUT_ABOVE_LIMIT, PAYOUT_DAILY_LIMIT_EXCEEDED,
 *   PAYOUT_INSUFFICIENT_BALANCE, PAYOUT_OUT_TRADE_NO_TAKEN, IDEMPOTENCY_KEY_REUSED; nothing is held for any of them
 */
export async function createPayout(deps: PlatformDeps, merchant_id: string, request: PayoutRequest, request_key?: string): Promise<PayoutRow> {
  checkRequest(request);
  if (!deps.upstream) throw reasonError(PAYOUT_REASONS, 'PAYOUT_PROVIDER_NOT_CONFIGURED', 'no payout provider is configured');
  const fingerprint = fingerprintOf(request);
  let payout = request_key ? await replayed(deps, merchant_id, request_key, fingerprint) : undefined;
  if (!payout) {
    const fee_units = await feeOf(deps, CRYPTO_PAYOUT_CHANNEL);
    try {
      const draft: PayoutDraft = {
        merchant_id,
        kind: 'crypto',
        source: request.source ?? 'api',
        out_trade_no: request.out_trade_no || null,
        amount_units: request.amount_units,
        fee_units,
        currency: 'USDT',
        channel: CRYPTO_PAYOUT_CHANNEL,
        user_id: null,
        instrument_token: null,
        address: request.address,
        memo: request.memo ?? '',
      };
      payout = await recordPayout(deps, draft, request_key ?? null, fingerprint);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      // The same key at the same time: the other request recorded it. Else the out_trade_no is another payout's.
      const first = request_key ? await replayed(deps, merchant_id, request_key, fingerprint) : undefined;
      if (!first) throw reasonError(PAYOUT_REASONS, 'PAYOUT_OUT_TRADE_NO_TAKEN', 'the out_trade_no names another payout');
      payout = first;
    }
  }
  if (payout.status === 'held' || payout.status === 'awaiting_approval') await startAfterCommit(deps, payout);
  return payout;
}

/** An Area C bank payout request: a user's wallet to its bank account. Amount in minor units of `currency`. */
export interface BankPayoutRequest {
  user_id: string;
  /** The user's tokenized bank account. */
  token: string;
  amount_units: bigint;
  /** The user's wallet currency (USD). */
  currency: string;
}

/** The fee schedule's channel of a bank: its own (`ABA Bank` → `ABA`) when the schedule has one, else `BANK`. */
async function bankChannelOf(deps: PlatformDeps, bank_id: number | null): Promise<string> {
  const bank = bank_id ? ((await deps.database('banks').where({ id: bank_id }).first('name')) as { name: string } | undefined) : undefined;
  const own = bank?.name.split(/\s+/)[0]?.toUpperCase();
  if (own && (await feePayoutOf(deps.database, own))) return own;
  return 'BANK';
}

/**
 * Creates an Area C bank payout (docs/payouts.md "Bank payouts"): the user's verified bank account of the same
 * merchant, the fee of its bank's channel, the merchant's USD payout limits (above its USD approval threshold the
 * payout waits for approval, held), the hold on the user's wallet, then its PayoutWorkflow (the bank rails).
 * @param request_key the action's own key (its idempotency record answers repeats before this runs)
 * @throws DomainError INSTRUMENT_NOT_FOUND (unknown, another merchant's or another user's account),
 *   INSTRUMENT_NOT_ACTIVATED (not verified), VALIDATION_FAILED (amount, currency), PAYOUT_FEE_NOT_CONFIGURED,
 *   PAYOUT_BELOW_MINIMUM, PAYOUT_ABOVE_LIMIT, PAYOUT_DAILY_LIMIT_EXCEEDED, PAYOUT_INSUFFICIENT_BALANCE; nothing is
 *   held for any of them
 */
export async function createBankPayout(deps: PlatformDeps, merchant_id: string, request: BankPayoutRequest, request_key: string | null): Promise<PayoutRow> {
  const fields: FieldViolations = {};
  if (request.amount_units <= 0n) fields.amount = [problem('positive')];
  if (request.currency !== 'USD') fields.currency = [request.currency ? problem('invalid') : problem('required')];
  if (!/^\d{1,19}$/.test(request.user_id)) fields.user_id = [request.user_id ? problem('invalid') : problem('required')];
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
  // The account is the same merchant's and user's, and verified (its activation done): else refused, nothing held.
  const account = await requireInstrument(deps.database, { merchantId: merchant_id, token: request.token, userId: request.user_id, kinds: ['bank_account'] });
  const channel = await bankChannelOf(deps, account.bankId);
  const fee = await feePayoutOf(deps.database, channel);
  if (!fee || fee.currency !== request.currency) throw reasonError(PAYOUT_REASONS, 'PAYOUT_FEE_NOT_CONFIGURED', `no ${request.currency} fee_payout for channel ${channel}`);
  const fingerprint = createHash('sha256').update(JSON.stringify([request.user_id, request.token, request.amount_units.toString(), request.currency])).digest('hex');
  const payout = await recordPayout(
    deps,
    {
      merchant_id,
      kind: 'bank',
      source: 'area_c',
      out_trade_no: null,
      amount_units: request.amount_units,
      fee_units: parseAmount(fee.amount, 'USD', { allowZero: true, field: 'fee_payout' }),
      currency: 'USD',
      channel,
      user_id: request.user_id,
      instrument_token: account.token,
      address: `bank account ****${account.last4}`,
      memo: '',
    },
    request_key,
    fingerprint,
  );
  await startAfterCommit(deps, payout);
  return payout;
}

/** The caller's payout by reference or out_trade_no. @throws DomainError PAYOUT_NOT_FOUND (another merchant's too) */
export async function payoutOf(deps: PlatformDeps, merchant_id: string, name: { payout_reference?: string; out_trade_no?: string }): Promise<PayoutRow> {
  const payout = name.payout_reference
    ? await findPayout(deps.database, name.payout_reference)
    : name.out_trade_no
      ? await findPayoutByOutTradeNo(deps.database, merchant_id, name.out_trade_no)
      : undefined;
  if (!payout || payout.merchant_id !== merchant_id) throw reasonError(PAYOUT_REASONS, 'PAYOUT_NOT_FOUND', 'no payout with this reference');
  return payout;
}

/**
 * Records an approval or rejection of a payout awaiting approval (the authority its run reads), then hints the run.
 * @param actor who decided: `operator:<credential id>` or `merchant:<merchant_id>`
 * @returns the payout as it is after the hint was sent (its run applies the record)
 * @throws DomainError PAYOUT_NOT_FOUND, PAYOUT_NOT_AWAITING_APPROVAL (decided already, or never awaiting)
 */
export async function decidePayoutApproval(deps: PlatformDeps, payout_reference: string, decision: 'approve' | 'reject', actor: string, note = ''): Promise<PayoutRow> {
  const payout = await findPayout(deps.database, payout_reference);
  if (!payout) throw reasonError(PAYOUT_REASONS, 'PAYOUT_NOT_FOUND', 'no payout with this reference');
  if (payout.status !== 'awaiting_approval') throw reasonError(PAYOUT_REASONS, 'PAYOUT_NOT_AWAITING_APPROVAL', `the payout is ${payout.status}`);
  const recorded = await insertPayoutApproval(deps.database, { payout_reference, decision, actor, note });
  const record = recorded ? undefined : await payoutApprovalOf(deps.database, payout_reference);
  if (record && record.decision !== decision) throw reasonError(PAYOUT_REASONS, 'PAYOUT_NOT_AWAITING_APPROVAL', `the payout was ${record.decision}d already`);
  try {
    await deps.temporal.client.workflow.getHandle(payout_reference).signal(approvalSignal, { decision });
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) {
      deps.logger.warn({ payout_reference, err: (error as Error).message }, 'payout approval recorded; its run was not told (it reads the record on its timeout)');
    } else {
      // No run (its start failed after the commit): one that starts applies the record first.
      await startAfterCommit(deps, payout);
    }
  }
  return payout;
}

/**
 * The merchant's own approval or rejection of its payout awaiting approval (its dashboard sign-in, checked by the
 * caller): recorded as `merchant:<merchant_id>`, as an operator's is. Another merchant's payout is not found.
 * @throws DomainError PAYOUT_NOT_FOUND, PAYOUT_NOT_AWAITING_APPROVAL
 */
export async function merchantDecidesPayout(deps: PlatformDeps, merchant_id: string, payout_reference: string, decision: 'approve' | 'reject'): Promise<PayoutRow> {
  await payoutOf(deps, merchant_id, { payout_reference });
  return decidePayoutApproval(deps, payout_reference, decision, `merchant:${merchant_id}`);
}

// ---- The RPC ----

const LIST_DEFAULT = 100;
/** An Idempotency-Key: 1 to 255 visible ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** A payout as the RPC answers it; `merchant_id` only in operators' answers. */
export function payoutMessage(row: PayoutRow, operator = false) {
  return {
    payoutReference: row.payout_reference,
    outTradeNo: row.out_trade_no ?? '',
    amountUnits: row.amount_units,
    feeUnits: row.fee_units,
    currency: row.currency,
    status: row.status,
    address: row.address,
    memo: row.memo,
    payoutTrxRef: row.provider_reference ?? '',
    failureReason: row.failure_reason ?? '',
    createdAt: row.created_at.toISOString(),
    decidedAt: row.decided_at ? row.decided_at.toISOString() : '',
    merchantId: operator ? row.merchant_id : '',
    kind: row.kind,
    source: row.source,
    channel: row.channel,
  };
}

/** The operator credential of an admin call, as its approval record names it. */
function operatorOf(context: HandlerContext): string {
  return `operator:${callerOf(context)?.id ?? 'unknown'}`;
}

const orNull = (units: bigint) => (units > 0n ? units : null);

/** The PayoutService but SetPayoutSchedule (./schedules.ts `createSetPayoutSchedule`, joined by the composition root). */
export function createPayoutService(deps: PlatformDeps): Omit<ServiceImpl<typeof PayoutService>, 'setPayoutSchedule'> {
  const authenticate = deps.merchantAuth.requireApiKey;
  return {
    async createPayout(request, context) {
      const merchant = await authenticate(request.apiKey, context);
      // Required: a payout moves money, and a client's retry without a key would pay twice.
      if (!IDEMPOTENCY_KEY.test(request.idempotencyKey)) {
        throw reasonError(IDEMPOTENCY_REASONS, 'IDEMPOTENCY_KEY_INVALID', 'the Idempotency-Key must be 1 to 255 visible ASCII characters');
      }
      const payout = await createPayout(
        deps,
        merchant.id,
        { amount_units: request.amountUnits, currency: request.currency, address: request.address, memo: request.memo, ...(request.outTradeNo ? { out_trade_no: request.outTradeNo } : {}) },
        request.idempotencyKey,
      );
      return { payout: payoutMessage(payout) };
    },

    async getPayoutStatus(request, context) {
      const merchant = await authenticate(request.apiKey, context);
      if (!request.payoutReference && !request.outTradeNo) throw invalidFields({ payout_reference: [problem('required')] });
      return { payout: payoutMessage(await payoutOf(deps, merchant.id, { payout_reference: request.payoutReference, out_trade_no: request.outTradeNo })) };
    },

    async listPayouts(request) {
      const rows = await listPayouts(deps.database, { merchant_id: request.merchantId || undefined, status: request.status || undefined, limit: request.limit || LIST_DEFAULT });
      return { payouts: rows.map((row) => payoutMessage(row, true)) };
    },

    async showPayout(request) {
      const row = await findPayout(deps.database, request.payoutReference);
      if (!row) throw reasonError(PAYOUT_REASONS, 'PAYOUT_NOT_FOUND', 'no payout with this reference');
      return { payout: payoutMessage(row, true) };
    },

    async decidePayoutApproval(request, context) {
      const decision = request.decision === 'approve' ? 'approve' : 'reject';
      const row = await decidePayoutApproval(deps, request.payoutReference, decision, operatorOf(context), request.note);
      return { payout: payoutMessage(row, true) };
    },

    /** payout_to_bank (Area C, signed): the same signed body, or the same Idempotency-Key, answers the first payout. */
    async payoutToBank(request, context) {
      const act = await deps.merchantAuth.requireMerchant(request, context);
      const fields = { user_id: request.userId, token: request.token, amount_units: request.amountUnits, currency: request.currency };
      return journaled(
        deps,
        { owner_kind: 'merchant', owner_id: act.merchantId, action: 'area-c.payout_to_bank', idempotency_key: request.idempotencyKey, client_address: clientAddressOf(context) },
        () =>
          answerIdempotently(
            deps.idempotency,
            movementRequest(act, request.idempotencyKey, 'area-c.payout_to_bank', [fields.user_id, fields.token, fields.amount_units, fields.currency]),
            PayoutToBankResponseSchema,
            async (ownKey) => ({ payout: payoutMessage(await createBankPayout(deps, act.merchantId, fields, ownKey ?? null)) }),
          ),
        (answer) => answer.payout?.payoutReference,
      );
    },

    /** payout_status (Area C, signed): one of the merchant's payouts. */
    async getBankPayoutStatus(request, context) {
      const act = await deps.merchantAuth.requireMerchant(request, context);
      return { payout: payoutMessage(await payoutOf(deps, act.merchantId, { payout_reference: request.payoutReference })) };
    },

    async setPayoutSettings(request) {
      const settings = {
        min_units: orNull(request.minUnits),
        per_payout_max_units: orNull(request.perPayoutMaxUnits),
        daily_max_units: orNull(request.dailyMaxUnits),
        approval_threshold_units: orNull(request.approvalThresholdUnits),
      };
      const currency = request.currency === 'USD' ? 'USD' : 'USDT';
      await setPayoutSettings(deps.database, request.merchantId, settings, currency);
      const { merchantId, minUnits, perPayoutMaxUnits, dailyMaxUnits, approvalThresholdUnits } = request;
      return { merchantId, minUnits, perPayoutMaxUnits, dailyMaxUnits, approvalThresholdUnits, currency };
    },
  };
}
