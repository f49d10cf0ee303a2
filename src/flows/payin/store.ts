/**
 * The payin flow's SQL: `payins`, `upstream_notifications` (migration 005) and `payin_workflow_outbox`
 * (migration 010; claims and hand-overs: 026). One copy of each query and lock.
 */
import type { Knex } from '../../db/knex';
import { recordEvent } from '../../events';
import { PAYER_ADDRESS, type PayinStatus } from './contract';
import { parseJsonLossless } from '../../money';
import type { OutcomePolicy } from './policy';

/** A row of `payins`. Amounts in minor units of `currency`. */
export interface PayinRow {
  invoice_reference: string;
  merchant_id: string;
  out_trade_no: string;
  amount_units: bigint;
  paid_amount_units: bigint | null;
  fee_units: bigint;
  payin_fee_percent: string;
  currency: 'USDT';
  memo: string | null;
  status: PayinStatus;
  late: boolean;
  payment_match_status: 'exact' | 'overpaid' | 'underpaid' | null;
  trx_ref: string | null;
  qr_content: string | null;
  /** Set while the forward is unanswered: past it, a forward that never answered no longer holds out_trade_no. */
  forwarding_until?: Date | null;
  /** The creating request's own idempotency key (Idempotency-Key), when it carried one. */
  request_key?: string | null;
  /** The QR image (base64 PNG) B1 answered. */
  qr_image?: string | null;
  /** created_at + PAYIN_TTL_SECONDS: where the PayinWorkflow's expiry timer ends. */
  expires_at?: Date | null;
  /** The accounts the settlement posts to, resolved at creation (migration 038); null on older payins. */
  wallet_account_id?: string | null;
  settlement_account_id?: string | null;
  fee_revenue_account_id?: string | null;
  created_at: Date;
}

export const PAYIN_OUTBOX_TABLE = 'payin_workflow_outbox';

/**
 * True when the payin was settled by this payment: its amount (minor units) and, when the payment names one, its
 * trx_ref. Anything else received for a settled payin is another payment.
 */
export function settledBy(payin: PayinRow, payment: { amount_units: bigint; trx_ref: string }): boolean {
  return payin.status === 'success' && payin.paid_amount_units === payment.amount_units && (!payment.trx_ref || payin.trx_ref === payment.trx_ref);
}

export type NewPayinRow = Pick<
  PayinRow,
  'invoice_reference' | 'merchant_id' | 'out_trade_no' | 'amount_units' | 'fee_units' | 'payin_fee_percent' | 'currency' | 'memo'
> & { expires_at: Date; forwarding_until: Date; request_key: string | null } & Partial<Pick<PayinRow, 'wallet_account_id' | 'settlement_account_id' | 'fee_revenue_account_id'>>;

/**
 * Inserts a waiting payin and its workflow-start outbox row in one statement (atomic on its own), so a committed
 * payin always gets its PayinWorkflow. `traceparent`: the creating request's trace (W3C), which the workflow's start
 * continues (migration 061); absent without tracing.
 * @throws the database's unique violation (23505) when a live payin of the merchant holds the out_trade_no.
 */
export async function insertPayinWithOutbox(database: Knex, row: NewPayinRow, traceparent?: string): Promise<void> {
  const insertPayin = database('payins')
    .insert({ ...row, status: 'waiting' })
    .returning('invoice_reference');
  await database.raw('WITH payin AS (?) INSERT INTO ?? (invoice_reference, traceparent) SELECT invoice_reference, ? FROM payin', [
    insertPayin,
    PAYIN_OUTBOX_TABLE,
    traceparent ?? null,
  ]);
}

export async function markPayinFailed(database: Knex, invoice_reference: string, reason: string): Promise<void> {
  await database('payins')
    .where({ invoice_reference })
    .update({ status: 'failed', failure_reason: reason.slice(0, 255), forwarding_until: null, updated_at: database.fn.now() });
}

/**
 * Stores what the upstream answered to the forwarded payin and the QR image B1 answers (the forward is over), with
 * the merchant's `payin.created` event in the same transaction: a payin the merchant is told of is one B1 answers.
 * A payin marked failed meanwhile (its forward released as abandoned) is not announced.
 */
