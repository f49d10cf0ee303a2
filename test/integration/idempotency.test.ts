/**
 * Request idempotency (src/idempotency) against real PostgreSQL: replay of the first answer, reuse with other
 * parameters, concurrent duplicates, replayed refusals, released keys after infrastructure faults, and take-over of
 * a claim whose process died.
 */
import { createDatabase, type Knex } from '../../src/db/knex';
import { reasonError } from '../../src/errors';
import { WALLET_REASONS } from '../../src/flows/wallet/contract';
import { createIdempotencyStore, fingerprintOf, type IdempotencyStore, type ResponseCodec } from '../../src/idempotency';
import { createTestDatabase } from '../support/platform';

const text: ResponseCodec<string> = {
  encode: (value) => new TextEncoder().encode(value),
  decode: (bytes) => new TextDecoder().decode(bytes),
};

describe('idempotency keys', () => {
  let drop: () => Promise<void>;
  let database: Knex;
  let store: IdempotencyStore;

  beforeAll(async () => {
    const created = await createTestDatabase();
    drop = created.drop;
    database = createDatabase(created.url, 5);
    store = createIdempotencyStore(database, { retention_seconds: 86_400, lock_seconds: 2 });
  });
  afterAll(async () => {
    await database.destroy();
    await drop();
  });

  const request = (key: string, parameters: unknown[] = ['USD', 100n]) => ({ scope: 'merchant:1', key, operation: 'test.move', parameters });

  it('runs once and replays the first answer to a repeat with the same parameters', async () => {
    let runs = 0;
    const execute = async (ownKey: string) => `moved ${++runs} under ${ownKey}`;
    const first = await store.run(request('k-replay'), text, execute);
    const second = await store.run(request('k-replay'), text, execute);
    expect(first).toBe('moved 1 under merchant:1:k-replay');
    expect(second).toBe(first);
    expect(runs).toBe(1);
  });

  it('refuses the same key with other parameters or another operation', async () => {
    await store.run(request('k-reuse'), text, async () => 'ok');
    await expect(store.run(request('k-reuse', ['USD', 101n]), text, async () => 'other')).rejects.toMatchObject({
      reason: 'IDEMPOTENCY_KEY_REUSED',
    });
    await expect(
      store.run({ ...request('k-reuse'), operation: 'test.other' }, text, async () => 'other'),
    ).rejects.toMatchObject({ reason: 'IDEMPOTENCY_KEY_REUSED' });
  });

  it('answers a concurrent duplicate "in progress" and runs the operation once', async () => {
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = store.run(request('k-concurrent'), text, async () => {
      runs += 1;
      await gate;
      return 'done';
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await expect(store.run(request('k-concurrent'), text, async () => `${++runs}`)).rejects.toMatchObject({
      reason: 'IDEMPOTENCY_KEY_IN_PROGRESS',
    });
    release();
    await expect(first).resolves.toBe('done');
    await expect(store.run(request('k-concurrent'), text, async () => `${++runs}`)).resolves.toBe('done');
    expect(runs).toBe(1);
  });

  it('replays a business refusal and releases the key after an infrastructure fault', async () => {
    const refusal = reasonError(WALLET_REASONS, 'INSUFFICIENT_FUNDS', 'insufficient funds', { amount: ['too much'] });
    await expect(store.run(request('k-refused'), text, async () => Promise.reject(refusal))).rejects.toBe(refusal);
    await expect(store.run(request('k-refused'), text, async () => 'later')).rejects.toMatchObject({
      reason: 'INSUFFICIENT_FUNDS',
      kind: 'failed_precondition',
      fields: { amount: ['too much'] },
    });

    // The replay raises the stored reason with its stored kind (request idempotency knows no flow's reason table);
    // a record whose kind is no DomainError kind answers INTERNAL.
    await database('idempotency_keys')
      .where({ key: 'k-refused' })
      .update({ error: JSON.stringify({ reason: 'SOME_FLOW_REASON', kind: 'not_found', message: 'gone', fields: {} }) });
    await expect(store.run(request('k-refused'), text, async () => 'later')).rejects.toMatchObject({ reason: 'SOME_FLOW_REASON', kind: 'not_found' });
    await database('idempotency_keys')
      .where({ key: 'k-refused' })
      .update({ error: JSON.stringify({ reason: 'SOME_FLOW_REASON', kind: 'made_up', message: 'gone', fields: {} }) });
    await expect(store.run(request('k-refused'), text, async () => 'later')).rejects.toMatchObject({ reason: 'INTERNAL', kind: 'internal' });

    await expect(store.run(request('k-fault'), text, async () => Promise.reject(new Error('connection reset')))).rejects.toThrow('connection reset');
    await expect(store.run(request('k-fault'), text, async () => 'retried')).resolves.toBe('retried');
  });

  it('lets a retry take over a claim whose process died, once the claim is stale', async () => {
    await database('idempotency_keys').insert({
      scope: 'merchant:1',
      key: 'k-stale',
      operation: 'test.move',
      fingerprint: fingerprintOf(['USD', 100n]),
      state: 'running',
      locked_until: database.raw(`now() - interval '1 second'`),
      expires_at: database.raw(`now() + interval '1 day'`),
    });
    await expect(store.run(request('k-stale'), text, async (ownKey) => `resumed ${ownKey}`)).resolves.toBe('resumed merchant:1:k-stale');
  });

  it('refuses keys that are empty, too long or not visible ASCII', async () => {
    for (const key of ['', 'x'.repeat(256), 'has space', 'nul\u0000', 'é']) {
      await expect(store.run(request(key), text, async () => 'never')).rejects.toMatchObject({ reason: 'IDEMPOTENCY_KEY_INVALID' });
    }
    await expect(store.run(request('x'.repeat(255)), text, async () => 'longest')).resolves.toBe('longest');
  });
});
