/**
 * The RefundWorkflow's activities (docs/refunds.md), the refund flow's only caller of the ledger: the hold on the
 * merchant's wallet (`<ref>:hold`, placed with the refund by the service, through `placeRefundHold`), the provider's
 * request under the refund's idempotency key, and the decision: succeeded posts the hold (`<ref>:post`), failed
 * voids it (`<ref>:void`), each with its event and webhook in the same transaction, exactly once (the refund's row
 * lock, its status and the ledger keys). A decision is taken only from the provider's own answer or from the signed
 * notification the notification route recorded, never from a workflow message.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from '../../db/knex';
import type { LedgerJoin } from '../../ledger/types';
import { amountJson, stringifyJson } from '../../money';
import type { PlatformDeps } from '../../platform-deps';
import { reasonFailure } from '../../temporal/failures';
import { deliverWebhooks, recordWebhookEvent } from '../../webhooks';
import { REFUND_REASONS, refundIdempotencyKey, refundProviderKey, type RefundActivities, type RefundEvent, type RefundStep } from './contract';
import { firstRefundNotification, lockRefund, updateRefund, type RefundRow } from './store';

/** The provider's answer to a refund request (the upstream port's outcome, src/flows/payin/upstream-refunds.ts). */
export type RefundProviderOutcome = { status: 'succeeded'; refund_trx_ref: string } | { status: 'failed'; failure_reason: string } | { status: 'pending' };

/**
 * The refund provider port the composition root hands in (the upstream's, `upstreamRefundsFromConfig`). An error with
 * `retryable: false` is a refusal for good (nothing was sent); any other error gave no outcome and is retried under
 * the same key.
 */
export interface RefundProvider {
  refund(
    input: {
      refund_reference: string;
      invoice_reference: string;
      trx_ref: string;
      amount_units: bigint;
      currency: 'USDT';
      address: string;
      reason: string;
    },
    idempotency_key: string,
  ): Promise<RefundProviderOutcome>;
}

/** The decision a refund ends with. */
type Decision = { status: 'succeeded'; refund_trx_ref: string } | { status: 'failed'; failure_reason: string };

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

/**
 * Places the refund's holds, each towards the settlement account (where a payin's money came from), as ledger pending
 * transfers: `amount_units − fee_units` on the merchant's wallet (`<ref>:hold`) and, when the refund returns the
 * payin fee's share, `fee_units` on the platform's fee_revenue (`<ref>:hold-fee`). Minor units.
 * @param join how the holds join `trx` (types.ts LedgerJoin): `direct` (statements fewer while the wallet is locked)
 *   only for a caller whose transaction rolls back on any error of this call
 * @param pending_transfer_id the wallet hold's id when the caller chose it (a uuid it recorded before, in the row)
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
): Promise<{ pending_transfer_id: string; fee_pending_transfer_id: string | null }> {
  // The wallet exists once a payin credited the merchant: found with one read, opened only when missing.
  const address = { owner_type: 'merchant', owner_id: refund.merchant_id, currency: refund.currency, kind: 'wallet' } as const;
  const wallet = (await deps.ledger.findAccount(address, trx)) ?? (await deps.ledger.openAccount(address, trx));
  const settlement = await deps.ledger.platformAccount('settlement', refund.currency, trx);
  const hold = (debit_account_id: string, amount_units: bigint, step: 'hold' | 'hold-fee', id?: string) =>
    deps.ledger.createPendingTransfer(
      {
        idempotency_key: refundIdempotencyKey(refund.refund_reference, step),
        debit_account_id,
        credit_account_id: settlement.id,
        amount_units,
        description: `refund ${refund.refund_reference} of ${refund.invoice_reference} held${step === 'hold-fee' ? ' (payin fee share)' : ''}`,
        metadata: { refund_reference: refund.refund_reference, invoice_reference: refund.invoice_reference },
        ...(id ? { id } : {}),
      },
      trx,
      join,
    );
  const walletHold = await hold(wallet.id, refund.amount_units - refund.fee_units, 'hold', pending_transfer_id);
  if (refund.fee_units <= 0n) return { pending_transfer_id: walletHold.id, fee_pending_transfer_id: null };
  const revenue = await deps.ledger.platformAccount('fee_revenue', refund.currency, trx);
  return { pending_transfer_id: walletHold.id, fee_pending_transfer_id: (await hold(revenue.id, refund.fee_units, 'hold-fee')).id };
}

/** The event a decided refund announced. */
function decisionEvent(status: 'succeeded' | 'failed'): Exclude<RefundEvent, 'refund.created'> {
  return status === 'succeeded' ? 'refund.succeeded' : 'refund.failed';
}

