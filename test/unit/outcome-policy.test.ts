/**
 * The outcome policy's pure parts (docs/refunds.md "Outcome policies"): the tolerance, the decision of each rule in
 * its order, the refund's amount (never more than the payment credited: the fee is not returned), the deterministic
 * refund reference, and the checks of a change.
 */
import { DomainError } from '../../src/errors';
import { checkPolicyChange, DEFAULT_OUTCOME_POLICY, withinTolerance, type OutcomePolicy } from '../../src/flows/payin/policy';
import { POLICY_FIELD_TEXTS, policyContent } from '../../rest-facade/views/dashboard-policy';
import { feeShareOf, refundableOf } from '../../src/flows/refund/store';
import { decideOutcome, heldPolicyRefunds, policyRefundReference, type ResolutionRefunds } from '../../src/flows/payin/resolution';

const strict: OutcomePolicy = { underpaid: 'refund', overpaid: 'refund_excess', late: 'refund', tolerance_percent: '2', refund_fee: 'kept' };
const payment = (paid: bigint, extra: Partial<{ late: boolean; additional: boolean; fee: bigint }> = {}) => ({
  paid_units: paid,
  fee_units: extra.fee ?? paid / 100n,
  invoice_units: 10_000_000n,
  late: extra.late ?? false,
  additional: extra.additional ?? false,
});

describe('withinTolerance', () => {
  it('compares exactly, both ways, in hundredths of a percent', () => {
    expect(withinTolerance(9_800_000n, 10_000_000n, '2')).toBe(true);
    expect(withinTolerance(9_799_999n, 10_000_000n, '2')).toBe(false);
    expect(withinTolerance(10_200_000n, 10_000_000n, '2.00')).toBe(true);
    expect(withinTolerance(10_200_001n, 10_000_000n, '2')).toBe(false);
    expect(withinTolerance(10_005_000n, 10_000_000n, '0.05')).toBe(true);
    expect(withinTolerance(10_005_001n, 10_000_000n, '0.05')).toBe(false);
    expect(withinTolerance(10_000_000n, 10_000_000n, '0')).toBe(true);
    expect(withinTolerance(10_000_001n, 10_000_000n, '0')).toBe(false);
    expect(withinTolerance(0n, 10_000_000n, '100')).toBe(true);
  });
});

describe('decideOutcome', () => {
  it('credits everything under the default policy (only the tolerance 0 match is named)', () => {
    expect(decideOutcome(DEFAULT_OUTCOME_POLICY, payment(5_000_000n))).toEqual({ rule: 'underpaid', decision: 'credit', refund_units: 0n });
    expect(decideOutcome(DEFAULT_OUTCOME_POLICY, payment(12_000_000n))).toEqual({ rule: 'overpaid', decision: 'credit', refund_units: 0n });
    expect(decideOutcome(DEFAULT_OUTCOME_POLICY, payment(10_000_000n, { late: true }))).toEqual({ rule: 'match', decision: 'within_tolerance', refund_units: 0n });
    expect(decideOutcome(DEFAULT_OUTCOME_POLICY, payment(3_000_000n, { additional: true }))).toEqual({ rule: 'additional_payment', decision: 'credit', refund_units: 0n });
  });

  it('applies the rules in order: additional, late, tolerance, underpaid, overpaid', () => {
    expect(decideOutcome(strict, payment(3_000_000n, { additional: true }))).toEqual({ rule: 'additional_payment', decision: 'refund_full', refund_units: 2_970_000n });
    expect(decideOutcome(strict, payment(10_000_000n, { late: true }))).toEqual({ rule: 'late', decision: 'refund_full', refund_units: 9_900_000n });
    expect(decideOutcome({ ...strict, late: 'credit' }, payment(5_000_000n, { late: true }))).toEqual({ rule: 'underpaid', decision: 'refund_full', refund_units: 4_950_000n });
    expect(decideOutcome(strict, payment(9_900_000n))).toEqual({ rule: 'match', decision: 'within_tolerance', refund_units: 0n });
    expect(decideOutcome(strict, payment(5_000_000n))).toEqual({ rule: 'underpaid', decision: 'refund_full', refund_units: 4_950_000n });
    expect(decideOutcome(strict, payment(12_000_000n))).toEqual({ rule: 'overpaid', decision: 'refund_excess', refund_units: 2_000_000n });
  });

  it('never refunds more than the payment credited (paid − fee)', () => {
    // 10 invoiced, 100 paid at a 95 % fee: the excess (90) is more than was credited (5).
    expect(decideOutcome(strict, payment(100_000_000n, { fee: 95_000_000n }))).toEqual({ rule: 'overpaid', decision: 'refund_excess', refund_units: 5_000_000n });
  });

  it('refunds what was paid under refund_fee returned (the fee share comes back from fee_revenue)', () => {
    const returned: OutcomePolicy = { ...strict, refund_fee: 'returned' };
    expect(decideOutcome(returned, payment(5_000_000n))).toEqual({ rule: 'underpaid', decision: 'refund_full', refund_units: 5_000_000n });
    expect(decideOutcome(returned, payment(12_000_000n))).toEqual({ rule: 'overpaid', decision: 'refund_excess', refund_units: 2_000_000n });
    expect(decideOutcome(returned, payment(100_000_000n, { fee: 95_000_000n }))).toEqual({ rule: 'overpaid', decision: 'refund_excess', refund_units: 90_000_000n });
  });
});

