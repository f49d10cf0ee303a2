/**
 * The reconciliation's SQL: read-only queries over the other flows' tables, each bounded by FINDINGS_LIMIT and by
 * a cutoff (now − grace) so that work still in flight is not mistaken for an inconsistency. What the ledger recorded
 * is read through the ledger's reads (LedgerKeyReads), never its tables.
 */
import type { Knex } from '../../db/knex';
import type { Ledger } from '../../ledger/types';
import { FINDINGS_LIMIT } from './contract';

export interface NotificationCandidate {
  idempotency_key: string;
  invoice_reference: string;
  status: 'success' | 'close';
  /** Minor units (int8, read as bigint). */
  amount_units: bigint | null;
  trx_ref: string | null;
  outcome: 'received' | 'applied';
  payin_status: string;
  paid_amount_units: bigint | null;
  payin_trx_ref: string | null;
}

/**
 * Notifications that may not have reached their payin: undecided ones, applied closes of a still waiting payin,
 * and applied successes whose payin was not settled by them (the caller checks those against the ledger).
 */
export function notificationCandidates(database: Knex, cutoff: Date): Promise<NotificationCandidate[]> {
  return database('upstream_notifications as n')
    .join('payins as p', 'p.invoice_reference', 'n.invoice_reference')
    .where('n.received_at', '<', cutoff)
    .whereNot('p.status', 'failed')
    .where((query) =>
      query
        .where('n.outcome', 'received')
        .orWhere((close) => close.where({ 'n.outcome': 'applied', 'n.status': 'close', 'p.status': 'waiting' }))
        .orWhere((success) =>
          success
            .where({ 'n.outcome': 'applied', 'n.status': 'success' })
            .where((unsettled) =>
              unsettled
                .whereNot('p.status', 'success')
                .orWhereRaw('p.paid_amount_units IS DISTINCT FROM n.amount_units')
                .orWhere((trx) => trx.whereNotNull('n.trx_ref').whereRaw('p.trx_ref IS DISTINCT FROM n.trx_ref')),
            ),
        ),
    )
    .orderBy('n.received_at')
    .limit(FINDINGS_LIMIT)
    .select(
      'n.idempotency_key',
      'n.invoice_reference',
      'n.status',
      'n.amount_units',
      'n.trx_ref',
      'n.outcome',
      'p.status as payin_status',
      'p.paid_amount_units',
      'p.trx_ref as payin_trx_ref',
    );
}

/** Pre-transfers still pending (their hold open) past expiry. */
export async function holdsPastExpiry(database: Knex, cutoff: Date): Promise<string[]> {
  const rows = (await database('pre_transfers').where({ state: 'pending' }).where('expires_at', '<', cutoff).orderBy('expires_at').limit(FINDINGS_LIMIT).select('id')) as Array<{ id: string }>;
  return rows.map((row) => row.id);
}

/** Deposits still pending past their lifetime. */
export async function depositsPastExpiry(database: Knex, cutoff: Date): Promise<string[]> {
  const rows = (await database('deposits').where({ state: 'pending' }).where('expires_at', '<', cutoff).orderBy('expires_at').limit(FINDINGS_LIMIT).select('reference')) as Array<{ reference: string }>;
  return rows.map((row) => row.reference);
}

/** How far back completed deposits are checked against the ledger on every run. */
const COMPLETED_DEPOSITS_WINDOW_SECONDS = 2 * 86_400;

/**
 * Deposits completed in the recent window (before the cutoff) whose ledger transaction does not exist, as the ledger
 * reads it (`missingTransactions`): at most FINDINGS_LIMIT, the oldest first.
 */
export async function uncreditedDeposits(database: Knex, ledger: Pick<Ledger, 'missingTransactions'>, cutoff: Date): Promise<string[]> {
  const since = new Date(cutoff.getTime() - COMPLETED_DEPOSITS_WINDOW_SECONDS * 1000);
  const found: string[] = [];
  // A page of the window's deposits at a time, each page's transactions asked of the ledger in one read.
  let after: { finished_at: Date; reference: string } | undefined;
  while (found.length < FINDINGS_LIMIT) {
    const query = database('deposits').where({ state: 'completed' }).whereBetween('finished_at', [since, cutoff]);
    if (after) query.whereRaw('(finished_at, reference) > (?, ?)', [after.finished_at, after.reference]);
    const page = (await query.orderBy([{ column: 'finished_at' }, { column: 'reference' }]).limit(DEPOSIT_PAGE).select('reference', 'finished_at', 'ledger_transaction_id')) as Array<{
      reference: string;
      finished_at: Date;
      ledger_transaction_id: string | null;
    }>;
    const missing = await ledger.missingTransactions(page.map((row) => row.ledger_transaction_id ?? ''));
    found.push(...page.filter((row) => missing.has(row.ledger_transaction_id ?? '')).map((row) => row.reference));
    if (page.length < DEPOSIT_PAGE) break;
    after = page.at(-1);
  }
  return found.slice(0, FINDINGS_LIMIT);
}

