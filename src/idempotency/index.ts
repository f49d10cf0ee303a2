/**
 * Request idempotency for money-moving operations, with Stripe's semantics (docs/idempotency.md):
 *
 * - A request names itself with one key or more (1–255 visible ASCII characters each), scoped to their owner (a
 *   merchant) and kept at least `retention_seconds` (24 h by default): its own `key` (a client's Idempotency-Key, a
 *   signed request_id, or the identity of a signed body) and `aliases`, further keys naming the same request (e.g.
 *   the signed body beside its request_id, and a client's Idempotency-Key beside a signed body).
 * - A request any of whose keys answered before with the same parameters (same operation, same fingerprint) → that
 *   first answer, replayed: the stored protobuf bytes of the RPC response, so the façade renders the same envelope
 *   byte for byte; or the first business refusal (a `DomainError`), raised again. The first key found in the
 *   request's order wins, and every new key of the repeat is recorded with the same answer.
 * - A key used before with other parameters, or for another operation → `IDEMPOTENCY_KEY_REUSED` on that key's field.
 * - A repeat while the first request is still running → `IDEMPOTENCY_KEY_IN_PROGRESS` (retry later).
 * - An infrastructure failure (anything but a DomainError) releases the keys, so a retry runs again.
 *
 * Crash safety: a claim whose process died stays `running` until `locked_until` (the request deadline plus a
 * margin), then a retry takes it over and runs the operation again. Every operation therefore derives its own
 * downstream idempotency (ledger idempotency key, workflow id) from `ownKey` (scope + its own key), so a re-run after
 * a crash finds the money already moved instead of moving it twice.
 */
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { randomAlphanumeric } from '../crypto/secrets';
import { COMMON_REASONS, DOMAIN_ERROR_KINDS, DomainError, reasonError, type DomainErrorKind, type FieldViolations } from '../errors';
import type { MerchantAct } from '../merchant-auth/types';
import { IDEMPOTENCY_REASONS } from './reasons';

export * from './reasons';



/** Longest key accepted (Stripe's limit). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

export interface IdempotencyOptions {
  /** How long a completed key answers repeats, in seconds (at least 24 h in production). */
  retention_seconds: number;
  /** How long a running claim is honoured before a retry may take it over, in seconds. */
  lock_seconds: number;
}

export interface IdempotentRequest {
  /** Who owns the key, e.g. `merchant:42`. */
  scope: string;
  /** The request's own key (a client's Idempotency-Key): `ownKey` derives from it. */
  key: string;
  /** The field `key` came from, named by its errors (default `Idempotency-Key`). */
  keyField?: string;
  /** Further keys naming the same request, after `key` in precedence, each with the field named by its errors. */
  aliases?: ReadonlyArray<{ key: string; field: string }>;
  /** What the request does, e.g. `area-c.transfer`: a key is bound to one operation. */
  operation: string;
  /** The request's parameters in a stable order (see `fingerprintOf`). */
  parameters: unknown[];
}

/** Encodes a response for storage and decodes it on replay (e.g. protobuf `toBinary` / `fromBinary`). */
export interface ResponseCodec<T> {
  encode(value: T): Uint8Array;
  decode(bytes: Uint8Array): T;
}

interface KeyRow {
  scope: string;
  key: string;
  operation: string;
  fingerprint: string;
  state: 'running' | 'completed';
  response: Buffer | null;
  /** The first run's refusal, with the kind its reason's table gave it: a replay raises the same. */
  error: { reason: string; kind: DomainErrorKind; message: string; fields: FieldViolations } | null;
  locked_until: Date;
  expires_at: Date;
}

/** A codec storing an RPC response as its protobuf bytes (what the façade renders again, byte for byte). */
export function protoCodec<Desc extends DescMessage>(schema: Desc): ResponseCodec<MessageShape<Desc>> {
  return {
    encode: (value) => toBinary(schema, value),
    decode: (bytes) => fromBinary(schema, bytes),
  };
}

