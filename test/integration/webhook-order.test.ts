/**
 * Webhooks in order per payment (docs/webhooks.md "Order"), against real PostgreSQL and Temporal over HTTP: a payin's
 * two webhooks (its settlement, then an additional payment) reach a receiver that answers 500 to the first one until
 * it has failed several times and another payin's webhook got through: the second is never attempted before the
 * first is delivered, and the other payin is not held up meanwhile. Each webhook carries its event's seq
 * (`webhook-event-seq`). A redelivery of the merchant's events after a seq sends them again in order per payment.
 */
import { hmacSha256Hex } from '../../src/crypto/hmac';
import type { MerchantCredentials } from '../../src/onboarding/merchants';
import { eventually, post, startPayinHarness, UPSTREAM_WEBHOOK_SECRET, type PayinHarness } from '../support/payin-setup';

describe('webhooks in order per payment', () => {
  let harness: PayinHarness;
  let merchant: MerchantCredentials;
  let orders = 0;

  beforeAll(async () => {
    harness = await startPayinHarness();
    const { createMerchant } = await import('../../src/onboarding/merchants');
    ({ credentials: merchant } = await createMerchant(harness.platform.deps, { name: 'Ordered merchant', callback_url: harness.receiver.url }));
    harness.receiver.configure({ hmac_secret: merchant.hmac_secret, signature_header: merchant.signature_header });
  });
  afterAll(() => harness.stop());

  const createPayin = async (amount: string): Promise<string> => {
    const response = await post(harness.platform.facadeUrl, '/api/v1/payins', JSON.stringify({ amount: Number(amount), out_trade_no: `ORDER-${++orders}` }), { 'X-API-Key': merchant.api_key });
    expect(response.status).toBe(200);
    return response.json.data.invoice_reference as string;
  };
  const notify = async (invoice_reference: string, amount: number, trx_ref: string) => {
    const text = JSON.stringify({ currency: 'USDT', invoice_reference, status: 'success', amount, trx_ref });
    const answer = await post(harness.platform.facadeUrl, '/api/v1/upstream/notifications', text, { 'X-Upstream-Signature': hmacSha256Hex(UPSTREAM_WEBHOOK_SECRET, text) });
    expect(answer.json.data).toMatchObject({ invoice_reference, applied: true });
  };
  const receivedOf = (invoice_reference: string) => harness.receiver.received.filter((item) => item.json.data.invoice_reference === invoice_reference);
  const firstAccepted = (webhook_id: string) => harness.receiver.received.findIndex((item) => item.webhook_id === webhook_id && item.status === 200);

  it('holds a payment’s second webhook until its first is delivered, while another payment’s goes through', async () => {
    const first = await createPayin('3');
    const other = await createPayin('5');
    const successId = `WH-${first.replace(/^PAYIN-/, '')}-SUCCESS`;
    const otherId = `WH-${other.replace(/^PAYIN-/, '')}-SUCCESS`;
    // The first payment's settlement webhook fails until it failed 3 times and the other payment's was accepted.
    harness.receiver.configure({ fail_when: (webhook_id, count) => webhook_id === successId && (count <= 3 || firstAccepted(otherId) < 0) });
    try {
      await notify(first, 3, 'TRX-FIRST');
      await harness.receiver.waitFor(() => receivedOf(first).some((item) => item.webhook_id === successId && item.status === 500));
      // A second payment of the settled payin: its webhook comes second in the payment's order.
      await notify(first, 1, 'TRX-SECOND');
      await notify(other, 5, 'TRX-OTHER');
      await harness.receiver.waitFor(() => receivedOf(first).some((item) => item.json.event === 'payin.additional_payment' && item.status === 200), 60_000);

      const successDelivered = firstAccepted(successId);
      expect(successDelivered).toBeGreaterThanOrEqual(0);
      expect(receivedOf(first).filter((item) => item.webhook_id === successId && item.status === 500).length).toBeGreaterThanOrEqual(3);
      // Nothing of the second webhook reached the receiver before the first was delivered.
      const additional = harness.receiver.received.flatMap((item, index) => (item.json.event === 'payin.additional_payment' && item.json.data.invoice_reference === first ? [index] : []));
      expect(additional.length).toBeGreaterThanOrEqual(1);
      expect(Math.min(...additional)).toBeGreaterThan(successDelivered);
      // The other payment was not held up: accepted while the first one's webhook was still failing.
      expect(firstAccepted(otherId)).toBeGreaterThanOrEqual(0);
      expect(firstAccepted(otherId)).toBeLessThan(successDelivered);

      // Each webhook carries its event's seq, in the merchant's stream order.
      const seqOf = (predicate: (item: (typeof harness.receiver.received)[number]) => boolean) => Number(harness.receiver.received.find(predicate)!.headers['webhook-event-seq']);
      const successSeq = seqOf((item) => item.webhook_id === successId);
      const additionalSeq = seqOf((item) => item.json.event === 'payin.additional_payment' && item.json.data.invoice_reference === first);
      expect(successSeq).toBeGreaterThan(0);
      expect(additionalSeq).toBeGreaterThan(successSeq);
      const events = await harness.platform.deps.database('events').where({ owner_type: 'merchant', owner_id: merchant.merchant_id, subject: first }).orderBy('seq').select('seq', 'type');
      expect(events.map((event) => [Number(event.seq), event.type])).toEqual(
        expect.arrayContaining([
          [successSeq, 'payin.success'],
          [additionalSeq, 'payin.additional_payment'],
        ]),
      );
      // Every attempt is recorded, a failed one with when the next is due.
      const attempts = await harness.platform.deps.database('webhook_delivery_attempts').where({ webhook_id: successId }).orderBy('attempt');
      expect(attempts.at(-1)).toMatchObject({ status_code: 200, next_retry_at: null });
      for (const failed of attempts.slice(0, -1)) {
        expect(failed).toMatchObject({ status_code: 500, error: 'HTTP 500' });
        expect(failed.next_retry_at.getTime()).toBeGreaterThan(failed.attempted_at.getTime());
      }
    } finally {
      harness.receiver.configure({ fail_when: null });
    }
  }, 120_000);

  it('starts a delivery run with its payment’s amount and currency as search attributes (from its event’s data)', async () => {
    const invoice_reference = await createPayin('7');
    const webhook_id = `WH-${invoice_reference.replace(/^PAYIN-/, '')}-SUCCESS`;
    // The inline first attempt fails, so the delivery workflow runs.
    harness.receiver.configure({ fail_when: (id, count) => id === webhook_id && count <= 1 });
    try {
      await notify(invoice_reference, 7, 'TRX-ATTRIBUTES');
      await harness.receiver.waitFor(() => harness.receiver.received.some((item) => item.webhook_id === webhook_id && item.status === 200), 60_000);
    } finally {
      harness.receiver.configure({ fail_when: null });
    }
    const handle = harness.platform.deps.temporal.client.workflow.getHandle(webhook_id);
    await handle.result();
    const described = await handle.describe();
    const names = ['PaymentOwnerId', 'PaymentKind', 'PaymentAmountUnits', 'PaymentCurrency', 'PaymentStatus'];
    expect(Object.fromEntries(names.map((name) => [name, described.searchAttributes[name]?.[0]]))).toEqual({
      PaymentOwnerId: `merchant:${merchant.merchant_id}`,
      PaymentKind: 'webhook',
      PaymentAmountUnits: 7_000_000,
      PaymentCurrency: 'USDT',
      PaymentStatus: 'delivered',
    });
  }, 90_000);

  it('writes a webhook and its event once: recorded again (a replayed change) it takes no number and writes nothing', async () => {
    const { recordWebhookEvent } = await import('../../src/webhooks');
    const { listEvents } = await import('../../src/events');
    const database = harness.platform.deps.database;
    const owner = { type: 'merchant' as const, id: merchant.merchant_id };
    const lastSeq = async () => (await listEvents(database, { owner, after: 0n, limit: 500 })).events.at(-1)?.seq ?? 0n;
    const before = await lastSeq();
    const webhook = { id: `WH-ONCE-${orders}`, merchant_id: merchant.merchant_id, subject_reference: 'PAYIN-ONCE', event: 'payin.expired' as const, body: '{"event":"payin.expired"}', url: 'https://merchant.example/once' };
    for (let time = 0; time < 2; time += 1) expect(await database.transaction((trx) => recordWebhookEvent(trx, webhook))).toBe(webhook.id);
    expect(await lastSeq()).toBe(before + 1n);
    const row = await database('webhook_events').where({ id: webhook.id }).first();
    expect(row).toMatchObject({ event_seq: before + 1n, callback_url: 'https://merchant.example/once', signature_header: merchant.signature_header, invoice_reference: 'PAYIN-ONCE' });
    expect(await database('events').where({ owner_id: merchant.merchant_id, subject: 'PAYIN-ONCE' }).select('seq', 'type', 'data')).toEqual([
      { seq: before + 1n, type: 'payin.expired', data: { event: 'payin.expired' } },
    ]);
    // A webhook of a merchant that does not exist is a programming error: nothing is written, no number taken.
    await expect(database.transaction((trx) => recordWebhookEvent(trx, { ...webhook, id: 'WH-NOBODY', merchant_id: 'M-NOBODY' }))).rejects.toThrow(/not found/);
    expect(await database('event_sequences').where({ owner_id: 'M-NOBODY' }).first()).toBeUndefined();
  });

  it('sends the merchant’s webhooks after a seq again, in order per payment (an operator’s redelivery, audited)', async () => {
    const payin = await createPayin('2');
    await notify(payin, 2, 'TRX-REDELIVER-1');
    await notify(payin, 1, 'TRX-REDELIVER-2');
    await harness.receiver.waitFor(() => receivedOf(payin).filter((item) => item.status === 200).length >= 2);
    const [successEvent] = await harness.platform.deps.database('events').where({ owner_id: merchant.merchant_id, subject: payin, type: 'payin.success' }).select('seq');
    const after = BigInt(successEvent.seq) - 1n;
    const before = harness.receiver.received.length;
    const answer = await harness.platform.clients.events.redeliverEvents({ merchantId: merchant.merchant_id, after });
    expect(answer.webhookIds).toEqual([`WH-${payin.replace(/^PAYIN-/, '')}-SUCCESS`, expect.stringContaining('-ADDITIONAL-')]);
    await harness.receiver.waitFor((list) => list.slice(before).filter((item) => item.status === 200).length >= 2);
    const again = harness.receiver.received.slice(before).filter((item) => item.json.data.invoice_reference === payin);
    expect(again.map((item) => item.json.event)).toEqual(['payin.success', 'payin.additional_payment']);
    const audit = await eventually(() => harness.platform.deps.database('audit_records').where({ procedure: 'payments.events.v1.EventsService/RedeliverEvents' }).first());
    expect(audit).toMatchObject({ outcome: 'ok' });
  }, 120_000);
});