function decided(refund: RefundRow): refund is RefundRow & { status: 'succeeded' | 'failed' } {
  return refund.status === 'succeeded' || refund.status === 'failed';
}

/**
 * Posts (or voids) the refund's holds: the wallet's under `<ref>:post|void` and the fee share's, when it has one, under
 * `<ref>:post-fee|void-fee`, each idempotent under its own key. @returns the wallet hold's settlement
 */
async function settleHolds(deps: PlatformDeps, trx: Knex.Transaction, refund: RefundRow, step: 'post' | 'void') {
  if (!refund.pending_transfer_id) throw new Error(`refund ${refund.refund_reference} has no hold`);
  if (refund.fee_units > 0n && !refund.fee_pending_transfer_id) throw new Error(`refund ${refund.refund_reference} has no fee hold`);
  const apply = (pending_transfer_id: string, key: 'post' | 'void' | 'post-fee' | 'void-fee') => {
    const transfer = { pending_transfer_id, idempotency_key: refundIdempotencyKey(refund.refund_reference, key) };
    // `direct`: any error rolls this whole transaction back, and the statements fewer are taken while the
    // merchant's wallet is locked (every payment of the merchant waits on that lock).
    return step === 'post' ? deps.ledger.postPendingTransfer(transfer, trx, 'direct') : deps.ledger.voidPendingTransfer(transfer, trx, 'direct');
  };
  const settled = await apply(refund.pending_transfer_id, step);
  if (refund.fee_pending_transfer_id) await apply(refund.fee_pending_transfer_id, step === 'post' ? 'post-fee' : 'void-fee');
  return settled;
}

/**
 * Ends the refund with `decision`: posts (succeeded) or voids (failed) its hold, records the decision, its event and
 * webhook, in one transaction. A refund already decided the same way answers its webhook again; decided the other way
 * (a provider contradicting itself) keeps its first decision and records nothing.
 */
async function decide(deps: PlatformDeps, refund_reference: string, decision: Decision): Promise<RefundStep> {
  return deps.database.transaction(async (trx) => {
    const refund = await lockRefund(trx, refund_reference);
    if (!refund) throw reasonFailure(REFUND_REASONS, 'REFUND_NOT_FOUND', `refund ${refund_reference} not found`);
    const event = decisionEvent(decision.status);
    if (decided(refund)) {
      if (refund.status !== decision.status) deps.logger.error({ refund_reference, kept: refund.status }, 'refund decided twice, differently; the first decision stands');
      return { status: refund.status, webhook_id: refund.status === decision.status ? refundWebhookId(refund, event) : null };
    }
    const settled = await settleHolds(deps, trx, refund, decision.status === 'succeeded' ? 'post' : 'void');
    const after: RefundRow = {
      ...refund,
      status: decision.status,
      ledger_transaction_id: settled.posted_transaction_id,
      refund_trx_ref: decision.status === 'succeeded' ? decision.refund_trx_ref : null,
      failure_reason: decision.status === 'failed' ? decision.failure_reason : null,
      decided_at: new Date(),
    };
    await updateRefund(trx, refund_reference, {
      status: after.status,
      ledger_transaction_id: after.ledger_transaction_id,
      refund_trx_ref: after.refund_trx_ref,
      failure_reason: after.failure_reason,
      decided_at: after.decided_at,
    });
    const webhook_id = await recordWebhookEvent(
      trx,
      {
        id: refundWebhookId(refund, event),
        merchant_id: refund.merchant_id,
        subject_reference: refund.invoice_reference,
        event,
        body: refundWebhookBody(after, event),
        data: refundEventData(after),
        ledger_transaction_id: after.ledger_transaction_id,
      },
      deps.benchFloor,
    );
    return { status: after.status, webhook_id };
  });
}

async function readRefund(deps: PlatformDeps, refund_reference: string): Promise<RefundRow> {
  const refund = await deps.database<RefundRow>('refunds').where({ refund_reference }).first();
  if (!refund) throw reasonFailure(REFUND_REASONS, 'REFUND_NOT_FOUND', `refund ${refund_reference} not found`);
  return refund;
}

