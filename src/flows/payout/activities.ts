/**
 * The PayoutWorkflow's activities (docs/payouts.md): the payout's port over the money-out saga
 * (src/flows/money-out/activities.ts, docs/money-out.md), the payout flow's only caller of the ledger, and its
 * approval steps. Two legs, both on the merchant's wallet: the amount towards settlement (`<ref>:hold`), the payout
 * fee towards fee_revenue (`<ref>:hold-fee`); posted together on success, voided together on failure. The provider is
 * the upstream's payout request (`deps.upstream`, src/upstream/client.ts) under the payout's key. A decision is taken
 * only from the provider's own answer or the signed notification the upstream's door recorded; an approval only from
 * the `payout_approvals` record the authenticated path wrote — never from a workflow message.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from '../../db/knex';
import type { LedgerJoin } from '../../ledger/types';
import { amountJson, stringifyJson } from '../../money';
import type { PlatformDeps } from '../../platform-deps';
import { findInstrumentByToken } from '../../instruments/store';
import { reasonFailure } from '../../temporal/failures';
import { deliverWebhooks, recordWebhookEvent } from '../../webhooks';
import type { MoneyOutDecision } from '../money-out/contract';
import { createMoneyOutSteps, placeMoneyOutHolds, type MoneyOutPort } from '../money-out/activities';
import {
  PAYOUT_APPROVAL_TIMED_OUT,
  PAYOUT_REASONS,
  PAYOUT_REJECTED_REASON,
  payoutLedgerKey,
  payoutProviderKey,
  type PayoutActivities,
  type PayoutEvent,
  type PayoutStatus,
  type PayoutStep,
} from './contract';
import { firstPayoutNotification, findPayout, lockPayout, payoutApprovalOf, updatePayout, type PayoutRow } from './store';

/** Stable webhook id of a payout's decision event (X-Webhook-Id, also its delivery workflow's id). */
export function payoutWebhookId(payout: Pick<PayoutRow, 'payout_reference'>, event: 'payout.succeeded' | 'payout.failed'): string {
  return `WH-${payout.payout_reference}-${event.split('.')[1]!.toUpperCase()}`;
}

/** A payout's event data (docs/events.md): amounts as decimal strings of minor units. */
export function payoutEventData(payout: PayoutRow): Record<string, unknown> {
  return {
    payout_reference: payout.payout_reference,
    out_trade_no: payout.out_trade_no,
    kind: payout.kind,
    status: payout.status,
    amount_units: payout.amount_units.toString(),
    fee_units: payout.fee_units.toString(),
    currency: payout.currency,
    address: payout.address,
    provider_reference: payout.provider_reference,
    failure_reason: payout.failure_reason,
  };
}

/** The webhook body of a payout's decision: `{"success", "code", "event", "data"}` like every Area B webhook. */
export function payoutWebhookBody(payout: PayoutRow, event: PayoutEvent): string {
  return stringifyJson({
    success: true,
    code: 200,
    event,
    data: {
      payout_reference: payout.payout_reference,
      out_trade_no: payout.out_trade_no,
      amount: amountJson(payout.amount_units, payout.currency),
      fee: amountJson(payout.fee_units, payout.currency),
      currency: payout.currency,
      status: payout.status,
      address: payout.address,
      memo: payout.memo,
      payout_trx_ref: payout.provider_reference,
      failure_reason: payout.failure_reason,
    },
  });
}

/**
 * Places the payout's holds on the merchant's wallet as ledger pending transfers: `amount_units` towards settlement
 * (`<ref>:hold`) and `fee_units` towards fee_revenue (`<ref>:hold-fee`, skipped when 0). Minor units.
 * @param payout its holds' ids when the caller chose them beforehand (recorded in its row before the holds)
 * @param join `direct` only for a caller whose transaction rolls back on any error of this call
 * @returns the pending transfers' ids (the fee's null without a fee)
 * @throws DomainError INSUFFICIENT_FUNDS when the wallet has less available than both (the caller maps it)
 */
