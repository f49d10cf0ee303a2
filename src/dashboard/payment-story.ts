/**
 * A payment in the merchant's words (docs/dashboard.md "A payment's page"): from the payment's timeline (src/timeline,
 * read as the merchant sees it) its summary and its story as the merchant's steps — created, paid, settled, expired,
 * webhook delivered or failed, refund requested, refunded — each with its time and outcome. The platform's own
 * entries (workflow history, ledger keys, requests) stay in the timeline; the page folds them under "Technical
 * details". Pure functions, no I/O.
 */
import { formatAmount, isCurrency } from '../money';
import type { TimelineEntry } from '../timeline/types';

/** A refund of the payment as its `refund.*` events tell it. */
export interface StoryRefund {
  refund_reference: string;
  amount_units: bigint;
  status: string;
  created_at: string;
  decided_at: string;
  reason: string;
  address: string;
}

/** The payment's summary (amounts in minor units of `currency`). */
export interface PaymentSummaryFacts {
  kind: string;
  status: string;
  currency: string;
  amount_units: bigint;
  fee_units: bigint;
  /** What the payer paid; undefined before any payment. */
  paid_units?: bigint;
  /** Paid less fee, 0 before it was paid. */
  net_units: bigint;
  out_trade_no: string;
  /** A payer address an event named (a refund's); the caller may know better (the provider's report). */
  payer_address: string;
  created_at: string;
  settled_at: string;
  refunds: StoryRefund[];
}

export type StepState = 'done' | 'failed' | 'pending';

export interface PaymentStep {
  step: string;
  title: string;
  at: string;
  outcome: string;
  state: StepState;
}

/** Event types that say nothing of a payment's state (the payments list's rule, src/events/payments.ts). */
const NOT_STATUS = new Set(['payin.additional_payment', 'payin.resolution', 'webhook.failed']);

const UNITS = /^-?\d{1,30}$/;

function unitsOf(value: unknown): bigint | undefined {
  return typeof value === 'string' && UNITS.test(value) ? BigInt(value) : typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : undefined;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** An event entry's data (the event's own facts), or undefined for another source's entry. */
function eventData(entry: TimelineEntry): Record<string, unknown> | undefined {
  if (entry.source !== 'event') return undefined;
  const data = entry.details.data;
  return data !== null && typeof data === 'object' ? (data as Record<string, unknown>) : {};
}

/** `12.50 USDT` (the currency's decimals), or the minor units as they are for a currency the platform does not know. */
export function majorAmount(units: bigint, currency: string): string {
  return `${isCurrency(currency) ? formatAmount(units, currency) : units.toString()} ${currency}`.trim();
}

/** The payment's summary from its events (the latest of each fact wins; the first event sets kind and creation). */
export function summaryOf(entries: readonly TimelineEntry[]): PaymentSummaryFacts {
  const facts: PaymentSummaryFacts = {
    kind: '',
    status: '',
    currency: '',
    amount_units: 0n,
    fee_units: 0n,
    net_units: 0n,
    out_trade_no: '',
    payer_address: '',
    created_at: '',
    settled_at: '',
    refunds: [],
  };
  let additional = 0n;
  let additionalFee = 0n;
  const refunds = new Map<string, StoryRefund>();
  for (const entry of entries) {
    const data = eventData(entry);
    if (!data) continue;
    const [kind, verb] = entry.kind.split('.') as [string, string];
    if (kind === 'refund') {
      const reference = text(data.refund_reference);
      if (!reference) continue;
      const known = refunds.get(reference);
      const refund: StoryRefund = {
        refund_reference: reference,
        amount_units: unitsOf(data.amount_units) ?? known?.amount_units ?? 0n,
        status: text(data.status) || verb,
        created_at: known?.created_at ?? entry.at,
        decided_at: verb === 'created' ? '' : entry.at,
        reason: text(data.reason) || known?.reason || '',
        address: text(data.address) || known?.address || '',
      };
      refunds.set(reference, refund);
      if (!facts.payer_address && refund.address) facts.payer_address = refund.address;
      continue;
    }
    if (!facts.kind) {
      facts.kind = kind;
      facts.created_at = entry.at;
    }
    if (kind !== facts.kind) continue;
    if (entry.kind === 'payin.additional_payment') {
      additional += unitsOf(data.amount_units) ?? 0n;
      additionalFee += unitsOf(data.fee_units) ?? 0n;
      continue;
    }
    if (entry.kind === 'payin.resolution') continue;
    if (!NOT_STATUS.has(entry.kind)) facts.status = verb;
    facts.currency = text(data.currency) || facts.currency;
    facts.out_trade_no = text(data.out_trade_no) || facts.out_trade_no;
    facts.amount_units = unitsOf(data.amount_units) ?? facts.amount_units;
    facts.fee_units = unitsOf(data.fee_units) ?? facts.fee_units;
    const paid = unitsOf(data.paid_amount_units);
    if (paid !== undefined) facts.paid_units = paid;
    if (['success', 'completed', 'confirmed', 'paid'].includes(verb) && !facts.settled_at) facts.settled_at = entry.at;
  }
  if (facts.kind !== 'payin' && facts.paid_units === undefined && facts.settled_at) facts.paid_units = facts.amount_units;
  if (facts.paid_units !== undefined) {
    facts.paid_units += additional;
    facts.fee_units += additionalFee;
    facts.net_units = facts.paid_units - facts.fee_units;
  }
  facts.refunds = [...refunds.values()];
  return facts;
}

