/**
 * The DepositRefundWorkflow's activities (docs/refunds.md "Area C"): the deposit refund's port over the money-out
 * saga (src/flows/money-out/activities.ts, docs/money-out.md), the acquirer's step of a deposit's refund and its
 * decision. Before capture the authorization is reversed (the refund recorded `reversal` and moved the deposit's
 * capture state to `reversing` under its row lock, so the capture never happens); after it, or for a local card,
 * the acquirer refunds under the refund's key. Succeeded posts the refund's holds (`…:post`, `…:post-commission`),
 * failed voids them (`…:void`, `…:void-commission`), with the `refund.succeeded` / `refund.failed` event on the
 * deposit's subject (and a preorder's call-back) in the same transaction, exactly once: the refund's row lock, its
 * status and the ledger keys make a retried activity a no-op.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import type { Acquirer, AcquirerRefundOutcome } from '../../acquirers';
import { amountJson, stringifyJson } from '../../money';
import type { PlatformDeps } from '../../platform-deps';
import { findPreorder, type Preorder } from '../../preorders';
import { reasonFailure } from '../../temporal/failures';
import { recordWebhookEvent } from '../../webhooks';
import type { MoneyOutAnswer, MoneyOutDecision } from '../money-out/contract';
import { createMoneyOutSteps, type MoneyOutPort } from '../money-out/activities';
import { DEPOSIT_REASONS, depositRefundAcquirerKey, depositRefundIdempotencyKey, type DepositRefundActivities, type DepositRefundStatus, type DepositRefundStep } from './contract';
import { approvedAuthorization, findDepositRefund, updateDepositRefund, type DepositRefundRow } from './refund-store';
import { getDeposit, moveCaptureState, type Deposit } from './store';

/** The failure_reason of a card refund whose deposit recorded no authorization (never expected: a fault's trace). */
const NO_AUTHORIZATION = 'no recorded authorization';

/** The refund events (docs/events.md "Area C"), on the deposit's subject. */
type DecisionEvent = 'refund.succeeded' | 'refund.failed';

/** A deposit refund's event data: amounts as decimal strings of minor units. */
export function depositRefundEventData(refund: DepositRefundRow): Record<string, unknown> {
  return {
    refund_reference: refund.refund_reference,
    reference: refund.deposit_reference,
    method: refund.method,
    status: refund.status,
    amount_units: refund.amount_units.toString(),
    commission_units: refund.commission_units.toString(),
    currency: refund.currency,
    reason: refund.reason,
    acquirer_refund_id: refund.acquirer_refund_id,
    failure_reason: refund.failure_reason,
  };
}

/** Stable webhook id of a deposit refund's decision (X-Webhook-Id, its delivery workflow's id). */
export function depositRefundWebhookId(refund: Pick<DepositRefundRow, 'deposit_reference' | 'refund_reference'>, event: DecisionEvent): string {
  return `WH-${refund.deposit_reference}-REFUND-${refund.refund_reference}-${event === 'refund.succeeded' ? 'SUCCEEDED' : 'FAILED'}`;
}

/** The body a preorder's call_back_url receives for a refund's decision. */
function webhookBody(refund: DepositRefundRow, event: DecisionEvent, preorder: { token: string; out_trade_no: string }): string {
  return stringifyJson({
    event,
    refund_reference: refund.refund_reference,
    reference: refund.deposit_reference,
    pre_order_token: preorder.token,
    out_trade_no: preorder.out_trade_no,
    amount: amountJson(refund.amount_units, refund.currency),
    currency: refund.currency,
    status: refund.status,
    failure_reason: refund.failure_reason,
  });
}

/**
 * Records the decision's event on the deposit's subject, and its webhook when the deposit paid a preorder with a
 * call_back_url (an Area C deposit has no other call-back: events only). The transaction's last write.
 */