export async function placePayoutHolds(
  deps: Pick<PlatformDeps, 'ledger'>,
  trx: Knex.Transaction,
  payout: Pick<PayoutRow, 'payout_reference' | 'merchant_id' | 'user_id' | 'kind' | 'currency' | 'amount_units' | 'fee_units'> &
    Partial<Pick<PayoutRow, 'pending_transfer_id' | 'fee_pending_transfer_id'>>,
  join: LedgerJoin = 'savepoint',
): Promise<{ pending_transfer_id: string; fee_pending_transfer_id: string | null }> {
  // A crypto payout leaves the merchant's wallet; a bank payout its user's (Area C).
  const owner = payout.kind === 'bank' ? { owner_type: 'user' as const, owner_id: payout.user_id! } : { owner_type: 'merchant' as const, owner_id: payout.merchant_id };
  // Named by address: the ledger resolves them (the wallet opened on first use, so that an empty one answers
  // INSUFFICIENT_FUNDS like any other).
  const wallet = { ...owner, currency: payout.currency, kind: 'wallet' } as const;
  const metadata = { payout_reference: payout.payout_reference };
  const [main, fee] = await placeMoneyOutHolds(
    deps,
    trx,
    [
      { idempotency_key: payoutLedgerKey(payout.payout_reference, 'hold'), debit_account: wallet, credit_account: { platform: 'settlement', currency: payout.currency }, amount_units: payout.amount_units, description: `payout ${payout.payout_reference} held`, metadata, ...(payout.pending_transfer_id ? { id: payout.pending_transfer_id } : {}) },
      { idempotency_key: payoutLedgerKey(payout.payout_reference, 'hold', 'fee'), debit_account: wallet, credit_account: { platform: 'fee_revenue', currency: payout.currency }, amount_units: payout.fee_units, description: `payout ${payout.payout_reference} fee held`, metadata, ...(payout.fee_pending_transfer_id ? { id: payout.fee_pending_transfer_id } : {}) },
    ],
    join,
  );
  if (!main) throw new Error(`payout ${payout.payout_reference}: nothing to hold`);
  return { pending_transfer_id: main, fee_pending_transfer_id: fee ?? null };
}

function decisionEvent(status: 'succeeded' | 'failed'): 'payout.succeeded' | 'payout.failed' {
  return status === 'succeeded' ? 'payout.succeeded' : 'payout.failed';
}

/** The payout's legs, the amount's first. @throws Error when a hold it must have is missing (a fault) */
function legsOf(payout: PayoutRow) {
  if (!payout.pending_transfer_id) throw new Error(`payout ${payout.payout_reference} has no hold`);
  if (payout.fee_units > 0n && !payout.fee_pending_transfer_id) throw new Error(`payout ${payout.payout_reference} has no fee hold`);
  const key = (step: 'post' | 'void', leg?: 'fee') => payoutLedgerKey(payout.payout_reference, step, leg);
  return [
    { pending_transfer_id: payout.pending_transfer_id, post_key: key('post'), void_key: key('void') },
    { pending_transfer_id: payout.fee_pending_transfer_id, post_key: key('post', 'fee'), void_key: key('void', 'fee') },
  ];
}

