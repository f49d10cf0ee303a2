/**
 * The event stream over HTTP (docs/events.md), against real PostgreSQL, Temporal, RPC and façade: one merchant's
 * `GET /api/v1/events?after=0` numbers its events 1, 2, 3 … with no gap across all three areas' flows (a payin, a
 * wallet transfer and a deposit of its users, a partner's pre-transfer to one of its users); paging with next_after
 * sees each event once; another merchant's events never appear; the partner's own pre-transfer events are in its
 * stream (read through the operators' RPC). The owner is the API key's merchant whatever the query says; bad
 * parameters are 422 in the Area B envelope for a valid key, 401 without one; the operators' calls need the admin
 * scope.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { createMerchant, createPartner } from '../../src/onboarding';
import { createPlatformClients } from '../../src/rpc/clients';
import { createServiceCredential } from '../../src/service-credentials';
import { newUser, tokenizeLocalCard } from '../support/deposit-setup';
import { MerchantClient } from '../support/merchant-client';
import { generatePartnerKeys, PartnerClient } from '../support/partner-client';
import { eventually, post, startPayinHarness, type PayinHarness } from '../support/payin-setup';
import { fundUser } from '../support/wallets';

interface ApiEvent {
  seq: number;
  type: string;
  subject: string;
  created_at: string;
  ledger_transaction_id: string | null;
  data: Record<string, unknown>;
}

describe('GET /api/v1/events', () => {
  let harness: PayinHarness;
  let apiKey: string;
  let merchantId: string;
  let otherKey: string;
  let partnerId: string;
  const subjects: Record<string, string> = {};

  const events = async (query: string, key = apiKey) => {
    const response = await fetch(`${harness.platform.facadeUrl}/api/v1/events?${query}`, { headers: { 'X-API-Key': key } });
    return { status: response.status, json: (await response.json()) as { success: boolean; data: { events: ApiEvent[]; has_more: boolean; next_after: number }; message?: string; errors?: Record<string, string[]> } };
  };
  const allEvents = async (key = apiKey, limit = 500): Promise<ApiEvent[]> => {
    const seen: ApiEvent[] = [];
    let after = 0;
    for (;;) {
      const page = await events(`after=${after}&limit=${limit}`, key);
      expect(page.status).toBe(200);
      seen.push(...page.json.data.events);
      expect(page.json.data.next_after).toBe(page.json.data.events.at(-1)?.seq ?? after);
      after = page.json.data.next_after;
      if (!page.json.data.has_more) return seen;
    }
  };

  beforeAll(async () => {
    harness = await startPayinHarness();
    const { platform } = harness;
    // The merchant: an Area B payin, and Area C users with a transfer and a deposit.
    const { merchant, credentials: secrets } = await createMerchant(platform.deps, { name: 'Events merchant', callback_url: harness.receiver.url });
    harness.receiver.configure({ hmac_secret: secrets.hmac_secret, signature_header: secrets.signature_header });
    merchantId = merchant.id;
    apiKey = secrets.api_key;
    const client = new MerchantClient({
      baseUrl: platform.facadeUrl,
      merchantId,
      merchantSecretKey: secrets.merchant_secret_key,
      privateKeyPem: secrets.private_key!,
      userName: secrets.api_user_name,
      password: secrets.api_password,
    });
    expect((await client.login()).status).toBe(200);

    const payin = await post(platform.facadeUrl, '/api/v1/payins', '{"amount": 2.5, "out_trade_no": "EVENTS-1"}', { 'X-API-Key': apiKey });
    expect(payin.status).toBe(200);
    subjects.payin = payin.json.data.invoice_reference;
    expect((await harness.sandbox.pay(subjects.payin, '2.5')).status).toBe(200);
    await eventually(async () => (await platform.deps.database('payins').where({ invoice_reference: subjects.payin }).first())?.status === 'success');

    const from = await newUser(client, 'Sender');
    const to = await newUser(client, 'Receiver');
    await fundUser(platform, from.id, 10_000n);
    const transfer = await client.action('transfer', { from_user_id: from.id, to_user_id: to.id, amount: 12.34, currency: 'USD' });
    expect(transfer.status).toBe(200);
    subjects.transfer = transfer.body.data.reference;

    const card = await tokenizeLocalCard(platform, client, from.id);
    const deposit = await client.action('deposit_by_local_card', { token: card, amount: 5, currency: 'USD' });
    expect(deposit.status).toBe(200);
    subjects.deposit = deposit.body.data.reference;
    const confirmed = await client.action('confirm_payments', { user_id: from.id, token: deposit.body.data.token, password: '123456' });
    expect(confirmed.status).toBe(200);

    // A partner sends money to one of the merchant's users (Area A).
    const keys = generatePartnerKeys();
    const { partner, credentials } = await createPartner(platform.deps, { name: 'Events partner', public_key_pem: keys.publicKeyPem, float_units: 100_000n });
    partnerId = partner.id;
    const partnerClient = new PartnerClient(platform.facadeUrl, credentials, keys, platform.deps.keys.publicKeyPem);
    expect((await partnerClient.token()).status).toBe(200);
    const created = await partnerClient.gateway({ service: 'create.unified.fundTransfer', out_trade_no: 'EVENTSPT1', receiver_id: String(to.id), sender_name: 'Chan Vanna', amount: 3, currency: 'USD' });
    expect(created.status).toBe(200);
    subjects.preTransfer = (created.body.data as { pre_transfer_id: string }).pre_transfer_id;
    const confirm = await partnerClient.gateway({ service: 'confirm.fundTransfer', pre_transfer_id: subjects.preTransfer, partner_transaction_id: 'EVENTSPTX1' });
    expect(confirm.status).toBe(200);

    // Another merchant with a payin of its own.
    const other = await createMerchant(platform.deps, { name: 'Other merchant', callback_url: harness.receiver.url });
    otherKey = other.credentials.api_key;
    const otherPayin = await post(platform.facadeUrl, '/api/v1/payins', '{"amount": 1, "out_trade_no": "EVENTS-OTHER"}', { 'X-API-Key': otherKey });
    subjects.otherPayin = otherPayin.json.data.invoice_reference;
  }, 180_000);
  afterAll(() => harness.stop());

  it('numbers the merchant’s events 1, 2, 3 … with no gap across the three areas’ flows', async () => {
    const seen = await allEvents();
    expect(seen.map((event) => event.seq)).toEqual(seen.map((_, index) => index + 1));
    const typesOf = (subject: string) => seen.filter((event) => event.subject === subject).map((event) => event.type);
    expect(typesOf(subjects.payin!)).toEqual(['payin.created', 'payin.success']);
    expect(typesOf(subjects.transfer!)).toEqual(['wallet_transfer.completed']);
    expect(typesOf(subjects.deposit!)).toEqual(['deposit.created', 'deposit.completed']);
    expect(typesOf(subjects.preTransfer!)).toEqual(['pre_transfer.created', 'pre_transfer.confirmed']);
    // Money moved: the event names its ledger transaction, found again under the flow's reference.
    const settled = seen.find((event) => event.type === 'payin.success')!;
    expect(settled.data).toMatchObject({ invoice_reference: subjects.payin, paid_amount_units: '2500000', payment_match_status: 'exact', currency: 'USDT' });
    const keys = await harness.platform.deps.database('ledger_transactions').where({ id: settled.ledger_transaction_id }).first('idempotency_key');
    expect(keys.idempotency_key).toBe(`${subjects.payin}:settle`);
    // The merchant's copy of the partner's pre-transfer leaves out what only the partner knows.
    const arrived = seen.find((event) => event.type === 'pre_transfer.confirmed')!;
    expect(arrived.data).toMatchObject({ pre_transfer_id: subjects.preTransfer, amount_units: '300', currency: 'USD', state: 'confirmed' });
    expect(arrived.data).not.toHaveProperty('out_trade_no');
    expect(arrived.data).not.toHaveProperty('partner_transaction_id');
  });

  it('pages with next_after: each event once, in seq order, the same as one page', async () => {
    const whole = await allEvents();
    const paged = await allEvents(apiKey, 2);
    expect(paged).toEqual(whole);
    const tail = await events(`after=${whole.length}`);
    expect(tail.json.data).toEqual({ events: [], has_more: false, next_after: whole.length });
    const filtered = await events(`after=0&type=deposit.completed`);
    expect(filtered.json.data.events.map((event) => event.subject)).toEqual([subjects.deposit]);
    const bySubject = await events(`after=0&subject=${subjects.payin}`);
    expect(bySubject.json.data.events.map((event) => event.type)).toEqual(['payin.created', 'payin.success']);
  });

  it('never shows another merchant’s events, whatever the query names', async () => {
    const mine = await allEvents();
    expect(mine.some((event) => event.subject === subjects.otherPayin)).toBe(false);
    // Parameters naming another owner are no proof: the key's merchant is the owner.
    const forged = await events(`after=0&merchant_id=${encodeURIComponent('other')}&owner=other&subject=${subjects.otherPayin}`);
    expect(forged.json.data.events).toEqual([]);
    const theirs = await allEvents(otherKey);
    expect(theirs.map((event) => [event.seq, event.subject])).toEqual([[1, subjects.otherPayin]]);
  });

  it('keeps the partner’s own pre-transfer events in its stream (operators’ RPC, admin scope)', async () => {
    const { page } = await harness.platform.clients.events.listOwnerEvents({ owner: { owner: { case: 'partnerId', value: partnerId } }, query: { after: 0n, limit: 500 } });
    expect(page!.events.map((event) => [event.seq, event.type, event.subject])).toEqual([
      [1n, 'pre_transfer.created', subjects.preTransfer],
      [2n, 'pre_transfer.confirmed', subjects.preTransfer],
    ]);
    expect(JSON.parse(page!.events[1]!.dataJson)).toMatchObject({ out_trade_no: 'EVENTSPT1', partner_transaction_id: 'EVENTSPTX1', state: 'confirmed' });
    expect(page!.events[1]!.ledgerTransactionId).not.toBe('');
  });

  it('answers bad parameters 422 in the Area B envelope for a valid key, 401 without one, changing nothing', async () => {
    expect(await events('after=-1')).toEqual({ status: 422, json: { success: false, message: 'Validation errors', errors: { after: ['The after must be at least 0.'] } } });
    expect(await events('after=1.5&limit=501')).toEqual({
      status: 422,
      json: { success: false, message: 'Validation errors', errors: { after: ['The after must be an integer.'], limit: ['The limit must not be greater than 500.'] } },
    });
    expect(await events('limit=0')).toEqual({ status: 422, json: { success: false, message: 'Validation errors', errors: { limit: ['The limit must be at least 1.'] } } });
    expect(await events('type=payin.nothing')).toEqual({ status: 422, json: { success: false, message: 'Validation errors', errors: { type: ['The selected type is invalid.'] } } });
    expect(await events(`subject=${'S'.repeat(129)}`)).toEqual({
      status: 422,
      json: { success: false, message: 'Validation errors', errors: { subject: ['The subject must not be greater than 128 characters.'] } },
    });
    expect(await events('after=0&after=1')).toMatchObject({ status: 422, json: { errors: { after: ['The after must be an integer.'] } } });
    const unauthenticated = { status: 401, json: { success: false, message: 'Unauthenticated. Please provide valid credentials.', errors: null } };
    expect(await events('after=-1', 'not-a-key')).toEqual(unauthenticated);
    expect(await events('type=payin.nothing', 'not-a-key')).toEqual(unauthenticated);
    expect(await events('after=0', '')).toEqual(unauthenticated);
  });

  it('refuses the operators’ calls and a proofless ListEvents to the façade’s credential', async () => {
    const facade = await createServiceCredential(harness.platform.deps.database, { name: 'events facade', scopes: ['facade'] });
    const client = createPlatformClients(harness.platform.rpcUrl, { credentials: { token: facade.token, tls: harness.platform.rpcTls } }).events;
    const code = (call: Promise<unknown>) => call.then(() => 'ok', (error: unknown) => Code[ConnectError.from(error).code]);
    expect(await code(client.listOwnerEvents({ owner: { owner: { case: 'merchantId', value: merchantId } }, query: { after: 0n, limit: 10 } }))).toBe('PermissionDenied');
    expect(await code(client.redeliverEvents({ merchantId, after: 0n }))).toBe('PermissionDenied');
    expect(await code(client.listEvents({ query: { after: 0n, limit: 10 } }))).toBe('InvalidArgument');
    expect(await code(client.listEvents({ proof: {}, query: { after: 0n, limit: 10 } }))).toBe('Unauthenticated');
    expect(await code(client.listEvents({ proof: { proof: { case: 'apiKey', value: apiKey } }, query: { after: 0n, limit: 10 } }))).toBe('ok');
  });
});