async function announce(deps: PlatformDeps, trx: Knex.Transaction, refund: DepositRefundRow, preorder: Preorder | undefined, ledger_transaction_id: string | null): Promise<void> {
  const event: DecisionEvent = refund.status === 'succeeded' ? 'refund.succeeded' : 'refund.failed';
  const common = { id: depositRefundWebhookId(refund, event), merchant_id: refund.merchant_id, subject_reference: refund.deposit_reference, event, data: depositRefundEventData(refund), ledger_transaction_id };
  if (!preorder?.call_back_url) await recordWebhookEvent(trx, { ...common, body: '{}', url: null });
  else await recordWebhookEvent(trx, { ...common, body: webhookBody(refund, event, preorder), url: preorder.call_back_url }, deps.benchFloor);
}

/**
 * Records the decision after its holds were posted or voided (by the saga, on the refund's and the deposit's locks): a
 * reversal's capture state (`reversed`, or back to `authorized` when the acquirer refused it), the row, its event
 * and webhook, in `trx`.
 */
async function recordDecision(deps: PlatformDeps, trx: Knex.Transaction, refund: DepositRefundRow, decision: MoneyOutDecision, ledger_transaction_id: string | null): Promise<DepositRefundStep> {
  const deposit = (await getDeposit(trx, refund.deposit_reference))!;
  const succeeded = decision.status === 'succeeded';
  if (refund.method === 'reversal') await moveCaptureState(trx, deposit.reference, ['reversing'], succeeded ? 'reversed' : 'authorized');
  const preorder = deposit.pre_order_token ? await findPreorder(trx, deposit.pre_order_token) : undefined;
  const after: DepositRefundRow = {
    ...refund,
    status: decision.status,
    acquirer_refund_id: decision.status === 'succeeded' ? decision.provider_reference : null,
    failure_reason: decision.status === 'failed' ? decision.failure_reason : null,
    decided_at: new Date(),
    webhook_id: preorder?.call_back_url ? depositRefundWebhookId(refund, succeeded ? 'refund.succeeded' : 'refund.failed') : null,
  };
  const { status, acquirer_refund_id, failure_reason, decided_at, webhook_id } = after;
  await updateDepositRefund(trx, refund.refund_reference, { status, acquirer_refund_id, failure_reason, decided_at, webhook_id });
  await announce(deps, trx, after, preorder, ledger_transaction_id);
  return { status, webhook_id };
}

/** The acquirer's answer to a refund after capture (or of an OTP deposit), under the refund's key. */
async function refundAtAcquirer(deps: PlatformDeps, acquirer: Acquirer, refund: DepositRefundRow, deposit: Deposit): Promise<AcquirerRefundOutcome> {
  const request = { idempotency_key: depositRefundAcquirerKey(refund.refund_reference), amount_units: refund.amount_units, currency: refund.currency };
  if (deposit.instrument_kind !== 'visa_master') return acquirer.refund({ instrument: deposit.instrument_kind, deposit_reference: deposit.reference, ...request });
  // The capture is running: wait for it (the activity's retry policy backs off), then refund what it captured.
  if (deposit.capture_state !== 'captured') throw ApplicationFailure.retryable(`deposit ${deposit.reference} is ${deposit.capture_state ?? 'not captured'}`, 'DEPOSIT_CAPTURE_RUNNING');
  const authorization_id = await approvedAuthorization(deps.database, deposit.reference);
  if (!authorization_id) return { status: 'failed', message: NO_AUTHORIZATION };
  return acquirer.refund({ instrument: 'visa_master', authorization_id, ...request });
}

/**
 * The acquirer's answer under the refund's key: before capture the authorization reversed (whole), else the acquirer
 * refunds. @throws Error retryably while no acquirer is configured or the deposit's capture is running
 */
