/**
 * Database round trips per business operation, counted (not timed): every statement a hot path sends costs a
 * network round trip and a share of PostgreSQL on every request, so each path has a budget that a change adding a
 * statement must raise here on purpose (an exact count: a change that saves one lowers it here too). The counts are those of a warm process (credential and party caches
 * filled by a first operation), with api, façade and worker roles in one process sharing one pool.
 */
import { createPartner, createUser } from '../../src/onboarding';
import { signRequestParameters } from '../../src/crypto/rsa2';
import { generatePartnerKeys, PartnerClient } from '../support/partner-client';
import { onboardMerchantClient } from '../support/merchant-client';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { fundUser } from '../support/wallets';

interface Statement {
  sql: string;
  /** Set for a statement inside a transaction (knex's id of it). */
  __knexTxId?: string;
}

let platform: TestPlatform;
let statements: Statement[] = [];

beforeAll(async () => {
  // The api role's event sweep numbers what no writer numbered; when it wakes between a commit and the writer's own
  // numbering it numbers that event itself, a statement of no request's: here it sweeps once, at start.
  platform = await startTestPlatform({ env: { EVENTS_SEQUENCER_INTERVAL_SECONDS: '3600' } });
  platform.deps.database.on('query', (query: Statement) => statements.push(query));
});
afterAll(() => platform.stop());

/**
 * A sweep of the payin outbox dispatcher (workflow starts and notification hand-overs), or of the event sequencer,
 * which poll every second on the same pool: their statements (and the rest of any transaction of theirs) are not the
 * operation's.
 */
const BACKGROUND = /payin_workflow_outbox|upstream_notifications|FROM events WHERE seq IS NULL LIMIT/;
/** The dispatcher's pause between sweeps when nothing wakes it (its default). */
const OUTBOX_SWEEP_MS = 1000;

/**
 * The statements `work` sent through the platform's pool, without those of background loops. The window stays open
 * past one sweep of the dispatcher, so that every run counts with a sweep inside it rather than by chance.
 */
async function counted(work: () => Promise<void>): Promise<string[]> {
  statements = [];
  await work();
  await new Promise((resolve) => setTimeout(resolve, OUTBOX_SWEEP_MS + 200));
  const background = new Set(statements.filter((statement) => BACKGROUND.test(statement.sql)).map((statement) => statement.__knexTxId));
  return statements
    .filter((statement) => !BACKGROUND.test(statement.sql) && !(statement.__knexTxId && background.has(statement.__knexTxId)))
    .map((statement) => statement.sql);
}

/** The merchant's new USD users (create_user through the façade), one per first name; their ids. */
async function createUsers(client: Awaited<ReturnType<typeof onboardMerchantClient>>['client'], names: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const name of names) {
    const created = await client.action('create_user', { email: `${name.toLowerCase()}@example.com`, first_name: name, last_name: 'Round', address: 'Phnom Penh', currency: 'USD' });
    expect(created.status).toBe(200);
    ids.push(String(created.body.data.id));
  }
  return ids;
}

it('a partner pre-transfer, created and confirmed, takes 19 statements', async () => {
  const keys = generatePartnerKeys();
  const { credentials } = await createPartner(platform.deps, { name: 'Round Trip Partner', public_key_pem: keys.publicKeyPem, float_units: 100_000n });
  const receiver = await createUser(platform.deps, { phone_number: '012777001', first_name: 'Dara', last_name: 'Sok', currency: 'USD' });
  const partner = new PartnerClient(platform.facadeUrl, credentials, keys, platform.deps.keys.publicKeyPem);
  expect((await partner.token()).status).toBe(200);
  let sequence = 0;
  const transfer = async () => {
    sequence += 1;
    const created = await partner.gateway({
      service: 'create.unified.fundTransfer', out_trade_no: `RT${sequence}${Date.now()}`, receiver_id: receiver.id, sender_name: 'Round Trip',
      amount: 1, currency: 'USD',
    });
    expect(created.body).toMatchObject({ success: true });
    const id = (created.body.data as { pre_transfer_id: string }).pre_transfer_id;
    const confirmed = await partner.gateway({ service: 'confirm.fundTransfer', pre_transfer_id: id, partner_transaction_id: `RTX${sequence}${Date.now()}` });
    expect(confirmed.body).toMatchObject({ success: true });
  };
  await transfer();
  const counted_ = await counted(transfer);
  // Off the requests' paths, after their commits: each event's numbering (docs/events.md), one statement each.
  expect(counted_.filter((sql) => sql.includes('number_owner_events'))).toHaveLength(2);
  const sent = counted_.filter((sql) => !sql.includes('number_owner_events'));
  // 15, and the partner's event with each change (pre_transfer.created, pre_transfer.confirmed: one statement each,
  // the receiver's merchant read with the row the change locks; this receiver belongs to no merchant).
  // And the request journal's row of each request, written once it is answered (src/events/requests.ts).
  expect(sent).toHaveLength(19);
  expect(sent.filter((sql) => sql.includes('INSERT INTO events'))).toHaveLength(2);
  expect(sent.filter((sql) => sql.includes('insert into "payment_requests"'))).toHaveLength(2);
  // The hold and the post join their callers' transactions directly (no savepoints).
  expect(sent.filter((sql) => /^(savepoint|release savepoint)/i.test(sql))).toEqual([]);
});

