/**
 * The pre-transfer flow's money movements (platform decisions §6), the flow's only caller of the ledger: the hold
 * placed at creation (called by the TransferService inside its transaction), and the PreTransferWorkflow's
 * activities that post or void it. Each passes the step's idempotency key (`preTransferIdempotencyKey`) to the
 * ledger and updates the `pre_transfers` row in the same database transaction, so a retried step never moves money
 * twice; each writes its events (the partner's, and the receiving user's merchant's) in that transaction too.
 */
import { DomainError, reasonError } from '../../errors';
import type { Knex } from '../../db/knex';
import type { Account, PendingTransfer } from '../../ledger/types';
import type { PlatformDeps } from '../../platform-deps';
import { reasonFailure } from '../../temporal/failures';
import { PRE_TRANSFER_REASONS, preTransferIdempotencyKey, type PreTransferActivities, type PreTransferReason } from './contract';
import { deletePreTransfer, lockPreTransfer, lockPreTransferToPost, markConfirmed, markExpired, recordPreTransferEvents } from './store';

/** The post's refusal of `reason`: the `ApplicationFailure` the workflow lets through to the TransferService. */
const refuse = (reason: PreTransferReason, detail: string) => reasonFailure(PRE_TRANSFER_REASONS, reason, detail);

/** The unique index on (partner_id, partner_transaction_id) refused the row. */
function isPartnerTransactionClash(error: unknown): boolean {
  const { code, constraint } = error as { code?: string; constraint?: string };
  return code === '23505' && typeof constraint === 'string' && constraint.includes('partner_transaction_id');
}

/** The receiver's USD wallet, or undefined when the user has none (then it is not eligible). */
export function findReceiverWallet(deps: Pick<PlatformDeps, 'ledger'>, receiver_user_id: string): Promise<Account | undefined> {
  return deps.ledger.findAccount({ owner_type: 'user', owner_id: receiver_user_id, currency: 'USD', kind: 'wallet' });
}

/**
 * Holds `amount_units` (minor units) on the partner float for the receiver's wallet, inside `trx`, expiring with the
 * pre-transfer. Written in `trx` itself (no savepoint): the caller rolls `trx` back when the hold fails.
 * @throws DomainError INSUFFICIENT_PARTNER_BALANCE when the available float is below the amount.
 */
export async function holdPreTransfer(
  deps: Pick<PlatformDeps, 'ledger'>,
  trx: Knex.Transaction,
  input: {
    pre_transfer_id: string;
    partner_id: string;
    out_trade_no: string;
    float_account_id: string;
    wallet_account_id: string;
    amount_units: bigint;
    ttl_seconds: number;
  },
): Promise<PendingTransfer> {
  try {
    return await deps.ledger.createPendingTransfer(
      {
        idempotency_key: preTransferIdempotencyKey(input.pre_transfer_id, 'hold'),
        debit_account_id: input.float_account_id,
        credit_account_id: input.wallet_account_id,
        amount_units: input.amount_units,
        timeout_seconds: input.ttl_seconds,
        description: `Area A pre-transfer ${input.pre_transfer_id}`,
        metadata: { pre_transfer_id: input.pre_transfer_id, partner_id: input.partner_id, out_trade_no: input.out_trade_no },
      },
      trx,
      'direct',
    );
  } catch (error) {
    if (error instanceof DomainError && error.reason === 'INSUFFICIENT_FUNDS') {
      throw reasonError(PRE_TRANSFER_REASONS, 'INSUFFICIENT_PARTNER_BALANCE', 'partner float below the amount');
    }
    throw error;
  }
}

/**
 * Releases the hold of a pre-transfer whose workflow never started, and forgets its row (so its out_trade_no is free
 * again). A workflow that did start after all finds no row and does nothing. Repeats are no-ops.
 */
