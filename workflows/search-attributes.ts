/**
 * The search attributes every payment workflow carries, so an operator filters the Temporal Web UI by owner, kind,
 * amount, currency, state, the merchant's order id or the partner's transaction id (docs/operations.md "Search
 * attributes"): the keys, and the helpers the workflows call on each state change. The workflows own it (a leaf of
 * the workflow bundle: it imports nothing but `@temporalio/workflow`); the platform's side (registration at start-up,
 * the start option) is src/temporal/search-attributes.ts, which imports the keys from here.
 *
 *   PaymentOwnerId       Keyword  `merchant:<merchant_id>` or `partner:<partner_id>`
 *   PaymentKind          Keyword  pre_transfer, payin, deposit, webhook, refund, payout
 *   PaymentAmountUnits   Int      the amount in minor units (absent above 2^53 − 1, which a search attribute's
 *                                JSON number cannot carry exactly)
 *   PaymentCurrency      Keyword  the currency code
 *   PaymentStatus        Keyword  the flow's own state names (payin: waiting, success, close, expired; …)
 *   PaymentOrderId       Keyword  the merchant's order id (`out_trade_no`) of a payin, from its workflow's start
 *   PaymentPartnerTransactionId
 *                        Keyword  the partner's transaction id of a pre-transfer, set when its confirm posts it
 */
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';

/** One typed search-attribute update, as `upsertSearchAttributes` takes it. */
type SearchAttributeUpdate = Extract<Parameters<typeof upsertSearchAttributes>[0], readonly unknown[]>[number];
/** A typed key of one indexed type (what `defineSearchAttributeKey(name, type)` returns). */
type KeyOf<T extends SearchAttributeUpdate['key']['type']> = Extract<SearchAttributeUpdate['key'], { type: T }>;

// Plain `{ name, type }` objects, equal to what @temporalio/common's defineSearchAttributeKey returns (a contract may
// not import @temporalio/common; test/unit/search-attributes.test.ts checks the equality).
export const PAYMENT_OWNER_ID: KeyOf<'KEYWORD'> = { name: 'PaymentOwnerId', type: 'KEYWORD' };
export const PAYMENT_KIND: KeyOf<'KEYWORD'> = { name: 'PaymentKind', type: 'KEYWORD' };
export const PAYMENT_AMOUNT_UNITS: KeyOf<'INT'> = { name: 'PaymentAmountUnits', type: 'INT' };
export const PAYMENT_CURRENCY: KeyOf<'KEYWORD'> = { name: 'PaymentCurrency', type: 'KEYWORD' };
export const PAYMENT_STATUS: KeyOf<'KEYWORD'> = { name: 'PaymentStatus', type: 'KEYWORD' };
export const PAYMENT_ORDER_ID: KeyOf<'KEYWORD'> = { name: 'PaymentOrderId', type: 'KEYWORD' };
export const PAYMENT_PARTNER_TRANSACTION_ID: KeyOf<'KEYWORD'> = { name: 'PaymentPartnerTransactionId', type: 'KEYWORD' };

/** Every key, in the order the docs list them (start-up registers them all). */
export const PAYMENT_SEARCH_ATTRIBUTE_KEYS = [
  PAYMENT_OWNER_ID,
  PAYMENT_KIND,
  PAYMENT_AMOUNT_UNITS,
  PAYMENT_CURRENCY,
  PAYMENT_STATUS,
  PAYMENT_ORDER_ID,
  PAYMENT_PARTNER_TRANSACTION_ID,
] as const;

/** The kind of money flow (or delivery) a workflow runs: the value of PaymentKind. */
export type PaymentKind = 'pre_transfer' | 'payin' | 'deposit' | 'webhook' | 'refund' | 'payout';

/**
 * Records the run's kind and state in PaymentKind and PaymentStatus, upserting only what differs from the run's
 * current search attributes (the values set at start or by an earlier call): a call without a change adds nothing
 * to the history. Each upsert is one history event and one visibility write. Deterministic (it reads workflowInfo,
 * which the history rebuilds on replay); call it from workflow code only.
 */
export function upsertPaymentStatus(kind: PaymentKind, status: string): void {
  const current = workflowInfo().typedSearchAttributes;
  const changes: SearchAttributeUpdate[] = [];
  if (current.get(PAYMENT_KIND) !== kind) changes.push({ key: PAYMENT_KIND, value: kind });
  if (current.get(PAYMENT_STATUS) !== status) changes.push({ key: PAYMENT_STATUS, value: status });
  if (changes.length > 0) upsertSearchAttributes(changes);
}

/**
 * Records the partner's transaction id of a confirmed pre-transfer in PaymentPartnerTransactionId (one history event
 * and one visibility write; none when the run already carries it). Deterministic; call it from workflow code only.
 */
export function upsertPartnerTransactionId(partner_transaction_id: string): void {
  if (workflowInfo().typedSearchAttributes.get(PAYMENT_PARTNER_TRANSACTION_ID) === partner_transaction_id) return;
  upsertSearchAttributes([{ key: PAYMENT_PARTNER_TRANSACTION_ID, value: partner_transaction_id }]);
}
