/**
 * The RefundWorkflow's activities (docs/refunds.md): the refund's port over the money-out saga
 * (src/flows/money-out/activities.ts, docs/money-out.md), the refund flow's only caller of the ledger. The hold on the
 * merchant's wallet (`<ref>:hold`, placed with the refund by the service, through `placeRefundHold`) and the fee
 * share's on fee_revenue (`<ref>:hold-fee`, a refund under `refund_fee: returned`); the provider, the upstream's
 * refund request (`deps.upstream`, src/upstream/client.ts) under the refund's key; the decision's record, event and
 * webhook. A decision is taken only from the provider's own answer or from the signed notification the upstream's
 * door recorded, never from a workflow message.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from '../../db/knex';
import type { LedgerJoin } from '../../ledger/types';
import { amountJson, stringifyJson } from '../../money';
import type { PlatformDeps } from '../../platform-deps';
import { reasonFailure } from '../../temporal/failures';
import { recordWebhookEvent } from '../../webhooks';
import type { MoneyOutDecision } from '../money-out/contract';
import { createMoneyOutSteps, placeMoneyOutHolds, type MoneyOutPort } from '../money-out/activities';
import { REFUND_REASONS, refundIdempotencyKey, refundProviderKey, type RefundActivities, type RefundEvent, type RefundStatus } from './contract';
import { firstRefundNotification, findRefund, lockRefund, updateRefund, type RefundRow } from './store';

/** Stable webhook id of a refund's decision event (X-Webhook-Id, also its delivery workflow's id). */
export function refundWebhookId(refund: Pick<RefundRow, 'invoice_reference' | 'refund_reference'>, event: Exclude<RefundEvent, 'refund.created'>): string {
  return `WH-${refund.invoice_reference.replace(/^PAYIN-/, '')}-REFUND-${refund.refund_reference.replace(/^RFD-/, '')}-${event.split('.')[1]!.toUpperCase()}`;
}

/** A refund's event data (docs/events.md): amounts as decimal strings of minor units. */
export function refundEventData(refund: RefundRow): Record<string, unknown> {
  return {
    refund_reference: refund.refund_reference,
    invoice_reference: refund.invoice_reference,
    out_trade_no: refund.out_trade_no,
    status: refund.status,
    amount_units: refund.amount_units.toString(),
    refund_fee: refund.refund_fee,
    fee_units: refund.fee_units.toString(),
    currency: refund.currency,
    address: refund.address,
    reason: refund.reason,
    refund_trx_ref: refund.refund_trx_ref,
    failure_reason: refund.failure_reason,
  };
}

/** The webhook body of a refund's decision: `{"success", "code", "event", "data"}` like every Area B webhook. */
export function refundWebhookBody(refund: RefundRow, event: RefundEvent): string {
  return stringifyJson({
    success: true,
    code: 200,
    event,
    data: {
      refund_reference: refund.refund_reference,
      invoice_reference: refund.invoice_reference,
      out_trade_no: refund.out_trade_no,
      amount: amountJson(refund.amount_units, refund.currency),
      currency: refund.currency,
      status: refund.status,
      address: refund.address,
      reason: refund.reason,
      refund_trx_ref: refund.refund_trx_ref,
      failure_reason: refund.failure_reason,
    },
  });
}

/** No account known beforehand: the holds find them. */
const NO_ACCOUNTS = { wallet_account_id: null, settlement_account_id: null, fee_revenue_account_id: null };

/**
 * Places the refund's holds, each towards the settlement account (where a payin's money came from), as ledger pending
 * transfers: `amount_units − fee_units` on the merchant's wallet (`<ref>:hold`) and, when the refund returns the
 * payin fee's share, `fee_units` on the platform's fee_revenue (`<ref>:hold-fee`). Minor units.
 * @param join how the holds join `trx` (types.ts LedgerJoin): `direct` (statements fewer while the wallet is locked)
 *   only for a caller whose transaction rolls back on any error of this call
 * @param pending_transfer_id the wallet hold's id when the caller chose it (a uuid it recorded before, in the row)
 * @param accounts the accounts the refunded payin's settlement posted to (its row's), when it names them: the holds
 *   then take no account lookup; without them (or for one it lacks) the ledger finds it
 * @returns the pending transfers' ids (the fee's null when the refund returns no fee)
 * @throws DomainError INSUFFICIENT_FUNDS when the wallet (or fee_revenue) has less available (the caller's transaction
 *   rolls back)
 */