/**
 * The completion of a request's claims as a common table expression for the caller's own transaction (one round
 * trip fewer): `part(answer)` returns `idempotency_completed AS (UPDATE …)` storing `answer` on every key the run
 * claimed, with its `?` bindings; a run whose caller took the part stores nothing after `execute` returns (its
 * transaction committed the answer with the change). Taken and then rolled back, the claims stay running and the
 * run releases them as for any failure.
 */
export interface IdempotencyCompletion<T> {
  part(answer: T): { sql: string; bindings: unknown[] };
}

/**
 * The claim of a request's keys as a common table expression for a write made of one statement (no transaction
 * around it): `part(answer)` returns `idempotency_claimed AS (INSERT …)` inserting every key of the request already
 * completed with `answer`, with its `?` bindings. It claims nothing on conflict: a key held already (a repeat, a
 * request running, a key used with other parameters) fails the statement on the unique index, so the whole statement
 * writes nothing, and `run` then takes its usual steps, which answer it.
 */
export interface IdempotencyClaim<T> {
  part(answer: T): { sql: string; bindings: unknown[] };
}

/**
 * A request's first try in one statement (IdempotencyClaim): its answer when that statement committed it, else
 * undefined (nothing written). A refusal it throws before its statement (a DomainError) is not stored: the usual
 * steps run the request again and store the refusal they meet.
 */
export type OneStatementAttempt<T> = (ownKey: string, claim: IdempotencyClaim<T>) => Promise<T | undefined>;

/**
 * A Connect method's answer under an optional idempotency key: with a key, `store.run` answers repeats with the first
 * response (protobuf bytes); without one, `execute` simply runs. `execute` receives the key-derived `ownKey` (to build
 * its references and ledger keys from), or undefined without a key, and with a key the completion it may write in
 * its own transaction (IdempotencyCompletion).
 * @throws as `IdempotencyStore.run`, and whatever `execute` throws.
 */
export async function answerIdempotently<Desc extends DescMessage>(
  store: IdempotencyStore,
  request: IdempotentRequest,
  schema: Desc,
  execute: (ownKey: string | undefined, completion?: IdempotencyCompletion<MessageInitShape<Desc>>) => Promise<MessageInitShape<Desc>>,
  attempt?: OneStatementAttempt<MessageInitShape<Desc>>,
): Promise<MessageInitShape<Desc>> {
  if (!request.key) return execute(undefined);
  return store.run(
    request,
    protoCodec(schema),
    async (ownKey, completion) => create(schema, await execute(ownKey, { part: (answer) => completion.part(create(schema, answer)) })),
    attempt &&
      (async (ownKey, claim) => {
        const answer = await attempt(ownKey, { part: (init) => claim.part(create(schema, init)) });
        return answer === undefined ? undefined : create(schema, answer);
      }),
  );
}

/**
 * A new public reference of a money movement (`TRF…`, `PAY…`, `BLK…`, `DEP…`): `prefix` + 18 random uppercase
 * letters or digits. A movement whose request has an idempotency key takes `referenceFromKey` instead, so a re-run
 * names it alike.
 */
export function newReference(prefix: string): string {
  return `${prefix}${randomAlphanumeric(18)}`;
}

/**
 * A movement's public reference derived from its request's own key (`prefix` + 18 uppercase hex characters, the
 * form of `newReference`'s): a re-run after a crash builds the same reference, hence the same ledger
 * idempotency key, and moves nothing twice.
 */
export function referenceFromKey(prefix: string, ownKey: string): string {
  return `${prefix}${createHash('sha256').update(ownKey).digest('hex').slice(0, 18).toUpperCase()}`;
}

/** Hex SHA-256 of the parameters (bigints as decimal strings), the identity of "the same request". */
export function fingerprintOf(parameters: unknown[]): string {
  const text = JSON.stringify(parameters, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value));
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Checks a client's key: 1–255 visible ASCII characters.
 * @throws DomainError IDEMPOTENCY_KEY_INVALID on `field` (default `Idempotency-Key`).
 */
export function checkIdempotencyKey(key: string, field = 'Idempotency-Key'): void {
  if (key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX_LENGTH || !VISIBLE_ASCII.test(key)) {
    throw reasonError(IDEMPOTENCY_REASONS, 'IDEMPOTENCY_KEY_INVALID', 'bad idempotency key', {
      [field]: [`must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters`],
    });
  }
}

