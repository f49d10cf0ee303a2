/**
 * The DepositRefundWorkflow's activities (docs/refunds.md "Area C"): the acquirer's step of a deposit's refund and
 * its decision. Before capture the authorization is reversed (the refund recorded `reversal` and moved the deposit's
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
import { deliverWebhooks, recordWebhookEvent } from '../../webhooks';
import { DEPOSIT_REASONS, depositRefundAcquirerKey, depositRefundIdempotencyKey, type DepositRefundActivities, type DepositRefundStep } from './contract';
import { approvedAuthorization, findDepositRefund, updateDepositRefund, type DepositRefundRow } from './refund-store';
import { getDeposit, moveCaptureState, type Deposit } from './store';

/** The failure_reason of a card refund whose deposit recorded no authorization (never expected: a fault's trace). */
const NO_AUTHORIZATION = 'no recorded authorization';

/** The decision a refund ends with. */
type Decision = { status: 'succeeded'; acquirer_refund_id: string | null } | { status: 'failed'; failure_reason: string };

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

/** Posts (succeeded) or voids (failed) the refund's holds, inside `trx`. @returns the seller hold's transaction id */
async function settleHolds(deps: PlatformDeps, trx: Knex.Transaction, refund: DepositRefundRow, succeeded: boolean): Promise<string | null> {
  const settle = (pending_transfer_id: string, step: 'post' | 'void' | 'post-commission' | 'void-commission') => {
    const transfer = { pending_transfer_id, idempotency_key: depositRefundIdempotencyKey(refund.deposit_reference, refund.refund_reference, step) };
    return succeeded ? deps.ledger.postPendingTransfer(transfer, trx) : deps.ledger.voidPendingTransfer(transfer, trx);
  };
  let transaction_id: string | null = null;
  if (refund.hold_transfer_id) transaction_id = (await settle(refund.hold_transfer_id, succeeded ? 'post' : 'void')).posted_transaction_id;
  if (refund.commission_hold_transfer_id) {
    const settled = await settle(refund.commission_hold_transfer_id, succeeded ? 'post-commission' : 'void-commission');
    transaction_id ??= settled.posted_transaction_id;
  }
  return transaction_id;
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
 * Ends the refund with `decision` in one transaction: its holds posted or voided, the row, a reversal's capture state
 * (`reversed`, or back to `authorized` when the acquirer refused it), its event and webhook. A refund already decided
 * answers as it stands.
 */
async function decide(deps: PlatformDeps, refund_reference: string, decision: Decision): Promise<DepositRefundStep> {
  return deps.database.transaction(async (trx) => {
    const refund = await findDepositRefund(trx, refund_reference, { forUpdate: true });
    if (!refund) throw reasonFailure(DEPOSIT_REASONS, 'DEPOSIT_REFUND_NOT_FOUND', `refund ${refund_reference} not found`);
    if (refund.status !== 'held') return { status: refund.status, webhook_id: refund.webhook_id };
    const deposit = (await getDeposit(trx, refund.deposit_reference, { forUpdate: true }))!;
    const succeeded = decision.status === 'succeeded';
    const ledger_transaction_id = await settleHolds(deps, trx, refund, succeeded);
    if (refund.method === 'reversal') await moveCaptureState(trx, deposit.reference, ['reversing'], succeeded ? 'reversed' : 'authorized');
    const preorder = deposit.pre_order_token ? await findPreorder(trx, deposit.pre_order_token) : undefined;
    const after: DepositRefundRow = {
      ...refund,
      status: decision.status,
      acquirer_refund_id: decision.status === 'succeeded' ? decision.acquirer_refund_id : null,
      failure_reason: decision.status === 'failed' ? decision.failure_reason : null,
      decided_at: new Date(),
      webhook_id: preorder?.call_back_url ? depositRefundWebhookId(refund, succeeded ? 'refund.succeeded' : 'refund.failed') : null,
    };
    const { status, acquirer_refund_id, failure_reason, decided_at, webhook_id } = after;
    await updateDepositRefund(trx, refund_reference, { status, acquirer_refund_id, failure_reason, decided_at, webhook_id });
    await announce(deps, trx, after, preorder, ledger_transaction_id);
    return { status, webhook_id };
  });
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

async function settleDepositRefund(deps: PlatformDeps, refund_reference: string): Promise<DepositRefundStep> {
  const refund = await findDepositRefund(deps.database, refund_reference);
  if (!refund) throw reasonFailure(DEPOSIT_REASONS, 'DEPOSIT_REFUND_NOT_FOUND', `refund ${refund_reference} not found`);
  if (refund.status !== 'held') return { status: refund.status, webhook_id: refund.webhook_id };
  // Retryable: an acquirer configured later (or a process with its settings) takes the refund on.
  if (!deps.acquirer) throw ApplicationFailure.retryable('no card acquirer configured', 'ACQUIRER_NOT_CONFIGURED');
  const deposit = (await getDeposit(deps.database, refund.deposit_reference))!;
  if (refund.method === 'reversal') {
    const authorization_id = await approvedAuthorization(deps.database, deposit.reference);
    const reversal = authorization_id ? await deps.acquirer.reverse({ authorization_id }) : { status: 'failed' as const, message: NO_AUTHORIZATION };
    if (reversal.status === 'failed') deps.logger.error({ refund_reference, reference: deposit.reference }, 'reversal refused by the acquirer: the refund fails and the deposit is captured as usual');
    return decide(deps, refund_reference, reversal.status === 'reversed' ? { status: 'succeeded', acquirer_refund_id: null } : { status: 'failed', failure_reason: reversal.message });
  }
  const outcome = await refundAtAcquirer(deps, deps.acquirer, refund, deposit);
  return decide(deps, refund_reference, outcome.status === 'succeeded' ? { status: 'succeeded', acquirer_refund_id: outcome.refund_id } : { status: 'failed', failure_reason: outcome.message });
}

export function createDepositRefundActivities(deps: PlatformDeps): DepositRefundActivities {
  return {
    settleDepositRefund: (input) => settleDepositRefund(deps, input.refund_reference),
    startDepositRefundWebhooks: (input) => deliverWebhooks(deps, input.webhook_ids),
  };
}
