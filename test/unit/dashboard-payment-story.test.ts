/**
 * The merchant's steps and summary built from a payment's timeline (src/dashboard/payment-story.ts): status events,
 * money added later, refunds and webhook attempts become steps in the merchant's words; workflow, ledger and request
 * entries make none; fee and net follow what was paid.
 */
import { stepsOf, summaryOf, technicalEntries } from '../../src/dashboard/payment-story';
import type { TimelineEntry } from '../../src/timeline/types';

const at = (second: number) => `2026-05-04T11:00:${String(second).padStart(2, '0')}.000Z`;
const event = (second: number, kind: string, data: Record<string, unknown>): TimelineEntry => ({ at: at(second), source: 'event', kind, summary: kind, details: { data } });
const base = { invoice_reference: 'PAYIN-X', out_trade_no: 'ORDER-1', currency: 'USDT' };

const entries: TimelineEntry[] = [
  { at: at(0), source: 'workflow', kind: 'workflow.started', summary: 'started', details: {} },
  event(1, 'payin.created', { ...base, amount_units: '25500000', fee_units: '255000' }),
  { at: at(2), source: 'workflow', kind: 'timer.started', summary: 'timer', details: {} },
  { at: at(3), source: 'ledger', kind: 'ledger.posted', summary: 'PAYIN-X:settle', details: {} },
  event(3, 'payin.success', { ...base, amount_units: '25500000', paid_amount_units: '25000000', fee_units: '250000', payment_match_status: 'underpaid', late: false }),
  { at: at(4), source: 'webhook', kind: 'webhook.failed', summary: '', details: { webhook_id: 'W1', event: 'payin.success', status_code: 500, attempt: 1 } },
  { at: at(5), source: 'webhook', kind: 'webhook.failed', summary: '', details: { webhook_id: 'W1', event: 'payin.success', status_code: null, attempt: 2 } },
  { at: at(6), source: 'webhook', kind: 'webhook.delivered', summary: '', details: { webhook_id: 'W1', event: 'payin.success', status_code: 200, attempt: 3 } },
  event(7, 'payin.additional_payment', { ...base, amount_units: '1000000', fee_units: '10000' }),
  event(8, 'refund.created', { ...base, refund_reference: 'RFD-1', status: 'held', amount_units: '2000000', address: 'TXYZ', reason: 'returned' }),
  event(9, 'refund.succeeded', { ...base, refund_reference: 'RFD-1', status: 'succeeded', amount_units: '2000000', address: 'TXYZ' }),
];

describe('the payment story', () => {
  it('summarises what was asked, paid, taken and credited, and the refunds', () => {
    const summary = summaryOf(entries);
    expect(summary).toMatchObject({
      kind: 'payin',
      status: 'success',
      currency: 'USDT',
      out_trade_no: 'ORDER-1',
      amount_units: 25_500_000n,
      paid_units: 26_000_000n,
      fee_units: 260_000n,
      net_units: 25_740_000n,
      created_at: at(1),
      settled_at: at(3),
      payer_address: 'TXYZ',
    });
    expect(summary.refunds).toEqual([{ refund_reference: 'RFD-1', amount_units: 2_000_000n, status: 'succeeded', created_at: at(8), decided_at: at(9), reason: 'returned', address: 'TXYZ' }]);
  });

  it('tells the merchant’s steps in order, one per webhook however many attempts failed, none for internals', () => {
    const steps = stepsOf(entries, summaryOf(entries));
    expect(steps.map((step) => [step.step, step.state])).toEqual([
      ['created', 'done'],
      ['settled', 'done'],
      ['webhook_failed', 'failed'],
      ['webhook_delivered', 'done'],
      ['paid_more', 'done'],
      ['refund_requested', 'pending'],
      ['refunded', 'done'],
    ]);
    expect(steps[1]!.outcome).toBe('25.000000 USDT paid (underpaid); fee 0.250000 USDT; 24.750000 USDT credited to your balance');
    expect(steps[2]!.outcome).toBe('payin.success not accepted by your endpoint: 2 attempts failed, the last with no answer');
    expect(steps.map((step) => step.outcome).join(' ')).not.toMatch(/timer|workflow|ledger|:settle/);
  });

  it('an unpaid payment has no paid amount and no net', () => {
    const unpaid = [event(1, 'payin.created', { ...base, amount_units: '100', fee_units: '1' }), event(2, 'payin.expired', { ...base, amount_units: '100', paid_amount_units: null, fee_units: '0' })];
    const summary = summaryOf(unpaid);
    expect([summary.status, summary.paid_units, summary.net_units, summary.settled_at]).toEqual(['expired', undefined, 0n, '']);
    expect(stepsOf(unpaid, summary).map((step) => [step.step, step.state])).toEqual([['created', 'done'], ['expired', 'failed']]);
  });
});

describe('the technical entries', () => {
  const entries = [{ kind: 'workflow.started', link: 'http://ui.example/namespaces/default/workflows/PAYIN-X/run/history' }, { kind: 'ledger.posted', link: '' }];

  it('drop the Temporal Web UI links unless the UI is public to the dashboard’s readers', () => {
    expect(technicalEntries(entries, false).map((entry) => entry.link)).toEqual(['', '']);
    expect(technicalEntries(entries, true).map((entry) => entry.link)).toEqual([entries[0]!.link, '']);
  });
});