/**
 * The idempotency keys of one money-moving request (docs/idempotency.md): the request's own key first (the signed
 * `request_id`, else the signed body itself, else a trusted caller's `idempotencyKey`), then the other keys that
 * name the same request: the signed body when a `request_id` leads, and the client's `Idempotency-Key` header, which
 * may only narrow. Empty `key` when the request has none (a trusted caller without a key).
 */
export function movementKeys(act: MerchantAct, idempotencyKey: string): { key: string; keyField: string; aliases: Array<{ key: string; field: string }> } {
  if (idempotencyKey) checkIdempotencyKey(idempotencyKey);
  const header = idempotencyKey ? [{ key: idempotencyKey, field: 'Idempotency-Key' }] : [];
  if (!act.signed) return { key: idempotencyKey, keyField: 'Idempotency-Key', aliases: [] };
  const body = `signed-body:${act.signed.id}`;
  const { requestId } = act.signed;
  if (requestId === '') return { key: body, keyField: 'sign', aliases: header };
  checkIdempotencyKey(requestId ?? '', 'request_id');
  return { key: requestId!, keyField: 'request_id', aliases: [{ key: body, field: 'sign' }, ...header] };
}

/**
 * The idempotent request of one money-moving call of the merchant `act`: scoped to the merchant,
 * keyed by `movementKeys`, bound to `operation` and its `parameters` (in a stable order).
 */
export function movementRequest(act: MerchantAct, idempotencyKey: string, operation: string, parameters: unknown[]) {
  return { scope: `merchant:${act.merchantId}`, ...movementKeys(act, idempotencyKey), operation, parameters };
}

export interface IdempotencyStore {
  /**
   * Runs `execute` once per request (all of whose keys, `key` and `aliases`, it claims together) and answers every
   * repeat naming any of them with its first result. `execute` receives `ownKey`, a stable string derived from scope
   * and `key`, to build its downstream idempotency keys from.
   * @throws DomainError IDEMPOTENCY_KEY_INVALID, IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_KEY_IN_PROGRESS, or the first
   *   run's business refusal (replayed).
   * With `attempt`, the request is first tried in one statement that claims its keys itself (OneStatementAttempt):
   * answered there, nothing else runs; else the steps above, as without it.
   */
  run<T>(
    request: IdempotentRequest,
    codec: ResponseCodec<T>,
    execute: (ownKey: string, completion: IdempotencyCompletion<T>) => Promise<T>,
    attempt?: OneStatementAttempt<T>,
  ): Promise<T>;
  /**
   * Deletes keys past their retention (`IDEMPOTENCY_RETENTION_SECONDS`), at most `limit` per call so that one call is
   * one short statement; a call that returns `limit` leaves more for the next. @returns how many were deleted
   */
  purgeExpired(limit?: number): Promise<number>;
}

/**
 * A stored refusal raised again with the reason and kind the first run's table gave it, so request idempotency knows
 * no flow's reasons (the record is the platform's own, written by `complete` below). A record whose kind is not a
 * DomainError kind (written by other code) is an INTERNAL fault.
 */
function storedRefusal(error: NonNullable<KeyRow['error']>): DomainError {
  if (!(DOMAIN_ERROR_KINDS as readonly string[]).includes(error.kind)) {
    return reasonError(COMMON_REASONS, 'INTERNAL', `stored refusal ${error.reason} of an unknown kind`);
  }
  return reasonError({ [error.reason]: error.kind } as Record<string, DomainErrorKind>, error.reason, error.message, error.fields);
}

const MAX_CLAIM_TRIES = 3;
/** Most keys one purge deletes. */
const PURGE_BATCH_MAX = 10_000;

