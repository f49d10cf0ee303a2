/**
 * A merchant's payment-outcome resolution policy (docs/refunds.md "Outcome policies"; table
 * `merchant_outcome_policies`, migration 037): what the payin settlement does with a payment that does not match its
 * invoice. No row: every payment is credited (the interface's behaviour, payment-services-interface.md "Payin
 * status": "The amount actually paid is credited").
 */
import type { Knex } from '../../db/knex';
import { invalidFields, type FieldViolations } from '../../errors';

type Conn = Knex | Knex.Transaction;

/**
 * A merchant's policy. `tolerance_percent`: decimal text, 0–100, at most 2 decimals ("0.5"). `refund_fee`: whether
 * a refund (the merchant's or a policy's) returns the payin fee's share too (docs/refunds.md "What can be refunded
 * (fees)"): `kept` (the platform keeps it) or `returned` (taken back from fee_revenue); migration 039.
 */
export interface OutcomePolicy {
  underpaid: 'credit' | 'refund';
  overpaid: 'credit' | 'refund_excess';
  late: 'credit' | 'refund';
  tolerance_percent: string;
  refund_fee: RefundFeeSetting;
}

/** Whether a refund returns the payin fee's share: `kept` (the default) or `returned`. */
export type RefundFeeSetting = 'kept' | 'returned';

/** A stored policy, with when and by which credential it was last set. */
export interface OutcomePolicyRow extends OutcomePolicy {
  merchant_id: string;
  updated_at: Date;
  updated_by: string;
}

/** What applies to a merchant without a row: credit everything, no tolerance, the payin fee kept on refunds. */
export const DEFAULT_OUTCOME_POLICY: OutcomePolicy = { underpaid: 'credit', overpaid: 'credit', late: 'credit', tolerance_percent: '0', refund_fee: 'kept' };

/** The rule values each field accepts, in the words the CLI and the RPC use. */
export const OUTCOME_POLICY_VALUES = {
  underpaid: ['credit', 'refund'],
  overpaid: ['credit', 'refund_excess'],
  late: ['credit', 'refund'],
  refund_fee: ['kept', 'returned'],
} as const;

/** 0 to 100 with at most 2 decimals, no sign, no exponent ("0", "2.5", "100.00"). */
const TOLERANCE = /^(?:100(?:\.0{1,2})?|\d{1,2}(?:\.\d{1,2})?)$/;

/** A change to a policy: each field absent (unchanged) or a value to check. */
export type OutcomePolicyChange = Partial<Record<keyof OutcomePolicy, string>>;

/**
 * Checks a change: every rule (and refund_fee) one of OUTCOME_POLICY_VALUES, the tolerance 0–100 with at most 2
 * decimals.
 * @returns the change, typed
 * @throws DomainError VALIDATION_FAILED naming each bad field (underpaid, overpaid, late, tolerance_percent, refund_fee)
 */
export function checkPolicyChange(change: OutcomePolicyChange): Partial<OutcomePolicy> {
  const fields: FieldViolations = {};
  for (const rule of ['underpaid', 'overpaid', 'late', 'refund_fee'] as const) {
    const value = change[rule];
    if (value !== undefined && !(OUTCOME_POLICY_VALUES[rule] as readonly string[]).includes(value)) {
      fields[rule] = [`must be one of ${OUTCOME_POLICY_VALUES[rule].join(', ')}`];
    }
  }
  if (change.tolerance_percent !== undefined && !TOLERANCE.test(change.tolerance_percent)) {
    fields.tolerance_percent = ['must be a percent from 0 to 100 with at most 2 decimals'];
  }
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
  return Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined)) as Partial<OutcomePolicy>;
}

/** The merchant's stored policy, or undefined (the default applies). */
export function findOutcomePolicy(conn: Conn, merchant_id: string): Promise<OutcomePolicyRow | undefined> {
  return conn<OutcomePolicyRow>('merchant_outcome_policies').where({ merchant_id }).first();
}

/**
 * Sets the fields of `change` (already checked) on the merchant's policy, the others kept (the default's on a first
 * set), in one statement. @returns the policy as stored
 */
export async function saveOutcomePolicy(conn: Conn, merchant_id: string, change: Partial<OutcomePolicy>, updated_by: string): Promise<OutcomePolicyRow> {
  const now = new Date();
  const [row] = (await conn('merchant_outcome_policies')
    .insert({ ...DEFAULT_OUTCOME_POLICY, ...change, merchant_id, updated_by, updated_at: now })
    .onConflict('merchant_id')
    .merge({ ...change, updated_by, updated_at: now })
    .returning('*')) as OutcomePolicyRow[];
  return row!;
}

/**
 * Whether `paid` is within `tolerance_percent` of `invoice` either way: |paid − invoice| × 100 ≤ invoice × tolerance,
 * exactly (integers in hundredths of a percent). Minor units.
 */
export function withinTolerance(paid: bigint, invoice: bigint, tolerance_percent: string): boolean {
  const [whole, fraction = ''] = tolerance_percent.split('.');
  const hundredths = BigInt(whole!) * 100n + BigInt((fraction + '00').slice(0, 2));
  const difference = paid > invoice ? paid - invoice : invoice - paid;
  return difference * 10_000n <= invoice * hundredths;
}

/**
 * A merchant's policy as the admin's and the dashboard's RPCs answer it (their messages' common fields): the default,
 * `stored` false, without a row; `updatedAt` ISO 8601 ('' without a row).
 */
export function outcomePolicyFields(row: OutcomePolicyRow | undefined) {
  const policy = row ?? DEFAULT_OUTCOME_POLICY;
  return {
    underpaid: policy.underpaid,
    overpaid: policy.overpaid,
    late: policy.late,
    tolerancePercent: policy.tolerance_percent,
    refundFee: policy.refund_fee,
    stored: row !== undefined,
    updatedAt: row ? new Date(row.updated_at).toISOString() : '',
    updatedBy: row?.updated_by ?? '',
  };
}