/** Records a payout's decision (row, event, webhook) after its legs settled, in `trx`. */
async function recordDecision(deps: PlatformDeps, trx: Knex.Transaction, payout: PayoutRow, decision: MoneyOutDecision, ledger_transaction_id: string | null): Promise<PayoutStep> {
  const event = decisionEvent(decision.status);
  const after: PayoutRow = {
    ...payout,
    status: decision.status,
    ledger_transaction_id,
    provider_reference: decision.status === 'succeeded' ? decision.provider_reference : null,
    failure_reason: decision.status === 'failed' ? decision.failure_reason : null,
    decided_at: new Date(),
  };
  const { status, provider_reference, failure_reason, decided_at } = after;
  await updatePayout(trx, payout.payout_reference, { status, ledger_transaction_id, provider_reference, failure_reason, decided_at });
  const webhook = { id: payoutWebhookId(payout, event), merchant_id: payout.merchant_id, subject_reference: payout.payout_reference, event };
  const webhook_id = await recordWebhookEvent(trx, { ...webhook, body: payoutWebhookBody(after, event), data: payoutEventData(after), ledger_transaction_id }, deps.benchFloor);
  return { status, webhook_id };
}

/** A bank payout asked of the bank rails (they answer at once). An error is retried under the same key. */
async function askBankRails(deps: PlatformDeps, payout: PayoutRow): Promise<MoneyOutDecision> {
  if (!deps.bankRails) throw ApplicationFailure.retryable('no bank rails configured', 'PAYOUT_PROVIDER_NOT_CONFIGURED');
  const account = await findInstrumentByToken(deps.database, payout.merchant_id, payout.instrument_token ?? '');
  const bank = account?.bankId ? ((await deps.database('banks').where({ id: account.bankId }).first('name')) as { name: string } | undefined) : undefined;
  const outcome = await deps.bankRails.payout(
    {
      payout_reference: payout.payout_reference,
      amount_units: payout.amount_units,
      currency: payout.currency,
      account_token: payout.instrument_token ?? '',
      holder_name: account?.holderName ?? '',
      bank_name: bank?.name ?? '',
    },
    payoutProviderKey(payout.payout_reference),
  );
  return outcome.status === 'succeeded' ? { status: 'succeeded', provider_reference: outcome.transfer_id } : { status: 'failed', failure_reason: outcome.message };
}

/** The saga's steps refused on a payout awaiting approval (the port's `refuse`): non-retryable, the run waits for the approval. */
function awaitingApproval(payout_reference: string): ApplicationFailure {
  return reasonFailure(PAYOUT_REASONS, 'PAYOUT_APPROVAL_NOT_AUTHORIZED', `payout ${payout_reference} awaits approval`);
}

/**
 * The payout's port over the money-out saga: its row (`payouts`), its legs, the upstream's payout request, and the
 * decision's record, event and webhook.
 * @param provider the upstream provider (undefined: none configured; requests are retried until one is)
 */
export function payoutPort(deps: PlatformDeps, provider: Pick<NonNullable<PlatformDeps['upstream']>, 'payout'> | undefined): MoneyOutPort<PayoutRow, PayoutStatus> {
  return {
    notFound: (reference) => reasonFailure(PAYOUT_REASONS, 'PAYOUT_NOT_FOUND', `payout ${reference} not found`),
    notAuthorized: (reference) => reasonFailure(PAYOUT_REASONS, 'PAYOUT_DECISION_NOT_AUTHORIZED', `no recorded notification for ${reference}`),
    read: (db, reference) => findPayout(db, reference),
    // The provider is never asked before an approval the threshold requires.
    refuse: (payout) => (payout.status === 'awaiting_approval' ? awaitingApproval(payout.payout_reference) : undefined),
    lock: lockPayout,
    // Awaiting approval is `held` to the saga, which the payout's activities never run before the approval.
    stage: (payout) => (payout.status === 'awaiting_approval' ? 'held' : payout.status),
    status: (payout) => payout.status,
    webhookOf: (payout) => (payout.status === 'succeeded' || payout.status === 'failed' ? payoutWebhookId(payout, decisionEvent(payout.status)) : null),
    held: (payout) => payout.pending_transfer_id !== null,
    placeHolds: async (trx, payout) => updatePayout(trx, payout.payout_reference, await placePayoutHolds(deps, trx, payout)),
    legs: legsOf,
    async ask(payout) {
      if (payout.kind === 'bank') return askBankRails(deps, payout);
      if (!provider) throw ApplicationFailure.retryable('no payout provider configured', 'PAYOUT_PROVIDER_NOT_CONFIGURED');
      const { payout_reference, amount_units, address, memo } = payout;
      const outcome = await provider.payout({ payout_reference, amount_units, currency: 'USDT', address, memo }, payoutProviderKey(payout_reference));
      return outcome.status === 'succeeded' ? { status: 'succeeded', provider_reference: outcome.payout_trx_ref } : outcome;
    },
    async markRequested(trx, payout) {
      await updatePayout(trx, payout.payout_reference, { status: 'requested' });
      return 'requested';
    },
    async recordedDecision(db, reference): Promise<MoneyOutDecision | undefined> {
      const notification = await firstPayoutNotification(db, reference);
      if (!notification) return undefined;
      return notification.status === 'payout_succeeded'
        ? { status: 'succeeded', provider_reference: notification.payout_trx_ref ?? '' }
        : { status: 'failed', failure_reason: notification.failure_reason || 'refused by the provider' };
    },
    decided: (trx, payout, decision, ledger_transaction_id) => recordDecision(deps, trx, payout, decision, ledger_transaction_id),
    deliversWebhooks: true,
  };
}

