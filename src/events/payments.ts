/**
 * An owner's payments as its event stream tells them (docs/dashboard.md "Payments"): one per business reference (the
 * events' subject), its **kind** the prefix of the subject's first event (`payin`, `deposit`, …), its **status** the
 * verb of its latest status event of that kind (`payin.success` → `success`), its amount and currency that event's
 * `amount_units` and `currency`. A status event is any event of the kinds below except `payin.additional_payment`
 * (money added to a settled payin: the payin stays `success`); `webhook.failed` and `bank_account.*` are about no
 * payment's state. A subject shared by two kinds (a deposit that paid a preorder: `deposit.*` and `preorder.paid`
 * under one `DEP…` reference) is one payment, of its first event's kind.
 *
 * Paging is keyset on the latest status event's `seq`: newest activity first, `before` for older pages, `after` for
 * newer ones; no offset. A payment that changes while someone pages moves to the top (its latest seq grows).
 */
import type { Knex } from 'knex';
import { assert } from '../errors';
import { CURRENCIES, decimalsOf } from '../money';
import { EVENT_TYPES } from './catalog';
import { numberOwnerEvents } from './sequencer';
import { selectLatestPayments } from './store';

/** The kinds of payment an owner's events describe, in the order the dashboard offers them. */
export const PAYMENT_KINDS = ['payin', 'pre_transfer', 'deposit', 'wallet_transfer', 'preorder', 'blocked_money'] as const;
export type PaymentKind = (typeof PAYMENT_KINDS)[number];

/** Event types that are no change of a payment's status. */
const NOT_STATUS: ReadonlySet<string> = new Set(['payin.additional_payment', 'payin.resolution']);

/** Every status event type, in catalog order. */
export const PAYMENT_STATUS_TYPES: readonly string[] = EVENT_TYPES.filter(
  (type) => (PAYMENT_KINDS as readonly string[]).includes(type.split('.')[0]!) && !NOT_STATUS.has(type),
);

/** The statuses (verbs) a payment of `kind` can have, or of any kind when undefined, in catalog order, no repeats. */
export function paymentStatuses(kind?: PaymentKind): string[] {
  const verbs = PAYMENT_STATUS_TYPES.filter((type) => !kind || type.startsWith(`${kind}.`)).map((type) => type.split('.')[1]!);
  return [...new Set(verbs)];
}

export function isPaymentKind(text: string): text is PaymentKind {
  return (PAYMENT_KINDS as readonly string[]).includes(text);
}

/** Most payments one page answers. */
export const PAYMENTS_PAGE_MAX = 100;

export interface PaymentSummary {
  reference: string;
  kind: PaymentKind;
  status: string;
  /** Minor units of `currency` (0 when the event names none). */
  amount_units: bigint;
  /** '' when the event names none. */
  currency: string;
  created_at: Date;
  updated_at: Date;
  /** The seq of its latest status event. */
  seq: bigint;
  /** The merchant's order id (`out_trade_no`) the event names; '' when none. */
  out_trade_no: string;
  /** The fee the event names (minor units), 0 when none. */
  fee_units: bigint;
  /** Paid (`paid_amount_units`, else `amount_units`) less the fee, for a settled payment only (undefined otherwise). */
  net_units?: bigint;
}

export interface PaymentsPage {
  /** Newest activity first. */
  payments: PaymentSummary[];
  /** Ask `before` = this for the next, older page; undefined when there is none. */
  next_before?: bigint;
  /** Ask `after` = this for the previous, newer page; undefined when there is none. */
  newer_after?: bigint;
}

export interface PaymentsQuery {
  /** Whose stream (an EventOwner of ./index.ts). */
  owner: { type: 'merchant' | 'partner'; id: string };
  kind?: PaymentKind;
  /** A verb of `paymentStatuses(kind)`. */
  status?: string;
  /** The reference, exactly. */
  reference?: string;
  /** Created at or after. */
  created_from?: Date;
  /** Created before. */
  created_before?: Date;
  /** At most one of before and after. */
  before?: bigint;
  after?: bigint;
  /** 1..PAYMENTS_PAGE_MAX */
  limit: number;
  /** The merchant's order id its latest status event names, exactly. */
  out_trade_no?: string;
  /** Major units (decimal text, checked by the caller): the latest event's amount in its own currency, at least … */
  amount_from?: string;
  /** … and at most. */
  amount_to?: string;
}

