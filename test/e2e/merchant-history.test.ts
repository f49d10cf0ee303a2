/**
 * Area C's read-only history services over HTTP (docs/area-c.md "Events and timeline"): `list_events` (the
 * EventsService with the signed /do-action as the owner's proof) and `list_timeline` (the TimelineService). Each
 * answers the merchant its proof names, never another's; bad parameters are Area C's field errors; an unsigned or
 * badly signed call is refused before anything is read. Real PostgreSQL, Temporal, RPC and façade.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { createPrivateKey } from 'node:crypto';
import { signRequestParameters } from '../../src/crypto/rsa2';
import { createPlatformClients } from '../../src/rpc/clients';
import { createServiceCredential } from '../../src/service-credentials';
import { MerchantClient, onboardMerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { fundUser } from '../support/wallets';

const BAD_REQUEST = { success: false, code: 400, message: 'Bad Request' };
const NOT_FOUND = { ...BAD_REQUEST, error: { reference: ['The selected reference is invalid.'] } };

let phoneCounter = 10_700_000;
function nextPhone(): string {
  phoneCounter += 1;
  return `012${String(phoneCounter).slice(-6)}`;
}

async function createUser(client: MerchantClient): Promise<number> {
  const response = await client.action('create_user', { phone_number: nextPhone(), first_name: 'Sok', last_name: 'Dara', address: 'Phnom Penh', currency: 'USD' });
  expect(response.status).toBe(200);
  return response.body.data.id as number;
}

describe('Area C list_events and list_timeline', () => {
  let platform: TestPlatform;
  let merchant: MerchantClient;
  let other: MerchantClient;
  /** The references of `merchant`'s two transfers, in order. */
  let reference: string;
  let secondReference: string;

  beforeAll(async () => {
    platform = await startTestPlatform();
    merchant = (await onboardMerchantClient(platform.deps, platform.facadeUrl, 'History Mart')).client;
    other = (await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Other History')).client;
    expect((await merchant.login()).status).toBe(200);
    expect((await other.login()).status).toBe(200);
    const from = await createUser(merchant);
    const to = await createUser(merchant);
    await fundUser(platform, from, 5_000n);
    const transfer = await merchant.action('transfer', { from_user_id: from, to_user_id: to, amount: 12.34, currency: 'USD' });
    expect(transfer.status).toBe(200);
    reference = transfer.body.data.reference;
    const second = await merchant.action('transfer', { from_user_id: from, to_user_id: to, amount: 1, currency: 'USD' });
    expect(second.status).toBe(200);
    secondReference = second.body.data.reference;
  });
  afterAll(() => platform.stop());

  describe('list_events', () => {
    it("answers the merchant's own events, filtered and paged by seq", async () => {
      const response = await merchant.action('list_events', { subject: reference });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ success: true, code: 200, message: 'OK' });
      const { events, has_more, next_after } = response.body.data;
      expect(events).toEqual([
        {
          seq: expect.any(Number),
          type: 'wallet_transfer.completed',
          subject: reference,
          created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          ledger_transaction_id: expect.any(String),
          data: expect.objectContaining({ reference, amount_units: '1234', currency: 'USD' }),
        },
      ]);
      expect(has_more).toBe(false);
      expect(next_after).toBe(events[0].seq);

      // Paging: one event per page, the next page after the first's seq.
      const first = await merchant.action('list_events', { limit: 1 });
      expect(first.status).toBe(200);
      expect(first.body.data.events.map((event: { subject: string }) => event.subject)).toEqual([reference]);
      expect(first.body.data.has_more).toBe(true);
      expect(first.body.data.next_after).toBe(first.body.data.events[0].seq);
      const second = await merchant.action('list_events', { after: String(first.body.data.next_after), limit: '1' });
      expect(second.status).toBe(200);
      expect(second.body.data.events.map((event: { subject: string }) => event.subject)).toEqual([secondReference]);
      expect(second.body.data.events[0].seq).toBeGreaterThan(first.body.data.events[0].seq);

      // A type filter answers only that type.
      const typed = await merchant.action('list_events', { type: 'wallet_transfer.completed' });
      expect(typed.body.data.events.map((event: { subject: string }) => event.subject)).toEqual([reference, secondReference]);
      const none = await merchant.action('list_events', { type: 'blocked_money.blocked' });
      expect(none.body.data).toEqual({ events: [], has_more: false, next_after: 0 });
    });

    it("never answers another merchant's events, whatever subject it names", async () => {
      const response = await other.action('list_events', { subject: reference });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({ events: [], has_more: false, next_after: 0 });
      const all = await other.action('list_events', { limit: 500 });
      expect(all.body.data.events.filter((event: { subject: string }) => event.subject === reference)).toEqual([]);
    });

    it("refuses bad parameters with Area C's field errors", async () => {
      const response = await merchant.action('list_events', { after: -1, limit: 0, subject: 'x'.repeat(129) });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject(BAD_REQUEST);
      expect(Object.keys(response.body.error).sort()).toEqual(['after', 'limit', 'subject']);
      const tooMany = await merchant.action('list_events', { limit: 501, after: 'abc' });
      expect(tooMany.status).toBe(400);
      expect(Object.keys(tooMany.body.error).sort()).toEqual(['after', 'limit']);
      // An unknown event type: the EventsService's refusal, in Area C's words.
      const unknownType = await merchant.action('list_events', { type: 'no.such_type' });
      expect(unknownType.status).toBe(400);
      expect(unknownType.body).toEqual({ ...BAD_REQUEST, error: { type: ['The type is invalid.'] } });
    });
  });

  describe('list_timeline', () => {
    it("answers one of the merchant's payments, its event among the entries", async () => {
      const response = await merchant.action('list_timeline', { reference });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ success: true, code: 200, message: 'OK' });
      const data = response.body.data;
      expect(data.reference).toBe(reference);
      expect(data.entries).toContainEqual(expect.objectContaining({ source: 'event', kind: 'wallet_transfer.completed' }));
      expect(JSON.stringify(data)).not.toContain(secondReference);
      expect(Array.isArray(data.sources)).toBe(true);
      expect(Array.isArray(data.truncated)).toBe(true);
    });

    it("answers another merchant's reference and an unknown one with the same not-found error", async () => {
      const foreign = await other.action('list_timeline', { reference });
      expect(foreign.status).toBe(400);
      expect(foreign.body).toEqual(NOT_FOUND);
      const unknown = await merchant.action('list_timeline', { reference: 'TRFNOSUCHREFERENCE0000' });
      expect(unknown.status).toBe(400);
      expect(unknown.body).toEqual(NOT_FOUND);
    });

    it("refuses bad parameters with Area C's field errors", async () => {
      const missing = await merchant.action('list_timeline', {});
      expect(missing.status).toBe(400);
      expect(missing.body).toMatchObject(BAD_REQUEST);
      expect(Object.keys(missing.body.error)).toEqual(['reference']);
      const bad = await merchant.action('list_timeline', { reference: 'r'.repeat(129), max_per_source: 0 });
      expect(bad.status).toBe(400);
      expect(Object.keys(bad.body.error).sort()).toEqual(['max_per_source', 'reference']);
    });
  });

  describe('the signed proof', () => {
    it('refuses an unsigned call and a body changed after signing, answering nothing', async () => {
      for (const service of ['list_events', 'list_timeline']) {
        const unsigned = await merchant.action(service, { reference, subject: reference }, { sign: false });
        expect(unsigned.status).toBe(400);
        expect(unsigned.body.error).toHaveProperty('sign');
        expect(unsigned.text).not.toContain('wallet_transfer.completed');
      }
      // Signed by the other merchant's session for its own subject, then pointed at this merchant's payment.
      const signed = signRequestParameters({ service: 'list_timeline', reference: 'TRFOTHER' }, createKey(other));
      const tampered = await other.post('/do-action', {}, { raw: JSON.stringify({ ...signed, reference }) });
      expect(tampered.status).toBe(400);
      expect(tampered.body).toMatchObject(BAD_REQUEST);
      expect(tampered.body.error).toHaveProperty('sign');
      expect(tampered.text).not.toContain('wallet_transfer.completed');
      // Signed with another merchant's key under this merchant's headers and session.
      const foreignKey = signRequestParameters({ service: 'list_events', subject: reference }, createKey(other));
      const wrongKey = await merchant.post('/do-action', {}, { raw: JSON.stringify(foreignKey) });
      expect(wrongKey.status).toBe(400);
      expect(wrongKey.body.error).toHaveProperty('sign');
    });

    it('binds the typed request to the signed body at the api: a captured proof reads nothing else', async () => {
      // A caller holding the façade's credential and one captured signed call of the merchant (as the façade forwards it).
      const { token } = await createServiceCredential(platform.deps.database, { name: 'stolen facade', scopes: ['facade'] });
      const facade = createPlatformClients(platform.rpcUrl, { credentials: { token, tls: platform.rpcTls } });
      const captured = (body: Record<string, unknown>) => ({
        envelope: { merchantId: merchant.options.merchantId, merchantSecretKey: merchant.options.merchantSecretKey, body: JSON.stringify(signRequestParameters(body, createKey(merchant))) },
        sessionToken: merchant.token,
      });
      const refused = async (call: Promise<unknown>) => {
        const error = await call.then(() => undefined, (caught: unknown) => caught);
        expect(error).toBeInstanceOf(ConnectError);
        expect((error as ConnectError).code).toBe(Code.InvalidArgument);
      };
      const eventsProof = captured({ service: 'list_events', subject: secondReference, limit: 1 });
      const asSigned = { after: 0n, limit: 1, type: '', subject: secondReference };
      const answered = await facade.events.listEvents({ proof: { proof: { case: 'areaC', value: eventsProof } }, query: asSigned });
      expect(answered.page?.events.map((event) => event.subject)).toEqual([secondReference]);
      await refused(facade.events.listEvents({ proof: { proof: { case: 'areaC', value: eventsProof } }, query: { ...asSigned, subject: reference } }));
      await refused(facade.events.listEvents({ proof: { proof: { case: 'areaC', value: eventsProof } }, query: { ...asSigned, limit: 500 } }));
      // The proof of another service.
      await refused(facade.events.listEvents({ proof: { proof: { case: 'areaC', value: captured({ service: 'list_fees' }) } }, query: { limit: 100 } }));

      const timelineProof = captured({ service: 'list_timeline', reference: secondReference });
      const timeline = await facade.timeline.getPaymentTimeline({ reference: secondReference, proof: { proof: { case: 'areaC', value: timelineProof } } });
      expect(timeline.reference).toBe(secondReference);
      await refused(facade.timeline.getPaymentTimeline({ reference, proof: { proof: { case: 'areaC', value: timelineProof } } }));
      await refused(facade.timeline.getPaymentTimeline({ reference: secondReference, maxPerSource: 1000, proof: { proof: { case: 'areaC', value: timelineProof } } }));
      await refused(facade.timeline.getPaymentTimeline({ reference: secondReference, proof: { proof: { case: 'areaC', value: eventsProof } } }));
    });

    it('refuses a call without the session token', async () => {
      const anonymous = new MerchantClient(merchant.options);
      const response = await anonymous.action('list_events', { subject: reference });
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({ success: false, code: 401, message: 'Unauthorized' });
      expect(response.text).not.toContain('wallet_transfer.completed');
    });
  });
});

/** The merchant's private key, as its own client signs with it. */
function createKey(client: MerchantClient) {
  return createPrivateKey(client.options.privateKeyPem);
}