export async function placeRefundHold(
  deps: Pick<PlatformDeps, 'ledger'>,
  trx: Knex.Transaction,
  refund: Pick<RefundRow, 'refund_reference' | 'merchant_id' | 'currency' | 'amount_units' | 'invoice_reference' | 'fee_units'>,
  join: LedgerJoin = 'savepoint',
  pending_transfer_id?: string,
  accounts: { wallet_account_id: string | null; settlement_account_id: string | null; fee_revenue_account_id: string | null } = NO_ACCOUNTS,
): Promise<{ pending_transfer_id: string; fee_pending_transfer_id: string | null }> {
  // The wallet exists once a payin credited the merchant: found with one read, opened only when missing.
  const address = { owner_type: 'merchant', owner_id: refund.merchant_id, currency: refund.currency, kind: 'wallet' } as const;
  const wallet = accounts.wallet_account_id ?? ((await deps.ledger.findAccount(address, trx)) ?? (await deps.ledger.openAccount(address, trx))).id;
  const settlement = accounts.settlement_account_id ?? (await deps.ledger.platformAccount('settlement', refund.currency, trx)).id;
  const revenue = refund.fee_units > 0n ? (accounts.fee_revenue_account_id ?? (await deps.ledger.platformAccount('fee_revenue', refund.currency, trx)).id) : undefined;
  const hold = (debit_account_id: string, amount_units: bigint, step: 'hold' | 'hold-fee', id?: string) => ({
    idempotency_key: refundIdempotencyKey(refund.refund_reference, step),
    debit_account_id,
    credit_account_id: settlement,
    amount_units,
    description: `refund ${refund.refund_reference} of ${refund.invoice_reference} held${step === 'hold-fee' ? ' (payin fee share)' : ''}`,
    metadata: { refund_reference: refund.refund_reference, invoice_reference: refund.invoice_reference },
    ...(id ? { id } : {}),
  });
  const [wallet_hold, fee_hold] = await placeMoneyOutHolds(
    deps,
    trx,
    [hold(wallet, refund.amount_units - refund.fee_units, 'hold', pending_transfer_id), ...(revenue ? [hold(revenue, refund.fee_units, 'hold-fee')] : [])],
    join,
  );
  if (!wallet_hold) throw new Error(`refund ${refund.refund_reference}: nothing to hold on the wallet`);
  return { pending_transfer_id: wallet_hold, fee_pending_transfer_id: fee_hold ?? null };
}

/** The event a decided refund announced. */
function decisionEvent(status: 'succeeded' | 'failed'): Exclude<RefundEvent, 'refund.created'> {
  return status === 'succeeded' ? 'refund.succeeded' : 'refund.failed';
}

/**
 * The refund's port over the money-out saga: its row (`refunds`), its legs (the wallet's hold, and the fee share's),
 * the upstream's refund request, and the decision's record, event and webhook.
 * @param provider the upstream provider (undefined: none configured; requests are retried until one is)
 */