const AMOUNT = /^-?\d{1,19}$/;

/** The verbs of a payment whose money arrived: its net is shown. */
const SETTLED: ReadonlySet<string> = new Set(['success', 'completed', 'confirmed', 'paid']);

/** Decimals of every currency the platform knows: the amount filters' scale. */
const CURRENCY_DECIMALS: Record<string, number> = Object.fromEntries(CURRENCIES.map((currency) => [currency, decimalsOf(currency)]));

/**
 * One page of the owner's payments (see the module's comment).
 * @throws AssertionError on a limit out of range, both cursors, or a negative one (the services check them first)
 */
export async function listPayments(conn: Knex | Knex.Transaction, query: PaymentsQuery): Promise<PaymentsPage> {
  assert(Number.isInteger(query.limit) && query.limit >= 1 && query.limit <= PAYMENTS_PAGE_MAX, `payments limit out of range: ${query.limit}`);
  assert(query.before === undefined || query.after === undefined, 'payments: both cursors');
  assert((query.before ?? 0n) >= 0n && (query.after ?? 0n) >= 0n, 'payments cursor is negative');
  const types = PAYMENT_STATUS_TYPES.filter((type) => {
    const [kind, verb] = type.split('.');
    return (!query.kind || kind === query.kind) && (!query.status || verb === query.status);
  });
  if (types.length === 0) return { payments: [] };
  await numberOwnerEvents(conn, query.owner);
  const select = (cursor: { before?: bigint; after?: bigint }, limit: number) =>
    selectLatestPayments(conn, {
      owner_type: query.owner.type,
      owner_id: query.owner.id,
      status_types: PAYMENT_STATUS_TYPES,
      types,
      subject: query.reference,
      created_from: query.created_from,
      created_before: query.created_before,
      out_trade_no: query.out_trade_no,
      amount_from: query.amount_from,
      amount_to: query.amount_to,
      decimals: CURRENCY_DECIMALS,
      ...cursor,
      limit,
    });
  const forward = query.after === undefined;
  const rows = await select(forward ? { before: query.before } : { after: query.after }, query.limit + 1);
  const more = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  if (!forward) page.reverse();
  const payments = page.map(summaryOf);
  if (payments.length === 0) return { payments };
  const newest = payments[0]!.seq;
  const oldest = payments.at(-1)!.seq;
  // The other direction: one probe for a single row past this page's edge.
  const other = forward ? (await select({ after: newest }, 1)).length > 0 : (await select({ before: oldest }, 1)).length > 0;
  const olderExists = forward ? more : other;
  const newerExists = forward ? other : more;
  return { payments, next_before: olderExists ? oldest : undefined, newer_after: newerExists ? newest : undefined };
}

function summaryOf(row: { subject: string; seq: string; type: string; data: Record<string, unknown>; updated_at: Date; created_at: Date }): PaymentSummary {
  const [kind, status] = row.type.split('.') as [PaymentKind, string];
  const units = row.data.amount_units;
  const currency = row.data.currency;
  const minor = (value: unknown) => (typeof value === 'string' && AMOUNT.test(value) ? BigInt(value) : undefined);
  const fee = minor(row.data.fee_units) ?? 0n;
  const paid = minor(row.data.paid_amount_units) ?? minor(units);
  const orderId = row.data.out_trade_no;
  return {
    out_trade_no: typeof orderId === 'string' ? orderId : '',
    fee_units: fee,
    ...(SETTLED.has(status) && paid !== undefined ? { net_units: paid - fee } : {}),
    reference: row.subject,
    kind,
    status,
    amount_units: typeof units === 'string' && AMOUNT.test(units) ? BigInt(units) : 0n,
    currency: typeof currency === 'string' ? currency : '',
    created_at: row.created_at,
    updated_at: row.updated_at,
    seq: BigInt(row.seq),
  };
}