/** Completed deposits read per page by `uncreditedDeposits`. */
const DEPOSIT_PAGE = 1000;

/** Webhook events still pending, created before the cutoff. */
export async function pendingWebhooks(database: Knex, cutoff: Date): Promise<string[]> {
  const rows = (await database('webhook_events').where({ status: 'pending' }).where('created_at', '<', cutoff).orderBy('created_at').limit(FINDINGS_LIMIT).select('id')) as Array<{ id: string }>;
  return rows.map((row) => row.id);
}

/** Payins whose workflow start has waited in the outbox since before the cutoff. */
export async function outboxLag(database: Knex, cutoff: Date): Promise<string[]> {
  const rows = (await database('payin_workflow_outbox').where('created_at', '<', cutoff).orderBy('created_at').limit(FINDINGS_LIMIT).select('invoice_reference')) as Array<{ invoice_reference: string }>;
  return rows.map((row) => row.invoice_reference);
}

/** Refunds still undecided (held or pending) whose decision was due before `cutoff`, oldest first. */
export async function undecidedRefunds(database: Knex, cutoff: Date): Promise<Array<{ refund_reference: string; status: string; decision_due_at: Date }>> {
  return database('refunds')
    .whereIn('status', ['held', 'pending'])
    .where('decision_due_at', '<', cutoff)
    .orderBy('decision_due_at')
    .limit(FINDINGS_LIMIT)
    .select('refund_reference', 'status', 'decision_due_at');
}

/** Payouts still undecided (held or requested) whose decision was due before `cutoff`, oldest first. */
export async function undecidedPayouts(database: Knex, cutoff: Date): Promise<Array<{ payout_reference: string; status: string; decision_due_at: Date }>> {
  return database('payouts')
    .whereIn('status', ['held', 'requested'])
    .where('decision_due_at', '<', cutoff)
    .orderBy('decision_due_at')
    .limit(FINDINGS_LIMIT)
    .select('payout_reference', 'status', 'decision_due_at');
}

/** Payouts still awaiting approval whose approval was due before `cutoff`, oldest first. */
export async function staleApprovalPayouts(database: Knex, cutoff: Date): Promise<Array<{ payout_reference: string; approval_due_at: Date }>> {
  return database('payouts').where({ status: 'awaiting_approval' }).where('approval_due_at', '<', cutoff).orderBy('approval_due_at').limit(FINDINGS_LIMIT).select('payout_reference', 'approval_due_at');
}

/** Signed provider payout decisions recorded for a payout_reference no payout has. */
export async function payoutOutcomesWithoutPayout(database: Knex): Promise<Array<{ payout_reference: string; status: string }>> {
  return database('payout_notifications as n')
    .leftJoin('payouts as p', 'p.payout_reference', 'n.payout_reference')
    .whereNull('p.payout_reference')
    .orderBy('n.id')
    .limit(FINDINGS_LIMIT)
    .select('n.payout_reference', 'n.status');
}

/** Deposit refunds still held, recorded before `cutoff` (their workflow decides within seconds when it runs). */
export async function heldDepositRefunds(database: Knex, cutoff: Date): Promise<string[]> {
  return database('deposit_refunds').where({ status: 'held' }).where('created_at', '<', cutoff).orderBy('created_at').limit(FINDINGS_LIMIT).pluck('refund_reference');
}

/** Signed provider refund decisions recorded for a refund_reference no refund has. */
export async function refundOutcomesWithoutRefund(database: Knex): Promise<Array<{ refund_reference: string; status: string }>> {
  return database('refund_notifications as n')
    .leftJoin('refunds as r', 'r.refund_reference', 'n.refund_reference')
    .whereNull('r.refund_reference')
    .orderBy('n.id')
    .limit(FINDINGS_LIMIT)
    .select('n.refund_reference', 'n.status');
}