export function refundPort(deps: PlatformDeps, provider: Pick<NonNullable<PlatformDeps['upstream']>, 'refund'> | undefined): MoneyOutPort<RefundRow, RefundStatus> {
  const stageOf = (refund: RefundRow) => (refund.status === 'pending' ? 'requested' : refund.status);
  return {
    notFound: (reference) => reasonFailure(REFUND_REASONS, 'REFUND_NOT_FOUND', `refund ${reference} not found`),
    notAuthorized: (reference) => reasonFailure(REFUND_REASONS, 'REFUND_DECISION_NOT_AUTHORIZED', `no recorded notification for ${reference}`),
    read: (db, reference) => findRefund(db, reference),
    lock: lockRefund,
    stage: stageOf,
    status: (refund) => refund.status,
    webhookOf: (refund) => (refund.status === 'succeeded' || refund.status === 'failed' ? refundWebhookId(refund, decisionEvent(refund.status)) : null),
    held: (refund) => refund.pending_transfer_id !== null,
    placeHolds: async (trx, refund) => updateRefund(trx, refund.refund_reference, await placeRefundHold(deps, trx, refund)),
    legs(refund) {
      if (!refund.pending_transfer_id) throw new Error(`refund ${refund.refund_reference} has no hold`);
      if (refund.fee_units > 0n && !refund.fee_pending_transfer_id) throw new Error(`refund ${refund.refund_reference} has no fee hold`);
      const key = (step: 'post' | 'void' | 'post-fee' | 'void-fee') => refundIdempotencyKey(refund.refund_reference, step);
      return [
        { pending_transfer_id: refund.pending_transfer_id, post_key: key('post'), void_key: key('void') },
        { pending_transfer_id: refund.fee_pending_transfer_id, post_key: key('post-fee'), void_key: key('void-fee') },
      ];
    },
    async ask(refund) {
      // Retryable: a provider configured later (or a process with its settings) takes the refund on.
      if (!provider) throw ApplicationFailure.retryable('no refund provider configured', 'REFUND_PROVIDER_NOT_CONFIGURED');
      const { refund_reference, invoice_reference, trx_ref, amount_units, currency, address, reason } = refund;
      const outcome = await provider.refund({ refund_reference, invoice_reference, trx_ref, amount_units, currency, address, reason }, refundProviderKey(refund_reference));
      return outcome.status === 'succeeded' ? { status: 'succeeded', provider_reference: outcome.refund_trx_ref } : outcome;
    },
    async markRequested(trx, refund) {
      await updateRefund(trx, refund.refund_reference, { status: 'pending' });
      return 'pending';
    },
    async recordedDecision(db, reference): Promise<MoneyOutDecision | undefined> {
      const notification = await firstRefundNotification(db, reference);
      if (!notification) return undefined;
      return notification.status === 'refund_succeeded'
        ? { status: 'succeeded', provider_reference: notification.refund_trx_ref ?? '' }
        : { status: 'failed', failure_reason: notification.failure_reason || 'refused by the provider' };
    },
    async decided(trx, refund, decision, ledger_transaction_id) {
      const event = decisionEvent(decision.status);
      const after: RefundRow = {
        ...refund,
        status: decision.status,
        ledger_transaction_id,
        refund_trx_ref: decision.status === 'succeeded' ? decision.provider_reference : null,
        failure_reason: decision.status === 'failed' ? decision.failure_reason : null,
        decided_at: new Date(),
      };
      const { status, refund_trx_ref, failure_reason, decided_at } = after;
      await updateRefund(trx, refund.refund_reference, { status, ledger_transaction_id, refund_trx_ref, failure_reason, decided_at });
      const webhook = { id: refundWebhookId(refund, event), merchant_id: refund.merchant_id, subject_reference: refund.invoice_reference, event };
      const webhook_id = await recordWebhookEvent(trx, { ...webhook, body: refundWebhookBody(after, event), data: refundEventData(after), ledger_transaction_id }, deps.benchFloor);
      return { status, webhook_id };
    },
    deliversWebhooks: true,
  };
}

/** The RefundWorkflow's activities: the saga's steps over the refund's port, under the refund's names. */
export function createRefundActivities(deps: PlatformDeps): RefundActivities {
  const steps = createMoneyOutSteps(deps, refundPort(deps, deps.upstream));
  return {
    requestRefund: (input) => steps.request(input.refund_reference),
    applyRefundDecision: (input) => steps.applyDecision(input.refund_reference),
  };
}
