/**
 * Payment-outcome resolution (docs/refunds.md "Outcome policies"): what the settlement activity does, on the
 * merchant's policy (./policy.ts), with a payment that does not match its invoice. It runs inside the settlement's
 * database transaction, after the payment was credited: the decision is recorded as a `payin.resolution` event, and
 * a refund the policy asks for (row, hold, `refund.created`) in the same transaction, under a reference derived from
 * the payin and the payment's ledger key, so a replayed settlement never refunds twice. Without a policy nothing here
 * writes anything (every payment credited, the interface's behaviour).
 *
 * The refund flow is reached through a port the composition root hands in (`ResolutionRefunds`): a flow imports no
 * other flow's code.
 */
import { createHash } from 'node:crypto';
import type { Knex } from '../../db/knex';
import { eventsOfSubject, recordEvent } from '../../events';
import { parseJsonLossless } from '../../money';
import { withinTolerance, type OutcomePolicy } from './policy';
import { PAYER_ADDRESS } from './contract';
import type { RefundFields } from '../refund/contract';
import type { PayinRow } from './store';

/** The refund flow as the resolution uses it (src/flows/refund/policy-refunds.ts, wired by src/activities.ts). */
export interface ResolutionRefunds {
  /** Whether a refund provider is configured. */
  configured(): boolean;
  /** Records the refund with its hold and `refund.created` in `trx`; a reference already recorded writes nothing. */
  hold(trx: Knex.Transaction, refund: RefundFields): Promise<boolean>;
  /** The refund's status (undefined: none). */
  status(conn: Knex | Knex.Transaction, refund_reference: string): Promise<string | undefined>;
  /** Starts the refund's RefundWorkflow unless it exists or existed (after the commit). */
  start(refund_reference: string): Promise<void>;
}

/** The policy rule that decided. `match`: neither late nor outside the tolerance (within_tolerance). */
export type ResolutionRule = 'late' | 'underpaid' | 'overpaid' | 'additional_payment' | 'match';

/**
 * What was done with the payment: `credit` (the rule says credit), `within_tolerance` (paid within the tolerance),
 * `refund_full` (the credited payment refunded), `refund_excess` (paid − invoice refunded), or credited because the
 * policy could not refund: `refund_impossible_no_address` (the upstream reported no payer address),
 * `refund_impossible_no_provider` (no refund provider configured).
 */
export type ResolutionDecision = 'credit' | 'within_tolerance' | 'refund_full' | 'refund_excess' | 'refund_impossible_no_address' | 'refund_impossible_no_provider';

/** One payment as the settlement credited it. Minor units. */
export interface ResolvedPayment {
  /** The payment's ledger key (`<ref>:settle` or `<ref>:additional:…`): the refund reference derives from it. */
  ledger_key: string;
  trx_ref: string;
  paid_units: bigint;
  fee_units: bigint;
  /** The payin had expired or closed before this payment settled it. */
  late: boolean;
  /** A payment to an already settled payin. */
  additional: boolean;
}

/** A decision with its amounts (minor units) and, when a refund was recorded, its reference. */
export interface Resolution {
  rule: ResolutionRule;
  decision: ResolutionDecision;
  policy: OutcomePolicy;
  paid_units: bigint;
  invoice_units: bigint;
  credited_units: bigint;
  refund_units: bigint;
  refund_reference: string | null;
  payer_address: string | null;
}

/** The refund reference of a policy refund of one payment: `RFD-` + 20 uppercase hex of its ledger key's digest. */
export function policyRefundReference(ledger_key: string): string {
  return `RFD-${createHash('sha256').update(`outcome-policy|${ledger_key}`).digest('hex').slice(0, 20).toUpperCase()}`;
}

/**
 * The rule and decision of `policy` for a payment, before any address is known, and the refund it asks for (minor
 * units; 0 when none). Late comes first: a late payment under `late: refund` is refunded whatever its amount; a second
 * payment to a settled invoice follows `overpaid` (refund_excess refunds all of it). The refund never exceeds what the
 * payment credited (paid − fee) under `refund_fee: kept` (the payin fee is not returned), or what was paid under
 * `returned` (the refund flow returns the fee's share from fee_revenue).
 */
export function decideOutcome(
  policy: OutcomePolicy,
  payment: { paid_units: bigint; fee_units: bigint; invoice_units: bigint; late: boolean; additional: boolean },
): { rule: ResolutionRule; decision: 'credit' | 'within_tolerance' | 'refund_full' | 'refund_excess'; refund_units: bigint } {
  const credited = payment.paid_units - payment.fee_units;
  const refundable = policy.refund_fee === 'returned' ? payment.paid_units : credited;
  const full = { decision: 'refund_full' as const, refund_units: refundable };
  if (payment.additional) return { rule: 'additional_payment', ...(policy.overpaid === 'refund_excess' ? full : { decision: 'credit', refund_units: 0n }) };
  if (payment.late && policy.late === 'refund') return { rule: 'late', ...full };
  if (withinTolerance(payment.paid_units, payment.invoice_units, policy.tolerance_percent)) return { rule: 'match', decision: 'within_tolerance', refund_units: 0n };
  if (payment.paid_units < payment.invoice_units) return { rule: 'underpaid', ...(policy.underpaid === 'refund' ? full : { decision: 'credit', refund_units: 0n }) };
  if (policy.overpaid !== 'refund_excess') return { rule: 'overpaid', decision: 'credit', refund_units: 0n };
  const excess = payment.paid_units - payment.invoice_units;
  return { rule: 'overpaid', decision: 'refund_excess', refund_units: excess < refundable ? excess : refundable };
}