export async function recordForwarded(
  database: Knex,
  invoice_reference: string,
  answer: { qr_content: string; trx_ref: string | null; qr_image: string },
): Promise<void> {
  await database.transaction(async (trx) => {
    const [payin] = (await trx('payins')
      .where({ invoice_reference })
      .update({ ...answer, forwarding_until: null, updated_at: trx.fn.now() })
      .returning(['invoice_reference', 'merchant_id', 'out_trade_no', 'amount_units', 'fee_units', 'currency', 'expires_at', 'status'])) as Array<
      Pick<PayinRow, 'invoice_reference' | 'merchant_id' | 'out_trade_no' | 'amount_units' | 'fee_units' | 'currency' | 'expires_at' | 'status'>
    >;
    if (!payin || payin.status === 'failed') return;
    await recordEvent(trx, {
      owner: { type: 'merchant', id: payin.merchant_id },
      subject: payin.invoice_reference,
      type: 'payin.created',
      data: {
        invoice_reference: payin.invoice_reference,
        out_trade_no: payin.out_trade_no,
        amount_units: String(payin.amount_units),
        fee_units: String(payin.fee_units),
        currency: payin.currency,
        expires_at: payin.expires_at ? new Date(payin.expires_at).toISOString() : null,
      },
    });
  });
}

/** A payin whose forward never answered (its process died) and whose forwarding deadline passed. */
function abandonedForward(query: Knex.QueryBuilder): Knex.QueryBuilder {
  return query.where({ status: 'waiting' }).whereNull('qr_content').whereNotNull('forwarding_until').where('forwarding_until', '<', new Date());
}

/**
 * Marks failed the merchant's payin for `out_trade_no` whose forward was abandoned (platform decisions §4: a failed
 * forward does not hold the key). @returns true when one was released.
 */
export async function releaseAbandonedForward(database: Knex, merchant_id: string, out_trade_no: string): Promise<boolean> {
  const released = await abandonedForward(database('payins').where({ merchant_id, out_trade_no })).update({
    status: 'failed',
    failure_reason: 'forward abandoned: no upstream answer recorded before its deadline',
    forwarding_until: null,
    updated_at: database.fn.now(),
  });
  return released > 0;
}

/** B2: the latest live payin of the merchant with this out_trade_no (an abandoned forward is not one). */
export function findLatestPayin(database: Knex, merchant_id: string, out_trade_no: string): Promise<PayinRow | undefined> {
  return database<PayinRow>('payins')
    .where({ merchant_id, out_trade_no })
    .whereNot({ status: 'failed' })
    .whereNot((query) => void abandonedForward(query))
    .orderBy('created_at', 'desc')
    .first();
}

export function findPayin(database: Knex, invoice_reference: string): Promise<PayinRow | undefined> {
  return database<PayinRow>('payins').where({ invoice_reference }).first();
}

/** Locks the payin's row for the rest of `trx`: the transitions of one payin serialise on it. */
export function lockPayin(trx: Knex.Transaction, invoice_reference: string): Promise<PayinRow | undefined> {
  return trx<PayinRow>('payins').where({ invoice_reference }).forUpdate().first();
}

/** A payin locked for its settlement, with its merchant's outcome policy (null: none, every payment credited). */
export type SettlingPayin = PayinRow & { outcome_policy: OutcomePolicy | null };

/**
 * Locks the payin (not the policy) and reads its merchant's outcome policy in the same statement, so that a
 * settlement without a policy reads nothing more and runs no policy code (src/flows/payin/resolution.ts).
 */
export async function lockPayinForSettlement(trx: Knex.Transaction, invoice_reference: string): Promise<SettlingPayin | undefined> {
  const row = await trx('payins')
    .leftJoin('merchant_outcome_policies as policy', 'policy.merchant_id', 'payins.merchant_id')
    .where('payins.invoice_reference', invoice_reference)
    .forUpdate('payins')
    .first('payins.*', 'policy.underpaid as policy_underpaid', 'policy.overpaid as policy_overpaid', 'policy.late as policy_late', 'policy.tolerance_percent as policy_tolerance_percent', 'policy.refund_fee as policy_refund_fee');
  if (!row) return undefined;
  const { policy_underpaid, policy_overpaid, policy_late, policy_tolerance_percent, policy_refund_fee, ...payin } = row;
  const outcome_policy = policy_underpaid ? { underpaid: policy_underpaid, overpaid: policy_overpaid, late: policy_late, tolerance_percent: policy_tolerance_percent, refund_fee: policy_refund_fee } : null;
  return { ...(payin as PayinRow), outcome_policy };
}

export async function markSettled(trx: Knex.Transaction, settled: PayinRow, ledger_transaction_id: string): Promise<void> {
  await trx('payins').where({ invoice_reference: settled.invoice_reference }).update({
    status: settled.status,
    late: settled.late,
    paid_amount_units: settled.paid_amount_units,
    fee_units: settled.fee_units,
    payment_match_status: settled.payment_match_status,
    trx_ref: settled.trx_ref,
    ledger_transaction_id,
    settled_at: trx.fn.now(),
    updated_at: trx.fn.now(),
  });
}