const STEP_TITLES: Record<string, string> = {
  created: 'Created',
  success: 'Paid and settled',
  expired: 'Expired unpaid',
  closed: 'Closed',
  failed: 'Failed',
  completed: 'Completed',
  confirmed: 'Confirmed',
  declined: 'Declined',
  cancelled: 'Cancelled',
  released: 'Released',
  paid: 'Paid',
  blocked: 'Blocked',
};

/**
 * The payment's story as the merchant's steps, in time order: one step per status event (created, paid and settled,
 * expired, …), money added later, each refund's request and outcome, and each webhook: delivered (its attempt that
 * succeeded) or failing (its failed attempts, one step per webhook, with the count). Workflow, ledger and request
 * entries make no step.
 */
export function stepsOf(entries: readonly TimelineEntry[], summary: PaymentSummaryFacts): PaymentStep[] {
  const steps: PaymentStep[] = [];
  const money = (units: bigint | undefined) => (units === undefined ? '' : majorAmount(units, summary.currency));
  const failing = new Map<string, PaymentStep & { count: number }>();
  for (const entry of entries) {
    if (entry.source === 'event') {
      const data = eventData(entry) ?? {};
      const [kind, verb] = entry.kind.split('.') as [string, string];
      if (kind === 'refund') {
        const amount = money(unitsOf(data.amount_units));
        const reference = text(data.refund_reference);
        if (verb === 'created') steps.push({ step: 'refund_requested', title: 'Refund requested', at: entry.at, outcome: `${amount} to be returned to the payer (${reference}); held on your balance`, state: 'pending' });
        else if (verb === 'succeeded') steps.push({ step: 'refunded', title: 'Refunded', at: entry.at, outcome: `${amount} returned to the payer (${reference})`, state: 'done' });
        else if (verb === 'failed') steps.push({ step: 'refund_failed', title: 'Refund failed', at: entry.at, outcome: `${amount} not returned (${reference}): ${text(data.failure_reason) || 'refused'}; the hold is released`, state: 'failed' });
        continue;
      }
      if (entry.kind === 'payin.additional_payment') {
        steps.push({ step: 'paid_more', title: 'More money received', at: entry.at, outcome: `${money(unitsOf(data.amount_units))} more paid and credited`, state: 'done' });
        continue;
      }
      if (NOT_STATUS.has(entry.kind)) continue;
      const title = STEP_TITLES[verb] ?? verb.charAt(0).toUpperCase() + verb.slice(1);
      let outcome: string;
      if (verb === 'created') outcome = `${money(unitsOf(data.amount_units))} asked${text(data.out_trade_no) ? ` for order ${text(data.out_trade_no)}` : ''}`;
      else if (verb === 'success') {
        const paid = unitsOf(data.paid_amount_units);
        const fee = unitsOf(data.fee_units) ?? 0n;
        const match = text(data.payment_match_status);
        outcome = `${money(paid)} paid${match && match !== 'exact' ? ` (${match})` : ''}${data.late === true ? ', late' : ''}; fee ${money(fee)}; ${money(paid === undefined ? undefined : paid - fee)} credited to your balance`;
      } else if (verb === 'expired') outcome = 'Not paid before it expired';
      else outcome = `${money(unitsOf(data.amount_units))} ${verb}`;
      const state: StepState = ['expired', 'failed', 'declined', 'cancelled', 'closed'].includes(verb) ? 'failed' : 'done';
      steps.push({ step: verb === 'success' ? 'settled' : verb, title, at: entry.at, outcome, state });
      continue;
    }
    if (entry.source === 'webhook') {
      const event = text(entry.details.event);
      const id = text(entry.details.webhook_id);
      const status = entry.details.status_code;
      if (entry.kind === 'webhook.delivered') {
        failing.delete(id);
        steps.push({ step: 'webhook_delivered', title: 'Webhook delivered', at: entry.at, outcome: `${event} accepted by your endpoint (HTTP ${String(status)}, attempt ${String(entry.details.attempt)})`, state: 'done' });
      } else {
        const known = failing.get(id);
        const answer = status === null || status === undefined ? 'no answer' : `HTTP ${String(status)}`;
        if (known) {
          known.count += 1;
          known.outcome = `${event} not accepted by your endpoint: ${known.count} attempts failed, the last with ${answer}`;
        } else {
          const step = { step: 'webhook_failed', title: 'Webhook not accepted', at: entry.at, outcome: `${event} not accepted by your endpoint (${answer}); retried`, state: 'failed' as const, count: 1 };
          failing.set(id, step);
          steps.push(step);
        }
      }
    }
  }
  return steps.map(({ step, title, at, outcome, state }) => ({ step, title, at, outcome, state }));
}

/**
 * The technical entries as the merchant's page shows them: the Temporal Web UI is an operator's tool, so each entry's
 * link is dropped unless the deployment opened the UI to the dashboard's readers (TEMPORAL_UI_PUBLIC).
 */
export function technicalEntries<Entry extends { link: string }>(entries: readonly Entry[], uiPublic: boolean): Entry[] {
  return entries.map((entry) => (uiPublic ? entry : { ...entry, link: '' }));
}