/** The PayoutWorkflow's activities: the saga's steps over the payout's port, and its approval steps. */
export function createPayoutActivities(deps: PlatformDeps): PayoutActivities {
  const steps = createMoneyOutSteps(deps, payoutPort(deps, deps.upstream));

  /** Ends a payout awaiting approval: approved → held; rejected or timed out → failed, its holds voided. */
  const settleApproval = (payout_reference: string, outcome: 'approve' | 'reject' | 'timeout'): Promise<PayoutStep> =>
    deps.database.transaction(async (trx) => {
      const payout = await lockPayout(trx, payout_reference);
      if (!payout) throw reasonFailure(PAYOUT_REASONS, 'PAYOUT_NOT_FOUND', `payout ${payout_reference} not found`);
      if (payout.status !== 'awaiting_approval') return { status: payout.status, webhook_id: null };
      if (outcome === 'approve') {
        await updatePayout(trx, payout_reference, { status: 'held' });
        return { status: 'held', webhook_id: null };
      }
      let ledger_transaction_id: string | null = null;
      for (const leg of legsOf(payout)) {
        if (!leg.pending_transfer_id) continue;
        const voided = await deps.ledger.voidPendingTransfer({ pending_transfer_id: leg.pending_transfer_id, idempotency_key: leg.void_key }, trx, 'direct');
        ledger_transaction_id ??= voided.posted_transaction_id;
      }
      const failure_reason = outcome === 'reject' ? PAYOUT_REJECTED_REASON : PAYOUT_APPROVAL_TIMED_OUT;
      return recordDecision(deps, trx, payout, { status: 'failed', failure_reason }, ledger_transaction_id);
    });

  const announce = async (step: PayoutStep): Promise<PayoutStep> => {
    if (step.webhook_id) await deliverWebhooks(deps, [step.webhook_id]);
    return step;
  };

  return {
    requestPayout: (input) => steps.request(input.payout_reference),
    applyPayoutDecision: (input) => steps.applyDecision(input.payout_reference),
    async applyPayoutApproval(input) {
      const record = await payoutApprovalOf(deps.database, input.payout_reference);
      if (!record) throw reasonFailure(PAYOUT_REASONS, 'PAYOUT_APPROVAL_NOT_AUTHORIZED', `no recorded approval for ${input.payout_reference}`);
      return announce(await settleApproval(input.payout_reference, record.decision));
    },
    async expirePayoutApproval(input) {
      // An approval recorded just before the timer fired wins over the timeout.
      const record = await payoutApprovalOf(deps.database, input.payout_reference);
      return announce(await settleApproval(input.payout_reference, record ? record.decision : 'timeout'));
    },
  };
}