describe('feeShareOf (refund_fee returned)', () => {
  const basis = (returned_amount = 0n, returned_fee = 0n) => ({ paid: 10_000_000n, fee: 100_000n, committed: returned_amount, returned_amount, returned_fee });

  it('returns nothing under kept, the whole fee on a full refund under returned', () => {
    expect(feeShareOf(basis(), 'kept', 10_000_000n)).toBe(0n);
    expect(feeShareOf(basis(), 'returned', 10_000_000n)).toBe(100_000n);
    expect(refundableOf(basis(), 'kept')).toBe(9_900_000n);
    expect(refundableOf(basis(), 'returned')).toBe(10_000_000n);
  });

  it('adds up exactly over partial refunds, whatever the split, never more than the fee', () => {
    for (const split of [[3_333_333n, 3_333_333n, 3_333_334n], [1n, 9_999_999n], [7n, 13n, 9_999_980n], [5_000_000n, 4_999_999n]]) {
      let returned_amount = 0n;
      let returned_fee = 0n;
      for (const amount of split) {
        const share = feeShareOf(basis(returned_amount, returned_fee), 'returned', amount);
        expect(share).toBeGreaterThanOrEqual(0n);
        expect(share).toBeLessThan(amount);
        returned_amount += amount;
        returned_fee += share;
        expect(returned_fee).toBe((100_000n * returned_amount) / 10_000_000n);
      }
      expect(returned_fee).toBeLessThanOrEqual(100_000n);
    }
  });
});

describe('policyRefundReference', () => {
  it('is a refund reference, the same for one payment and another for another', () => {
    const settle = policyRefundReference('PAYIN-ABC:settle');
    expect(settle).toMatch(/^RFD-[A-Z0-9]{20}$/);
    expect(policyRefundReference('PAYIN-ABC:settle')).toBe(settle);
    expect(policyRefundReference('PAYIN-ABC:additional:T1:3000000')).not.toBe(settle);
  });
});

describe('checkPolicyChange', () => {
  it('keeps only the fields given', () => {
    expect(checkPolicyChange({ overpaid: 'refund_excess', tolerance_percent: '0.5' })).toEqual({ overpaid: 'refund_excess', tolerance_percent: '0.5' });
    expect(checkPolicyChange({})).toEqual({});
  });

  it('names every refused field', () => {
    const refusal = (() => {
      try {
        checkPolicyChange({ underpaid: 'refund_excess', overpaid: 'refund', late: '', tolerance_percent: '100.5', refund_fee: 'yes' });
      } catch (error) {
        return error as DomainError;
      }
      throw new Error('not refused');
    })();
    expect(refusal.reason).toBe('VALIDATION_FAILED');
    expect(Object.keys(refusal.fields ?? {}).sort()).toEqual(['late', 'overpaid', 'refund_fee', 'tolerance_percent', 'underpaid']);
    expect(checkPolicyChange({ refund_fee: 'returned' })).toEqual({ refund_fee: 'returned' });
    for (const bad of ['-1', '1.234', '1e2', '101', ' 1', '1.', '.5', '0x10']) expect(() => checkPolicyChange({ tolerance_percent: bad })).toThrow();
    for (const good of ['0', '0.5', '2', '99.99', '100', '100.0', '100.00']) expect(checkPolicyChange({ tolerance_percent: good })).toEqual({ tolerance_percent: good });
  });
});

describe('heldPolicyRefunds (a replayed settlement)', () => {
  const port = (status: string | undefined): ResolutionRefunds => ({
    configured: () => true,
    hold: async () => false,
    status: async () => status,
    start: async () => undefined,
  });
  const key = 'PAYIN-ABC:settle';

  it('hands back the refund still held, to be started again; nothing for a refund the provider took or decided', async () => {
    const conn = undefined as never;
    expect(await heldPolicyRefunds(conn, port('held'), key)).toEqual([policyRefundReference(key)]);
    for (const status of ['pending', 'succeeded', 'failed', undefined]) expect(await heldPolicyRefunds(conn, port(status), key)).toEqual([]);
    expect(await heldPolicyRefunds(conn, undefined, key)).toEqual([]);
  });
});

describe('the dashboard policy page (refund_fee)', () => {
  it('shows the setting and offers it in the form, the stored value selected', () => {
    const policy = { underpaid: 'credit', overpaid: 'credit', late: 'credit', tolerancePercent: '0', refundFee: 'returned', stored: true, updatedAt: '2026-01-01T00:00:00.000Z', updatedBy: 'cred_x' };
    const page = policyContent({ policy: policy as Parameters<typeof policyContent>[0]['policy'], csrfToken: 't' }).toString();
    expect(page).toContain('<dd id="policy-refund-fee">returned</dd>');
    expect(page).toMatch(/<select id="refund_fee" name="refund_fee"><option value="kept">[^<]*<\/option><option value="returned" selected>/);
    expect(POLICY_FIELD_TEXTS.refund_fee).toBeDefined();
  });
});
