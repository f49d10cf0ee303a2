/**
 * Refunds the platform makes on a merchant's outcome policy (docs/refunds.md "Outcome policies"), inside the payin
 * settlement's own transaction: the refund row, its hold on the merchant's wallet (`<ref>:hold`) and its
 * `refund.created` event, exactly as a merchant's refund (./service.ts `recordRefund`), the payin fee's share returned
 * too when the policy's `refund_fee` (in force at the settlement, passed in RefundFields) is `returned`, under a reference the caller
 * derives from the payin and the payment, so a retried settlement finds its refund instead of making a second one.
 * The RefundWorkflow is started after the commit (`startRefundWorkflow`, the payin workflow's `startRefunds`).
 */
import { recordEvent } from '../../events';
import type { Knex } from '../../db/knex';
import type { PlatformDeps } from '../../platform-deps';
import { placeRefundHold, refundEventData } from './activities';
import type { RefundFields } from './contract';
import { feeShareOf, findRefund, insertRefund, refundBasis, updateRefund } from './store';

/** Whether a refund provider is configured: without one a policy cannot refund (the payment is credited). */
export function policyRefundsConfigured(deps: Pick<PlatformDeps, 'upstream'>): boolean {
  return deps.upstream !== undefined;
}

/**
 * Records the refund held and announced (`refund.created`), in `trx`, unless a refund with its reference exists (a
 * retried settlement): then nothing is written.
 * @returns true when this call recorded it
 * @throws DomainError INSUFFICIENT_FUNDS (from the ledger) when the wallet has less available than the refund; the
 *   caller's transaction rolls back
 */
export async function holdPolicyRefund(deps: Pick<PlatformDeps, 'ledger' | 'config'>, trx: Knex.Transaction, refund: RefundFields): Promise<boolean> {
  if (await findRefund(trx, refund.refund_reference)) return false;
  // The settlement holds the payin's lock: the basis includes this payment (credited in `trx`) and every refund.
  const fee_units = feeShareOf(await refundBasis(deps.ledger, trx, refund.invoice_reference), refund.refund_fee, refund.amount_units);
  const row = {
    ...refund,
    fee_units,
    request_key: null,
    request_fingerprint: null,
    pending_transfer_id: null,
    decision_due_at: new Date(Date.now() + deps.config.REFUND_DECISION_TIMEOUT_SECONDS * 1000),
  };
  await insertRefund(trx, row);
  await updateRefund(trx, refund.refund_reference, await placeRefundHold(deps, trx, row));
  const created = (await findRefund(trx, refund.refund_reference))!;
  await recordEvent(trx, { owner: { type: 'merchant', id: refund.merchant_id }, subject: refund.invoice_reference, type: 'refund.created', data: refundEventData(created) });
  return true;
}

/** The refund's status, or undefined when there is no refund with this reference. */
export async function policyRefundStatus(conn: Knex | Knex.Transaction, refund_reference: string): Promise<string | undefined> {
  return (await findRefund(conn, refund_reference))?.status;
}