export async function setPayinStatus(trx: Knex.Transaction, invoice_reference: string, status: PayinStatus): Promise<void> {
  await trx('payins').where({ invoice_reference }).update({ status, updated_at: trx.fn.now() });
}

export interface NewNotification {
  idempotency_key: string;
  invoice_reference: string;
  status: 'success' | 'close';
  amount_units: bigint | null;
  trx_ref: string | null;
  raw_body: string;
}

/** Records a notification once; false when its idempotency key was recorded before (a repeat). */
export async function insertNotification(database: Knex, notification: NewNotification): Promise<boolean> {
  const inserted = await database('upstream_notifications')
    .insert({ ...notification, outcome: 'received' })
    .onConflict('idempotency_key')
    .ignore()
    .returning('id');
  return inserted.length > 0;
}

/** The recorded outcome of a notification by its idempotency key, or undefined. */
export async function findNotificationOutcome(database: Knex, idempotency_key: string): Promise<'received' | 'applied' | 'ignored' | undefined> {
  const row = await database('upstream_notifications').where({ idempotency_key }).first('outcome');
  return row?.outcome;
}

/**
 * True when an applied success notification of the payin carries exactly this amount (minor units) and trx_ref: the
 * authority a settlement needs before it moves money.
 */
export async function hasAppliedSettlement(
  trx: Knex.Transaction,
  invoice_reference: string,
  payment: { amount_units: bigint; trx_ref: string },
): Promise<boolean> {
  const row = await trx('upstream_notifications')
    .where({ invoice_reference, status: 'success', outcome: 'applied', amount_units: payment.amount_units.toString() })
    .andWhere((query) => (payment.trx_ref ? query.where({ trx_ref: payment.trx_ref }) : query.whereNull('trx_ref')))
    .first('id');
  return row !== undefined;
}

/**
 * True when an applied close notification of the payin exists (with this trx_ref, when one is given): the authority
 * a close needs.
 */
export async function hasAppliedClose(trx: Knex.Transaction, invoice_reference: string, trx_ref: string | undefined): Promise<boolean> {
  const row = await trx('upstream_notifications')
    .where({ invoice_reference, status: 'close', outcome: 'applied' })
    .andWhere((query) => void (trx_ref ? query.where({ trx_ref }) : query))
    .first('id');
  return row !== undefined;
}

/**
 * Decides a recorded notification. An applied one is due to be handed to its workflow `handoff_after_seconds` from
 * now: the request that decided it hands it over meanwhile, and the dispatcher takes it only when that did not
 * happen (Temporal unreachable, or the process died).
 */
export async function setNotificationOutcome(
  database: Knex,
  idempotency_key: string,
  outcome: 'applied' | 'ignored',
  handoff_after_seconds = 0,
): Promise<void> {
  await database('upstream_notifications')
    .where({ idempotency_key })
    .update({
      outcome,
      handoff_due_at: outcome === 'applied' ? database.raw('now() + make_interval(secs => ?)', [handoff_after_seconds]) : null,
    });
}

export interface OutboxRow {
  id: string;
  invoice_reference: string;
  status: string;
  expires_at: Date | null;
  /** The payin's owner, amount (minor units), currency and order id: its workflow's search attributes from the start. */
  merchant_id: string;
  amount_units: string;
  currency: string;
  out_trade_no: string;
  /** The creating request's W3C traceparent, or null (no tracing then). */
  traceparent: string | null;
}

/**
 * Claims up to `limit` due outbox rows for `lease_seconds`: their `due_at` moves past the lease in one statement,
 * committed at once, so the starts that follow run outside any transaction and another dispatcher does not take the
 * same rows meanwhile (a claim whose process died comes due again when its lease ends).
 */
export async function claimOutboxBatch(database: Knex, limit: number, lease_seconds: number): Promise<OutboxRow[]> {
  const claimed = await database.raw(
    `WITH due AS (SELECT id FROM ?? WHERE due_at <= now() ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)
     UPDATE ?? AS outbox SET due_at = now() + make_interval(secs => ?)
       FROM due, payins
      WHERE outbox.id = due.id AND payins.invoice_reference = outbox.invoice_reference
     RETURNING outbox.id, outbox.invoice_reference, payins.status, payins.expires_at, payins.merchant_id, payins.amount_units, payins.currency,
               payins.out_trade_no, outbox.traceparent`,
    [PAYIN_OUTBOX_TABLE, limit, PAYIN_OUTBOX_TABLE, lease_seconds],
  );
  return (claimed.rows as OutboxRow[]).map((row) => ({ ...row, id: String(row.id) }));
}

