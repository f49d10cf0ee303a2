/**
 * The request journal (migrations 033, 042; docs/timeline.md "Requests"): one row per request received about a
 * payment, written by the flows' services once the answer is decided, and read by the payment's timeline (source
 * `request`). A row holds who sent it (the verified caller), the route's action, the request's idempotency key, the
 * client address and the outcome (`ok`, or the refusal's reason) — never a body, a secret or card data.
 *
 * Filed under a payment (`reference`) only once the payment is proven the caller's: the reference its answer names,
 * or the one the service set on the request's `RequestJournal` after finding the payment among the caller's own. A
 * refused request that only *named* a payment keeps that name in `named_reference` (operators see it in that
 * payment's timeline), never `reference`: naming another owner's payment never files a request under it, so the
 * journal is never a list of a payment's owners (the timeline reads those from the payment's own records).
 *
 * Written right after the answer is decided, outside the flow's transaction (a refused request's transaction rolled
 * back, and its refusal is worth a row too). A journal write that fails is logged and never changes the answer: the
 * journal tells a payment's story, it does not decide it.
 */
import type { Knex } from 'knex';
import { DomainError } from '../errors';
import type { Logger } from '../logger';

/** Who sent a request: the payment's merchant or partner, or the upstream payin server (its notifications). */
export type RequestOwnerKind = 'merchant' | 'partner' | 'upstream';

/** Bounds of the journal's columns (the migration's CHECKs). */
export const REQUEST_LIMITS = { reference: 128, owner_id: 64, action: 64, idempotency_key: 128, client_address: 64, outcome: 64 } as const;
/** Most requests of one payment a timeline reads. */
export const REQUESTS_OF_REFERENCE_MAX = 200;

/** One request as journaled. */
export interface PaymentRequest {
  /** The payment it is filed under (proven the caller's), or null for a refusal that only named one. */
  reference: string | null;
  /** A refused request's named payment when it was not proven the caller's (operators only), else null. */
  named_reference: string | null;
  owner_kind: RequestOwnerKind;
  owner_id: string | null;
  /** `<area>.<action>`: `area-b.create_payin`, `area-b.upstream_notification`, `area-a.create.unified.fundTransfer`, … */
  action: string;
  idempotency_key: string | null;
  client_address: string | null;
  /** `ok`, or the reason the request was refused (`PRE_TRANSFER_EXPIRED`, `UNAVAILABLE`, …). */
  outcome: string;
  /** Milliseconds from the request's arrival at the service to its answer. */
  duration_ms: number | null;
  received_at: Date;
}

/** What a service knows of a request before it runs it: its verified caller, never a payment's owner. */
export interface RequestOrigin {
  owner_kind: RequestOwnerKind;
  owner_id?: string | null;
  action: string;
  idempotency_key?: string | null;
  client_address?: string | null;
  /** The payment the request names, as sent (not yet proven the caller's). */
  names?: string;
}

/**
 * A request's filing, handed to the service that runs it: the service sets `reference` once it found the payment
 * among its caller's own (then a refusal is filed under it too).
 */
export interface RequestJournal {
  reference?: string;
  /**
   * The journal's `ok` row under `reference` as a common table expression `request_journaled AS (INSERT …)` with its
   * bindings, for the service's own transaction (one round trip fewer): once taken, `journaled` writes no `ok` row
   * after the answer (the transaction wrote it with the change); a refusal is journaled as always. Undefined when
   * the row would name no payment.
   */
  part?(reference: string): { sql: string; bindings: unknown[] } | undefined;
  /** The statement that took `part` wrote nothing: the `ok` row is written after the answer, as if never taken. */
  notWritten?(): void;
}

type Database = Knex | Knex.Transaction;
type Deps = { database: Knex; logger: Pick<Logger, 'warn'> };

/** `text` cut to `max` characters, or null for an empty one. */
function bounded(text: string | null | undefined, max: number): string | null {
  if (!text) return null;
  return text.length > max ? text.slice(0, max) : text;
}

/** The outcome a thrown error records: its reason, or `UNAVAILABLE`-like codes for what is not a refusal. */
export function outcomeOf(error: unknown): string {
  if (error instanceof DomainError) return error.reason;
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? `CODE_${code}` : 'FAILED';
}

/**
 * Writes one journal row, filed under `reference`, else (a refusal) kept under the caller with the payment it named.
 * A reference out of shape (empty, over 128 characters) is not journaled: it names no payment.
 * @throws the database's error (recordRequest's callers use `journaled`, which logs it instead)
 */
type NewPaymentRequest = Omit<PaymentRequest, 'received_at' | 'named_reference'> & { named_reference?: string | null; received_at?: Date };

export async function insertPaymentRequest(conn: Database, request: NewPaymentRequest): Promise<void> {
  const row = paymentRequestRow(request);
  if (row) await conn('payment_requests').insert(row);
}

