/**
 * Every event type the platform writes (docs/events.md "Event types", each with its owner, subject and data). An
 * event is written by the flow whose transaction commits the change it announces; a type outside this list does not
 * compile where events are written, and the events API refuses it as a filter.
 */
export const EVENT_TYPES = [
  // Area B: a merchant's payins (subject: the invoice_reference).
  'payin.created',
  'payin.success',
  'payin.expired',
  'payin.closed',
  'payin.additional_payment',
  // The merchant's outcome policy's decision on a payment (docs/refunds.md "Outcome policies"); no status change.
  'payin.resolution',
  // Area B: refunds of a merchant's payins (subject: the payin's invoice_reference; the refund reference in data).
  'refund.created',
  'refund.succeeded',
  'refund.failed',
  // Area B: payouts from a merchant's wallet (subject: the payout reference).
  'payout.created',
  'payout.pending_approval',
  'payout.succeeded',
  'payout.failed',
  // Area A: a partner's pre-transfers (subject: the pre_transfer_id); also the receiving user's merchant's.
  'pre_transfer.created',
  'pre_transfer.confirmed',
  'pre_transfer.expired',
  'pre_transfer.released',
  // Area C: a merchant's deposits (subject: the deposit reference).
  'deposit.created',
  'deposit.completed',
  'deposit.declined',
  'deposit.failed',
  'deposit.cancelled',
  'deposit.expired',
  // Area C: wallet movements (subject: the movement's reference) and preorders paid (subject: the paying reference).
  'wallet_transfer.completed',
  'preorder.paid',
  'blocked_money.blocked',
  'blocked_money.cancelled',
  // Area C: a tokenized bank account activated (subject: its token).
  'bank_account.activated',
  // A webhook given up after its retry window (subject: the webhook's subject).
  'webhook.failed',
  // The merchant's webhook endpoint disabled after failing every attempt for WEBHOOK_DISABLE_AFTER_DAYS, and enabled
  // again from the dashboard (subject: the merchant id).
  'webhook_endpoint.disabled',
  'webhook_endpoint.enabled',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

const TYPES: ReadonlySet<string> = new Set(EVENT_TYPES);

/** True when `text` names an event type of the catalog. */
export function isEventType(text: string): text is EventType {
  return TYPES.has(text);
}