it('an Area C /do-action transfer takes 1 round trip: one statement, outside any transaction, locking the accounts and writing the posting, its event, the signed body claimed with its answer and the journal row', async () => {
  const { client, credentials } = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Round Trip Merchant');
  expect((await client.login()).status).toBe(200);
  const ids = await createUsers(client, ['One', 'Two']);
  await fundUser(platform, ids[0]!, 1_000n);
  // Each signed body moves money once (a repeat is answered from its idempotency record): a new request_id each time.
  let sequence = 0;
  const send = async () => {
    sequence += 1;
    const body = JSON.stringify(signRequestParameters({ service: 'transfer', from_user_id: ids[0], to_user_id: ids[1], amount: 0.01, currency: 'USD', request_id: `RT-${sequence}` }, credentials.private_key!));
    expect((await client.post('/do-action', {}, { raw: body })).status).toBe(200);
  };
  await send();
  const sent = await counted(send);
  // Off the request's path, after its commit: the event's numbering (docs/events.md), one statement.
  const numbering = sent.filter((sql) => sql.includes('number_owner_events'));
  expect(numbering).toHaveLength(1);
  const path = sent.filter((sql) => !numbering.includes(sql));
  expect(path).toHaveLength(1);
  const [write] = path;
  expect(write).toMatch(/FOR UPDATE/);
  for (const table of ['ledger_postings', 'INSERT INTO events', 'INSERT INTO idempotency_keys', 'INSERT INTO payment_requests']) expect(write).toContain(table);
});

it('an Area C transfer repeated (the same signed body) writes nothing in one statement and is answered by the usual steps: the first answer, one posting, one event', async () => {
  const { client, credentials, merchant } = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Round Trip Repeat Merchant');
  expect((await client.login()).status).toBe(200);
  const ids = await createUsers(client, ['Uno', 'Dos']);
  await fundUser(platform, ids[0]!, 1_000n);
  const body = JSON.stringify(signRequestParameters({ service: 'transfer', from_user_id: ids[0], to_user_id: ids[1], amount: 0.01, currency: 'USD', request_id: 'RT-REPEAT-1' }, credentials.private_key!));
  const first = await client.post('/do-action', {}, { raw: body });
  expect(first.status).toBe(200);
  const sent = await counted(async () => {
    const again = await client.post('/do-action', {}, { raw: body });
    expect([again.status, again.text]).toEqual([first.status, first.text]);
  });
  // The one statement (declined: the keys are held), then the claim that finds the first answer.
  expect(sent[0]).toContain('INSERT INTO idempotency_keys');
  expect(sent.filter((sql) => /^BEGIN/i.test(sql))).toEqual([]);
  const database = platform.deps.database;
  expect(await database('events').where({ owner_id: merchant.id, type: 'wallet_transfer.completed' })).toHaveLength(1);
  const reference = (first.body as { data: { reference: string } }).data.reference;
  expect(await database('ledger_transactions').where('description', `wallet transfer ${reference}`)).toHaveLength(1);
  const journal = await database('payment_requests').where({ owner_id: merchant.id, action: 'area-c.transfer' }).select('outcome');
  expect(journal.map((row: { outcome: string }) => row.outcome)).toEqual(['ok', 'ok']);
});

it('an Area C transfer refused under its locks writes none of the rows it would have written with its posting: no event, its refusal stored and journaled once', async () => {
  const { client, credentials, merchant } = await onboardMerchantClient(platform.deps, platform.facadeUrl, 'Round Trip Refusal Merchant');
  expect((await client.login()).status).toBe(200);
  const ids = await createUsers(client, ['Poor', 'Rich']);
  const body = JSON.stringify(signRequestParameters({ service: 'transfer', from_user_id: ids[0], to_user_id: ids[1], amount: 5, currency: 'USD', request_id: 'RT-POOR-1' }, credentials.private_key!));
  const first = await client.post('/do-action', {}, { raw: body });
  expect(first.status).not.toBe(200);
  // The same signed body again: the stored refusal, byte for byte.
  const again = await client.post('/do-action', {}, { raw: body });
  expect([again.status, again.text]).toEqual([first.status, first.text]);
  const database = platform.deps.database;
  expect(await database('events').where({ owner_id: merchant.id, type: 'wallet_transfer.completed' })).toEqual([]);
  const keys = await database('idempotency_keys').where({ scope: `merchant:${merchant.id}` }).select('state', 'error');
  expect(keys.length).toBeGreaterThan(0);
  for (const key of keys) expect(key).toMatchObject({ state: 'completed', error: expect.objectContaining({ reason: 'INSUFFICIENT_FUNDS' }) });
  const journal = await database('payment_requests').where({ owner_id: merchant.id, action: 'area-c.transfer' }).select('outcome');
  expect(journal.every((row: { outcome: string }) => row.outcome === 'INSUFFICIENT_FUNDS')).toBe(true);
});