/** The journal row of `request`, bounded to the columns' limits; undefined when it names no payment. */
function paymentRequestRow(request: NewPaymentRequest): Record<string, unknown> | undefined {
  const fits = (reference: string | null | undefined): reference is string => !!reference && reference.length <= REQUEST_LIMITS.reference;
  const reference = fits(request.reference) ? request.reference : null;
  const named_reference = reference === null && fits(request.named_reference) ? request.named_reference : null;
  if (reference === null && named_reference === null) return undefined;
  return {
    reference,
    named_reference,
    owner_kind: request.owner_kind,
    owner_id: bounded(request.owner_id, REQUEST_LIMITS.owner_id),
    action: bounded(request.action, REQUEST_LIMITS.action) ?? 'unknown',
    idempotency_key: bounded(request.idempotency_key, REQUEST_LIMITS.idempotency_key),
    client_address: bounded(request.client_address, REQUEST_LIMITS.client_address),
    outcome: bounded(request.outcome, REQUEST_LIMITS.outcome) ?? 'ok',
    duration_ms: request.duration_ms === null ? null : Math.max(0, Math.round(request.duration_ms)),
    ...(request.received_at ? { received_at: request.received_at } : {}),
  };
}

/** The journal row of `request` as a common table expression `request_journaled AS (INSERT …)` (see RequestJournal). */
function paymentRequestPart(request: NewPaymentRequest & { received_at: Date }): { sql: string; bindings: unknown[] } | undefined {
  const row = paymentRequestRow(request);
  if (!row) return undefined;
  const columns = Object.keys(row);
  return {
    sql: `request_journaled AS (INSERT INTO payment_requests (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')}) RETURNING 1)`,
    bindings: columns.map((column) => row[column]),
  };
}

/**
 * Runs one request of a payment and journals it once answered: `ok` under the reference `referenceOf(answer)` names
 * (else the journal's), or the refusal's reason when it threw — under the journal's `reference` when `run` proved
 * the payment its caller's before refusing, else kept under the caller with the payment it named (`origin.names`),
 * else not at all (a create refused before any reference existed). The answer, or the error, is passed on as it
 * was; a failing journal write is logged only.
 */
export async function journaled<T>(
  deps: Deps,
  origin: RequestOrigin,
  run: (journal: RequestJournal) => Promise<T>,
  referenceOf?: (answer: T) => string | undefined,
): Promise<T> {
  const received_at = new Date();
  const started = performance.now();
  let journaledInside = false;
  const journal: RequestJournal = {
    part(reference) {
      const built = paymentRequestPart({
        reference,
        owner_kind: origin.owner_kind,
        owner_id: origin.owner_id ?? null,
        action: origin.action,
        idempotency_key: origin.idempotency_key ?? null,
        client_address: origin.client_address ?? null,
        outcome: 'ok',
        duration_ms: performance.now() - started,
        received_at,
      });
      if (built) journaledInside = true;
      return built;
    },
    notWritten() {
      journaledInside = false;
    },
  };
  const write = async (reference: string | undefined, outcome: string, named?: string) => {
    if (!reference && !named) return;
    try {
      await insertPaymentRequest(deps.database, {
        reference: reference ?? null,
        named_reference: reference ? null : (named ?? null),
        owner_kind: origin.owner_kind,
        owner_id: origin.owner_id ?? null,
        action: origin.action,
        idempotency_key: origin.idempotency_key ?? null,
        client_address: origin.client_address ?? null,
        outcome,
        duration_ms: performance.now() - started,
        received_at,
      });
    } catch (error) {
      deps.logger.warn({ reference: reference ?? named, action: origin.action, err: (error as Error).message }, 'request journal write failed');
    }
  };
  let answer: T;
  try {
    answer = await run(journal);
  } catch (error) {
    await write(journal.reference, outcomeOf(error), origin.names);
    throw error;
  }
  if (!journaledInside) await write(referenceOf?.(answer) ?? journal.reference, 'ok');
  return answer;
}

/**
 * The requests filed under `reference`, oldest first, at most `limit` (≤ REQUESTS_OF_REFERENCE_MAX); with `named`,
 * also the refused requests of others that only named it (an operator's view).
 */
export async function requestsOf(conn: Database, reference: string, limit = REQUESTS_OF_REFERENCE_MAX, named = false): Promise<PaymentRequest[]> {
  if (!reference || reference.length > REQUEST_LIMITS.reference) return [];
  const query = conn('payment_requests')
    .select('reference', 'named_reference', 'owner_kind', 'owner_id', 'action', 'idempotency_key', 'client_address', 'outcome', 'duration_ms', 'received_at')
    .where({ reference });
  if (named) query.orWhere({ named_reference: reference });
  return query.orderBy([{ column: 'received_at' }, { column: 'id' }]).limit(Math.min(Math.max(1, limit), REQUESTS_OF_REFERENCE_MAX));
}

/**
 * Deletes journal rows received before `before`, at most `batch` of them (oldest first). The journal is part of a
 * payment's story and is kept exactly as long as its events (EVENTS_RETENTION_DAYS).
 * @returns how many were deleted
 */
export async function deletePaymentRequestsBefore(conn: Database, before: Date, batch: number): Promise<number> {
  const result = (await conn.raw(`DELETE FROM payment_requests WHERE id IN (SELECT id FROM payment_requests WHERE received_at < ? ORDER BY id LIMIT ?)`, [
    before,
    batch,
  ])) as { rowCount?: number };
  return result.rowCount ?? 0;
}