/** Deletes the outbox rows whose workflows started. */
export async function deleteOutboxRows(database: Knex, ids: string[]): Promise<void> {
  if (ids.length > 0) await database(PAYIN_OUTBOX_TABLE).whereIn('id', ids).delete();
}

/** Makes claimed outbox rows due again now (their start failed or was not attempted). */
export async function releaseOutboxRows(database: Knex, ids: string[]): Promise<void> {
  if (ids.length > 0) await database(PAYIN_OUTBOX_TABLE).whereIn('id', ids).update({ due_at: database.fn.now() });
}

/** An applied notification due to be handed to its PayinWorkflow, with what the workflow's start needs. */
export interface DueHandoff {
  idempotency_key: string;
  invoice_reference: string;
  status: 'success' | 'close';
  amount_units: bigint | null;
  trx_ref: string | null;
  expires_at: Date | null;
  /** The payin's merchant, amount (USDT minor units), currency and order id: its workflow's search attributes. */
  payin: { merchant_id: string; amount_units: bigint; currency: string; out_trade_no: string };
}

/**
 * Claims up to `limit` applied notifications whose hand-over is due, for `lease_seconds` (one statement, committed at
 * once, like claimOutboxBatch).
 */
export async function claimDueHandoffs(database: Knex, limit: number, lease_seconds: number): Promise<DueHandoff[]> {
  const claimed = await database.raw(
    `WITH due AS (
       SELECT id FROM upstream_notifications WHERE handoff_due_at <= now() ORDER BY handoff_due_at LIMIT ? FOR UPDATE SKIP LOCKED
     )
     UPDATE upstream_notifications AS n SET handoff_due_at = now() + make_interval(secs => ?)
       FROM due, payins
      WHERE n.id = due.id AND payins.invoice_reference = n.invoice_reference
     RETURNING n.idempotency_key, n.invoice_reference, n.status, n.amount_units, n.trx_ref, payins.expires_at,
               payins.merchant_id, payins.amount_units AS payin_amount_units, payins.currency, payins.out_trade_no`,
    [limit, lease_seconds],
  );
  type ClaimedRow = Omit<DueHandoff, 'amount_units' | 'payin'> & { amount_units: string | null; merchant_id: string; payin_amount_units: string; currency: string; out_trade_no: string };
  return (claimed.rows as ClaimedRow[]).map(({ merchant_id, payin_amount_units, currency, out_trade_no, ...row }) => ({
    ...row,
    amount_units: row.amount_units === null ? null : BigInt(row.amount_units),
    payin: { merchant_id, amount_units: BigInt(payin_amount_units), currency, out_trade_no },
  }));
}

/** The notification reached its workflow: no hand-over is due any more. */
export async function markNotificationHanded(database: Knex, idempotency_key: string): Promise<void> {
  await database('upstream_notifications').where({ idempotency_key }).update({ handoff_due_at: null, handed_at: database.fn.now() });
}

/** Makes the hand-over of these notifications due now (an attempt failed; the dispatcher tries again). */
export async function releaseHandoffs(database: Knex, idempotency_keys: string[]): Promise<void> {
  if (idempotency_keys.length > 0) {
    await database('upstream_notifications').whereIn('idempotency_key', idempotency_keys).whereNotNull('handoff_due_at').update({ handoff_due_at: database.fn.now() });
  }
}

/**
 * The payer address the upstream reported with the payin's latest applied success notification (`payer_address` of
 * its body), when it is a TRON address; null when none was reported or nothing was paid. Read for the merchant's
 * dashboard (the payment's summary); the settlement's own reading is ./resolution.ts's.
 */
export async function latestPayerAddress(conn: Knex | Knex.Transaction, invoice_reference: string): Promise<string | null> {
  const row = (await conn('upstream_notifications')
    .where({ invoice_reference, status: 'success', outcome: 'applied' })
    .orderBy('id', 'desc')
    .first('raw_body')) as { raw_body: string } | undefined;
  if (!row) return null;
  try {
    const address = (parseJsonLossless(row.raw_body) as { payer_address?: unknown }).payer_address;
    return typeof address === 'string' && PAYER_ADDRESS.test(address) ? address : null;
  } catch {
    return null;
  }
}