/**
 * The payer address the upstream reported with this payment: `payer_address` of its applied success notification
 * (the settlement's authority), when it is a TRON address; null otherwise.
 */
async function payerAddressOf(trx: Knex.Transaction, invoice_reference: string, payment: ResolvedPayment): Promise<string | null> {
  const row = (await trx('upstream_notifications')
    .where({ invoice_reference, status: 'success', outcome: 'applied', amount_units: payment.paid_units.toString() })
    .andWhere((query) => (payment.trx_ref ? query.where({ trx_ref: payment.trx_ref }) : query.whereNull('trx_ref')))
    .orderBy('id')
    .first('raw_body')) as { raw_body: string } | undefined;
  if (!row) return null;
  try {
    const address = (parseJsonLossless(row.raw_body) as { payer_address?: unknown }).payer_address;
    return typeof address === 'string' && PAYER_ADDRESS.test(address) ? address : null;
  } catch {
    return null;
  }
}

/**
 * Decides one credited payment on the merchant's policy (read with the payin's lock: `lockPayinForSettlement`): the
 * rule, the decision and, when it refunds, the payer's address (read in `trx`) and the refund's reference. Writes
 * nothing. A merchant without a policy never gets here: its payments are credited and nothing is recorded.
 */
export async function resolvePayment(
  trx: Knex.Transaction,
  refunds: ResolutionRefunds | undefined,
  payin: PayinRow,
  payment: ResolvedPayment,
  policy: OutcomePolicy,
): Promise<Resolution> {
  const decided = decideOutcome(policy, { ...payment, invoice_units: payin.amount_units });
  const resolution: Resolution = {
    ...decided,
    policy,
    paid_units: payment.paid_units,
    invoice_units: payin.amount_units,
    credited_units: payment.paid_units - payment.fee_units,
    refund_reference: null,
    payer_address: null,
  };
  if (decided.decision !== 'refund_full' && decided.decision !== 'refund_excess') return resolution;
  if (decided.refund_units <= 0n) return { ...resolution, decision: 'credit', refund_units: 0n };
  const payer_address = await payerAddressOf(trx, payin.invoice_reference, payment);
  if (!payer_address) return { ...resolution, decision: 'refund_impossible_no_address', refund_units: 0n };
  if (!refunds?.configured()) return { ...resolution, decision: 'refund_impossible_no_provider', refund_units: 0n, payer_address };
  return { ...resolution, payer_address, refund_reference: policyRefundReference(payment.ledger_key) };
}

/** The resolution as webhook and event data: amounts as decimal strings of minor units. */
export function resolutionData(resolution: Resolution): Record<string, unknown> {
  return {
    rule: resolution.rule,
    decision: resolution.decision,
    policy: resolution.policy,
    paid_units: resolution.paid_units.toString(),
    invoice_units: resolution.invoice_units.toString(),
    credited_units: resolution.credited_units.toString(),
    refund_units: resolution.refund_units.toString(),
    refund_reference: resolution.refund_reference,
  };
}

/**
 * Records a resolution in `trx`: its `payin.resolution` event and the refund it decided (row, hold, `refund.created`),
 * once per payment: a replayed additional payment finds its event and records nothing (the first decision stands).
 * @returns the refund references to start after the commit (recorded now, or a replay's still held)
 */
export async function recordResolution(
  trx: Knex.Transaction,
  refunds: ResolutionRefunds | undefined,
  payin: PayinRow,
  payment: ResolvedPayment,
  resolution: Resolution,
): Promise<string[]> {
  const decided = (await eventsOfSubject(trx, payin.invoice_reference)).some(
    (event) => event.type === 'payin.resolution' && (event.data as { ledger_key?: unknown }).ledger_key === payment.ledger_key,
  );
  // A replay: the first decision stands (the policy may have changed since); its refund, if still held, is started.
  if (decided) return heldPolicyRefunds(trx, refunds, payment.ledger_key);
  await recordEvent(trx, {
    owner: { type: 'merchant', id: payin.merchant_id },
    subject: payin.invoice_reference,
    type: 'payin.resolution',
    data: { invoice_reference: payin.invoice_reference, out_trade_no: payin.out_trade_no, trx_ref: payment.trx_ref || null, ledger_key: payment.ledger_key, currency: payin.currency, ...resolutionData(resolution) },
  });
  if (!resolution.refund_reference || !refunds) return [];
  await refunds.hold(trx, {
    refund_reference: resolution.refund_reference,
    merchant_id: payin.merchant_id,
    invoice_reference: payin.invoice_reference,
    out_trade_no: payin.out_trade_no,
    trx_ref: payment.trx_ref || payin.trx_ref || payin.invoice_reference,
    amount_units: resolution.refund_units,
    currency: payin.currency,
    address: resolution.payer_address!,
    reason: `outcome policy: ${resolution.rule} (${resolution.decision})`,
    refund_fee: resolution.policy.refund_fee,
  });
  return [resolution.refund_reference];
}

/** The policy refund of a payment already settled (a replayed settlement), when it is still held: to start again. */
export async function heldPolicyRefunds(conn: Knex | Knex.Transaction, refunds: ResolutionRefunds | undefined, ledger_key: string): Promise<string[]> {
  if (!refunds) return [];
  const reference = policyRefundReference(ledger_key);
  return (await refunds.status(conn, reference)) === 'held' ? [reference] : [];
}
