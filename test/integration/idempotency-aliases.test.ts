/**
 * A request named by several keys (src/idempotency `aliases`) against real PostgreSQL: a signed body, its signed
 * request_id and a client's Idempotency-Key. Whichever of them comes again answers the first answer; a new key on a
 * repeat answers it too from then on; a key only narrows (other parameters under it are refused on its own field);
 * concurrent repeats run once; a fault releases every key.
 */
import { createDatabase, type Knex } from '../../src/db/knex';
import { reasonError } from '../../src/errors';
import { WALLET_REASONS } from '../../src/flows/wallet/contract';
import { createIdempotencyStore, type IdempotencyStore, type ResponseCodec } from '../../src/idempotency';
import { createTestDatabase } from '../support/platform';

const text: ResponseCodec<string> = {
  encode: (value) => new TextEncoder().encode(value),
  decode: (bytes) => new TextDecoder().decode(bytes),
};

describe('idempotency keys with aliases', () => {
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

  /** A signed body (own key), optionally led by a request_id, with an optional Idempotency-Key header. */
  function request(body: string, options: { requestId?: string; header?: string; parameters?: unknown[] } = {}) {
    const signed = { key: `signed-body:${body}`, field: 'sign' };
    const header = options.header ? [{ key: options.header, field: 'Idempotency-Key' }] : [];
    const own = options.requestId ? { key: options.requestId, keyField: 'request_id', aliases: [signed, ...header] } : { key: signed.key, keyField: 'sign', aliases: header };
    return { scope: 'merchant:9', operation: 'test.move', parameters: options.parameters ?? ['USD', 100n], ...own };
  }

  const keysOf = async () => (await database('idempotency_keys').where({ scope: 'merchant:9' }).select('key', 'state')) as Array<{ key: string; state: string }>;

  it('answers a signed body sent again with three fresh headers with its first answer, and records each header', async () => {
    let runs = 0;
    const execute = async (ownKey: string) => `moved ${++runs} under ${ownKey}`;
    const first = await store.run(request('body-1', { header: 'h-original' }), text, execute);
    for (const header of ['h-1', 'h-2', 'h-3']) expect(await store.run(request('body-1', { header }), text, execute)).toBe(first);
    expect(await store.run(request('body-1'), text, execute)).toBe(first);
    expect(runs).toBe(1);
    expect(first).toBe('moved 1 under merchant:9:signed-body:body-1');
    const keys = await keysOf();
    for (const key of ['signed-body:body-1', 'h-original', 'h-1', 'h-2', 'h-3']) expect(keys).toContainEqual({ key, state: 'completed' });
    // A header recorded on a repeat answers the same from then on, even with another body of the same parameters.
    expect(await store.run(request('body-1-other-bytes', { header: 'h-2' }), text, execute)).toBe(first);
  });

  it('answers another body with the same signed request_id and parameters with the first answer (a CVV encrypted anew)', async () => {
    let runs = 0;
    const execute = async () => `deposit ${++runs}`;
    const first = await store.run(request('cvv-a', { requestId: 'REQ-1' }), text, execute);
    expect(await store.run(request('cvv-b', { requestId: 'REQ-1' }), text, execute)).toBe(first);
    expect(runs).toBe(1);
  });

  it('refuses a key with other parameters on the key’s own field, and claims none of the request’s new keys', async () => {
    await store.run(request('narrow-1', { header: 'h-narrow' }), text, async () => 'one');
    await expect(store.run(request('narrow-2', { header: 'h-narrow', parameters: ['USD', 200n] }), text, async () => 'two')).rejects.toMatchObject({
      reason: 'IDEMPOTENCY_KEY_REUSED',
      fields: { 'Idempotency-Key': ['was already used with other parameters'] },
    });
    await store.run(request('narrow-3', { requestId: 'REQ-NARROW' }), text, async () => 'three');
    await expect(store.run(request('narrow-4', { requestId: 'REQ-NARROW', parameters: ['USD', 300n] }), text, async () => 'four')).rejects.toMatchObject({
      fields: { request_id: ['was already used with other parameters'] },
    });
    const keys = (await keysOf()).map((row) => row.key);
    expect(keys).not.toContain('signed-body:narrow-2');
    expect(keys).not.toContain('signed-body:narrow-4');
  });

  it('runs concurrent repeats of one body once (the others answer the first answer or that it is running)', async () => {
    let runs = 0;
    const execute = async () => {
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 100));
      return 'once';
    };
    const answers = await Promise.allSettled(
      ['c-1', 'c-2', 'c-3', 'c-4', 'c-5'].map((header) => store.run(request('concurrent', { header }), text, execute)),
    );
    expect(runs).toBe(1);
    for (const answer of answers) {
      if (answer.status === 'fulfilled') expect(answer.value).toBe('once');
      else expect(answer.reason).toMatchObject({ reason: 'IDEMPOTENCY_KEY_IN_PROGRESS' });
    }
    expect(await store.run(request('concurrent', { header: 'c-6' }), text, execute)).toBe('once');
  });

  it('replays a business refusal under every key, and releases every key after a fault', async () => {
    const refusal = reasonError(WALLET_REASONS, 'INSUFFICIENT_FUNDS', 'insufficient funds', { amount: ['insufficient_funds'] });
    await expect(store.run(request('refused', { requestId: 'REQ-REFUSED' }), text, async () => Promise.reject(refusal))).rejects.toBe(refusal);
    await expect(store.run(request('refused', { header: 'h-after', requestId: 'REQ-REFUSED' }), text, async () => 'moved')).rejects.toMatchObject({ reason: 'INSUFFICIENT_FUNDS' });

    await expect(store.run(request('fault', { requestId: 'REQ-FAULT', header: 'h-fault' }), text, async () => Promise.reject(new Error('database gone')))).rejects.toThrow('database gone');
    expect((await keysOf()).map((row) => row.key)).not.toEqual(expect.arrayContaining(['REQ-FAULT']));
    expect(await store.run(request('fault', { requestId: 'REQ-FAULT', header: 'h-fault' }), text, async () => 'retried')).toBe('retried');
  });
});