async function askAcquirer(deps: PlatformDeps, refund: DepositRefundRow): Promise<MoneyOutAnswer> {
  // Retryable: an acquirer configured later (or a process with its settings) takes the refund on.
  if (!deps.acquirer) throw ApplicationFailure.retryable('no card acquirer configured', 'ACQUIRER_NOT_CONFIGURED');
  const deposit = (await getDeposit(deps.database, refund.deposit_reference))!;
  if (refund.method === 'reversal') {
    const authorization_id = await approvedAuthorization(deps.database, deposit.reference);
    const reversal = authorization_id ? await deps.acquirer.reverse({ authorization_id }) : { status: 'failed' as const, message: NO_AUTHORIZATION };
    if (reversal.status === 'failed') deps.logger.error({ refund_reference: refund.refund_reference, reference: deposit.reference }, 'reversal refused by the acquirer: the refund fails and the deposit is captured as usual');
    return reversal.status === 'reversed' ? { status: 'succeeded', provider_reference: null } : { status: 'failed', failure_reason: reversal.message };
  }
  const outcome = await refundAtAcquirer(deps, deps.acquirer, refund, deposit);
  return outcome.status === 'succeeded' ? { status: 'succeeded', provider_reference: outcome.refund_id } : { status: 'failed', failure_reason: outcome.message };
}

/**
 * The deposit refund's port over the money-out saga: its row (`deposit_refunds`), its legs (the credited account's
 * hold, a preorder's commission on fee_revenue), the acquirer, and the decision's record, event and call-back. Its
 * holds are placed with the refund (./refund.ts), and the acquirer answers at once: no `requested` stage, no recorded
 * decision to wait for.
 */
export function depositRefundPort(deps: PlatformDeps): MoneyOutPort<DepositRefundRow, DepositRefundStatus> {
  const notFound = (reference: string) => reasonFailure(DEPOSIT_REASONS, 'DEPOSIT_REFUND_NOT_FOUND', `refund ${reference} not found`);
  const key = (refund: DepositRefundRow, step: 'post' | 'void' | 'post-commission' | 'void-commission') => depositRefundIdempotencyKey(refund.deposit_reference, refund.refund_reference, step);
  return {
    notFound,
    notAuthorized: notFound,
    read: (db, reference) => findDepositRefund(db, reference),
    // The refund's row, then its deposit's (before any ledger account, in the order a new refund of the deposit and
    // its capture take them), so the decision and the deposit's other writers never wait on each other in a cycle.
    async lock(trx, reference) {
      const refund = await findDepositRefund(trx, reference, { forUpdate: true });
      if (refund) await getDeposit(trx, refund.deposit_reference, { forUpdate: true });
      return refund;
    },
    stage: (refund) => refund.status,
    status: (refund) => refund.status,
    webhookOf: (refund) => refund.webhook_id,
    held: () => true,
    placeHolds: async (_trx, refund) => {
      throw new Error(`deposit refund ${refund.refund_reference} is recorded with its holds`);
    },
    legs: (refund) => [
      { pending_transfer_id: refund.hold_transfer_id, post_key: key(refund, 'post'), void_key: key(refund, 'void') },
      { pending_transfer_id: refund.commission_hold_transfer_id, post_key: key(refund, 'post-commission'), void_key: key(refund, 'void-commission') },
    ],
    ask: (refund) => askAcquirer(deps, refund),
    markRequested: async (_trx, refund) => {
      throw new Error(`deposit refund ${refund.refund_reference}: the acquirer answers at once`);
    },
    recordedDecision: async () => undefined,
    decided: (trx, refund, decision, ledger_transaction_id) => recordDecision(deps, trx, refund, decision, ledger_transaction_id),
    deliversWebhooks: false,
  };
}

export function createDepositRefundActivities(deps: PlatformDeps): DepositRefundActivities {
  const steps = createMoneyOutSteps(deps, depositRefundPort(deps));
  return {
    settleDepositRefund: (input) => steps.request(input.refund_reference),
    startDepositRefundWebhooks: (input) => steps.deliver(input.webhook_ids),
  };
}