export function createIdempotencyStore(database: Knex, options: IdempotencyOptions): IdempotencyStore {
  const table = () => database<KeyRow>('idempotency_keys');

  /**
   * Inserts running claims for `keys` (in sorted order, so that two requests sharing keys never wait on each other
   * in a cycle); returns the keys this call owns now.
   */
  async function claim(request: IdempotentRequest, keys: string[], fingerprint: string): Promise<string[]> {
    const sorted = [...keys].sort();
    const inserted = await database.raw(
      `INSERT INTO idempotency_keys (scope, key, operation, fingerprint, state, locked_until, expires_at)
       VALUES ${sorted.map(() => `(?, ?, ?, ?, 'running', now() + make_interval(secs => ?), now() + make_interval(secs => ?))`).join(', ')}
       ON CONFLICT (scope, key) DO NOTHING RETURNING key`,
      sorted.flatMap((key) => [request.scope, key, request.operation, fingerprint, options.lock_seconds, options.retention_seconds]),
    );
    return (inserted.rows as Array<{ key: string }>).map((row) => row.key);
  }

  /** Takes over a key whose claim is stale (its process died) or whose retention is over; true when taken. */
  async function takeOver(request: IdempotentRequest, key: string, fingerprint: string): Promise<boolean> {
    const updated = await database.raw(
      `UPDATE idempotency_keys SET operation = ?, fingerprint = ?, state = 'running', response = NULL, error = NULL,
         locked_until = now() + make_interval(secs => ?), expires_at = now() + make_interval(secs => ?)
       WHERE scope = ? AND key = ? AND (expires_at <= now() OR (state = 'running' AND locked_until <= now()))
       RETURNING key`,
      [request.operation, fingerprint, options.lock_seconds, options.retention_seconds, request.scope, key],
    );
    return updated.rows.length === 1;
  }

  /** Drops the running claims of `keys` this call holds (nothing was done under them). */
  async function release(request: IdempotentRequest, keys: string[]): Promise<void> {
    if (keys.length > 0) await table().where({ scope: request.scope, state: 'running' }).whereIn('key', keys).delete();
  }

  /** Completes the running claims of `keys` with an answer. */
  async function complete(request: IdempotentRequest, keys: string[], answer: Pick<KeyRow, 'response' | 'error'>): Promise<void> {
    if (keys.length === 0) return;
    await table()
      .where({ scope: request.scope, state: 'running' })
      .whereIn('key', keys)
      .update({ state: 'completed', response: answer.response, error: answer.error === null ? null : (JSON.stringify(answer.error) as never) });
  }

  /** The request's keys inserted completed with the answer, in sorted order as `claim` inserts them (OneStatementAttempt). */
  function claimedCompleted<T>(request: IdempotentRequest, keys: string[], fingerprint: string, codec: ResponseCodec<T>): IdempotencyClaim<T> {
    return {
      part: (answer) => ({
        sql: `idempotency_claimed AS (
           INSERT INTO idempotency_keys (scope, key, operation, fingerprint, state, response, locked_until, expires_at)
           SELECT ?, claimed.key, ?, ?, 'completed', ?, now() + make_interval(secs => ?), now() + make_interval(secs => ?)
             FROM unnest(?::text[]) WITH ORDINALITY AS claimed(key, n) ORDER BY claimed.n
           RETURNING 1)`,
        bindings: [
          request.scope,
          request.operation,
          fingerprint,
          Buffer.from(codec.encode(answer)),
          options.lock_seconds,
          options.retention_seconds,
          `{${[...keys].sort().map((key) => JSON.stringify(key)).join(',')}}`,
        ],
      }),
    };
  }

  function replay<T>(row: KeyRow, codec: ResponseCodec<T>): T {
    if (row.error) throw storedRefusal(row.error);
    if (!row.response) throw new Error(`idempotency key ${row.scope}/${row.key} completed without an answer`);
    return codec.decode(new Uint8Array(row.response));
  }

  return {
    async run<T>(
      request: IdempotentRequest,
      codec: ResponseCodec<T>,
      execute: (ownKey: string, completion: IdempotencyCompletion<T>) => Promise<T>,
      attempt?: OneStatementAttempt<T>,
    ): Promise<T> {
      const named = [{ key: request.key, field: request.keyField ?? 'Idempotency-Key' }, ...(request.aliases ?? [])].filter(
        (entry, index, all) => all.findIndex((other) => other.key === entry.key) === index,
      );
      for (const { key, field } of named) checkIdempotencyKey(key, field);
      const keys = named.map((entry) => entry.key);
      const fieldOf = (key: string) => named.find((entry) => entry.key === key)!.field;
      const fingerprint = fingerprintOf(request.parameters);
      const ownKey = `${request.scope}:${request.key}`;
      if (attempt) {
        try {
          const answered = await attempt(ownKey, claimedCompleted(request, keys, fingerprint, codec));
          if (answered !== undefined) return answered;
        } catch (error) {
          // Refused before its statement: the steps below meet the same refusal and store it.
          if (!(error instanceof DomainError)) throw error;
        }
      }
      const owned: string[] = [];
      for (let attempt = 0; attempt < MAX_CLAIM_TRIES && owned.length < keys.length; attempt++) {
        owned.push(...(await claim(request, keys.filter((key) => !owned.includes(key)), fingerprint)));
        const taken = keys.filter((key) => !owned.includes(key));
        if (taken.length === 0) break;
        const rows = await table().where({ scope: request.scope }).whereIn('key', taken);
        const now = Date.now();
        const live = rows.filter((row) => row.expires_at.getTime() > now);
        const other = keys.map((key) => live.find((row) => row.key === key)).find((row) => row && (row.operation !== request.operation || row.fingerprint !== fingerprint));
        if (other) {
          await release(request, owned);
          throw reasonError(IDEMPOTENCY_REASONS, 'IDEMPOTENCY_KEY_REUSED', 'key used with other parameters', {
            [fieldOf(other.key)]: ['was already used with other parameters'],
          });
        }
        const first = keys.map((key) => live.find((row) => row.key === key && row.state === 'completed')).find((row) => row !== undefined);
        if (first) {
          // A repeat: its keys not seen before answer the same from now on.
          await complete(request, owned, first);
          return replay(first, codec);
        }
        if (live.some((row) => row.locked_until.getTime() > now)) {
          await release(request, owned);
          throw reasonError(IDEMPOTENCY_REASONS, 'IDEMPOTENCY_KEY_IN_PROGRESS', 'a request with this key is running');
        }
        for (const row of rows) if (await takeOver(request, row.key, fingerprint)) owned.push(row.key);
      }
      if (owned.length < keys.length) {
        await release(request, owned);
        throw reasonError(IDEMPOTENCY_REASONS, 'IDEMPOTENCY_KEY_IN_PROGRESS', 'a request with this key is running');
      }

      let completedInside = false;
      const completion: IdempotencyCompletion<T> = {
        part(answer) {
          completedInside = true;
          return {
            sql: `idempotency_completed AS (
               UPDATE idempotency_keys SET state = 'completed', response = ?, error = NULL
                WHERE scope = ? AND state = 'running' AND key = ANY(?::text[])
               RETURNING 1)`,
            bindings: [Buffer.from(codec.encode(answer)), request.scope, `{${owned.map((key) => JSON.stringify(key)).join(',')}}`],
          };
        },
      };
      let result: T;
      try {
        result = await execute(ownKey, completion);
      } catch (error) {
        if (error instanceof DomainError && error.kind !== 'internal' && error.kind !== 'unavailable' && error.kind !== 'deadline_exceeded') {
          await complete(request, owned, { response: null, error: { reason: error.reason, kind: error.kind, message: error.message, fields: error.fields } });
        } else {
          // An infrastructure fault: the outcome is unknown to the client, so a retry must be able to run again.
          await release(request, owned);
        }
        throw error;
      }
      if (!completedInside) await complete(request, owned, { response: Buffer.from(codec.encode(result)), error: null });
      return result;
    },

    async purgeExpired(limit = PURGE_BATCH_MAX) {
      const deleted = await database.raw(
        `DELETE FROM idempotency_keys WHERE ctid IN (
           SELECT ctid FROM idempotency_keys
            WHERE expires_at <= now() AND (state <> 'running' OR locked_until <= now()) LIMIT ?
         )`,
        [limit],
      );
      return deleted.rowCount ?? 0;
    },
  };
}