export async function releaseUnstartedPreTransfer(deps: Pick<PlatformDeps, 'database' | 'ledger'>, pre_transfer_id: string): Promise<void> {
  await deps.database.transaction(async (trx) => {
    const row = await lockPreTransfer(trx, pre_transfer_id);
    // A repeat of the create started the workflow meanwhile: it owns the pre-transfer now.
    if (!row || row.state !== 'pending' || row.workflow_started_at) return;
    try {
      await deps.ledger.voidPendingTransfer(
        { pending_transfer_id: row.pending_transfer_id, idempotency_key: preTransferIdempotencyKey(pre_transfer_id, 'void') },
        trx,
      );
    } catch (error) {
      if (!(error instanceof DomainError && error.reason === 'PENDING_TRANSFER_ALREADY_VOIDED')) throw error;
    }
    await deletePreTransfer(trx, pre_transfer_id);
    // Its creation was announced: so is its end (the partner's request was answered UNAVAILABLE).
    await recordPreTransferEvents(trx, row, 'pre_transfer.released', { state: 'released' });
  });
}

export function createPreTransferActivities(deps: Pick<PlatformDeps, 'database' | 'ledger'>): PreTransferActivities {
  return {
    async postPreTransfer(input) {
      try {
        return await deps.database.transaction(async (trx) => {
          const row = await lockPreTransferToPost(trx, input.pre_transfer_id, input.partner_transaction_id);
          if (!row) throw refuse('PRE_TRANSFER_NOT_FOUND', `unknown pre-transfer ${input.pre_transfer_id}`);
          // The workflow's validator owns "used" and "expired"; these re-checks under the row lock guard the race
          // with a retried activity and with the ledger's own expiry of the hold.
          if (row.state === 'confirmed') return { fund_transfer_id: row.fund_transfer_id as string };
          if (row.state === 'expired') throw refuse('PRE_TRANSFER_EXPIRED', 'pre-transfer expired');
          // The Update that got here carries no authority of its own: money moves only for a confirm request the
          // api verified (the partner's token and signature, or a credential bound to the partner) and recorded.
          if (!row.confirm_recorded) throw refuse('CONFIRMATION_NOT_RECORDED', 'no verified confirm request recorded for this partner_transaction_id');
          // Every failure below rolls the whole transaction back, so the post joins it directly. A
          // partner_transaction_id used before fails markConfirmed on the unique index (caught below), which undoes
          // the post with it: no query of its own on the way to every confirm.
          let posted;
          try {
            posted = await deps.ledger.postPendingTransfer(
              { pending_transfer_id: row.pending_transfer_id, idempotency_key: input.idempotency_key },
              trx,
              'direct',
            );
          } catch (error) {
            if (error instanceof DomainError && error.reason === 'PENDING_TRANSFER_EXPIRED') {
              throw refuse('PRE_TRANSFER_EXPIRED', 'the hold expired');
            }
            throw error;
          }
          await markConfirmed(trx, row.id, { partner_transaction_id: input.partner_transaction_id, fund_transfer_id: input.fund_transfer_id });
          await recordPreTransferEvents(trx, { ...row, partner_transaction_id: input.partner_transaction_id }, 'pre_transfer.confirmed', {
            state: 'confirmed',
            fund_transfer_id: input.fund_transfer_id,
            ledger_transaction_id: posted.posted_transaction_id,
          });
          return { fund_transfer_id: input.fund_transfer_id };
        });
      } catch (error) {
        // The unique index on (partner_id, partner_transaction_id): the id was used by another pre-transfer.
        if (isPartnerTransactionClash(error)) throw refuse('DUPLICATE_PARTNER_TRANSACTION_ID', 'duplicate partner_transaction_id');
        throw error;
      }
    },

    async voidPreTransfer(input) {
      await deps.database.transaction(async (trx) => {
        const row = await lockPreTransfer(trx, input.pre_transfer_id);
        if (!row || row.state !== 'pending') return;
        try {
          await deps.ledger.voidPendingTransfer({ pending_transfer_id: row.pending_transfer_id, idempotency_key: input.idempotency_key }, trx);
        } catch (error) {
          if (!(error instanceof DomainError && error.reason === 'PENDING_TRANSFER_ALREADY_VOIDED')) throw error;
        }
        await markExpired(trx, row.id);
        await recordPreTransferEvents(trx, row, 'pre_transfer.expired', { state: 'expired' });
      });
    },
  };
}