/** Marks a held refund pending (the provider answered pending). */
async function markPending(deps: PlatformDeps, refund_reference: string): Promise<RefundStep> {
  return deps.database.transaction(async (trx) => {
    const refund = await lockRefund(trx, refund_reference);
    if (!refund) throw reasonFailure(REFUND_REASONS, 'REFUND_NOT_FOUND', `refund ${refund_reference} not found`);
    if (refund.status === 'held') await updateRefund(trx, refund_reference, { status: 'pending' });
    return { status: refund.status === 'held' ? 'pending' : refund.status, webhook_id: null };
  });
}

/**
 * Delivers the webhook a step recorded, after its transaction committed: its first attempt right here when its turn
 * has come, else (or when that attempt fails) its WebhookDeliveryWorkflow (src/webhooks `deliverWebhooks`, as the
 * payin's settlement does). In the same local activity as the decision, so a refund costs no further workflow step;
 * a retried activity finds the refund decided and hands the same webhook over again (a delivered one is skipped).
 */
async function announce(deps: PlatformDeps, step: RefundStep): Promise<RefundStep> {
  if (step.webhook_id) await deliverWebhooks(deps, [step.webhook_id]);
  return step;
}

async function requestRefund(deps: PlatformDeps, provider: RefundProvider | undefined, refund_reference: string): Promise<RefundStep> {
  const refund = await readRefund(deps, refund_reference);
  // Decided (a restarted run, or a retry after the decision committed): its webhook, recorded with the decision.
  if (decided(refund)) return announce(deps, { status: refund.status, webhook_id: refundWebhookId(refund, decisionEvent(refund.status)) });
  // Retryable: a provider configured later (or a process with its settings) takes the refund on.
  if (!provider) throw ApplicationFailure.retryable('no refund provider configured', 'REFUND_PROVIDER_NOT_CONFIGURED');
  // The hold before the provider is asked: the service placed it with the refund; one recorded without it gets it now.
  if (!refund.pending_transfer_id) await holdRefund(deps, refund_reference);
  let outcome: RefundProviderOutcome;
  try {
    outcome = await provider.refund(
      {
        refund_reference,
        invoice_reference: refund.invoice_reference,
        trx_ref: refund.trx_ref,
        amount_units: refund.amount_units,
        currency: refund.currency,
        address: refund.address,
        reason: refund.reason,
      },
      refundProviderKey(refund_reference),
    );
  } catch (error) {
    // Refused for good (a 4xx that is not "not now"): nothing was sent, the hold is released.
    if ((error as { retryable?: unknown }).retryable === false) return announce(deps, await decide(deps, refund_reference, { status: 'failed', failure_reason: 'refused by the provider' }));
    throw error;
  }
  if (outcome.status === 'pending') return markPending(deps, refund_reference);
  return announce(deps, await decide(deps, refund_reference, outcome));
}

async function applyRefundDecision(deps: PlatformDeps, refund_reference: string): Promise<RefundStep> {
  const notification = await firstRefundNotification(deps.database, refund_reference);
  if (!notification) throw reasonFailure(REFUND_REASONS, 'REFUND_DECISION_NOT_AUTHORIZED', `no recorded notification for ${refund_reference}`);
  // A decision that came before the run's first request (a refund recorded without its hold): held first.
  await holdRefund(deps, refund_reference);
  const step = await decide(
    deps,
    refund_reference,
    notification.status === 'refund_succeeded'
      ? { status: 'succeeded', refund_trx_ref: notification.refund_trx_ref ?? '' }
      : { status: 'failed', failure_reason: notification.failure_reason || 'refused by the provider' },
  );
  return announce(deps, step);
}

/** Places the refund's hold unless it has one (or is decided); in a transaction of its own, on the refund's lock. */
async function holdRefund(deps: PlatformDeps, refund_reference: string): Promise<void> {
  await deps.database.transaction(async (trx) => {
    const refund = await lockRefund(trx, refund_reference);
    if (!refund) throw reasonFailure(REFUND_REASONS, 'REFUND_NOT_FOUND', `refund ${refund_reference} not found`);
    if (!refund.pending_transfer_id && !decided(refund)) await updateRefund(trx, refund_reference, await placeRefundHold(deps, trx, refund));
  });
}

/** @param provider the refund provider port (undefined: none configured; requests are retried until one is) */
export function createRefundActivities(deps: PlatformDeps, provider: RefundProvider | undefined): RefundActivities {
  return {
    requestRefund: (input) => requestRefund(deps, provider, input.refund_reference),
    applyRefundDecision: (input) => applyRefundDecision(deps, input.refund_reference),
  };
}
