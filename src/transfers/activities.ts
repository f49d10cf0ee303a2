/**
 * PreTransferWorkflow activities (Area A, platform decisions §6). Idempotent: each passes the workflow's stable
 * idempotency key (workflow id + step) to the ledger and updates the pre_transfers row in the same database
 * transaction, so a retried activity never moves money twice.
 */
import { ApplicationFailure } from '@temporalio/common';
import { DomainError } from '../errors';
import type { PlatformDeps } from '../platform';

/** Raised (non-retryable) when the partner already used this partner_transaction_id on another pre-transfer. */
const DUPLICATE_PARTNER_TRANSACTION_ID = 'DUPLICATE_PARTNER_TRANSACTION_ID';
const PRE_TRANSFER_EXPIRED = 'PRE_TRANSFER_EXPIRED';

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string }).code === '23505';
}

export function createTransferActivities(deps: Pick<PlatformDeps, 'database' | 'ledger'>) {
  return {
    /**
     * Posts the pre-transfer's hold (partner float → receiver wallet) and marks the row confirmed with
     * `partner_transaction_id` and `fund_transfer_id`. A repeat after success returns the stored fund_transfer_id.
     * @throws ApplicationFailure (non-retryable) DUPLICATE_PARTNER_TRANSACTION_ID, PRE_TRANSFER_EXPIRED
     */
    async postPreTransfer(input: {
      pre_transfer_id: string;
      partner_transaction_id: string;
      fund_transfer_id: string;
      idempotency_key: string;
    }): Promise<{ fund_transfer_id: string }> {
      try {
        return await deps.database.transaction(async (trx) => {
          const row = await trx('pre_transfers').where({ id: input.pre_transfer_id }).forUpdate().first();
          if (!row) throw ApplicationFailure.nonRetryable(`unknown pre-transfer ${input.pre_transfer_id}`, 'PRE_TRANSFER_NOT_FOUND');
          if (row.state === 'confirmed') return { fund_transfer_id: row.fund_transfer_id as string };
          if (row.state === 'expired') throw ApplicationFailure.nonRetryable('pre-transfer expired', PRE_TRANSFER_EXPIRED);
          const clash = await trx('pre_transfers')
            .where({ partner_id: row.partner_id, partner_transaction_id: input.partner_transaction_id })
            .whereNot({ id: row.id })
            .first('id');
          if (clash) throw ApplicationFailure.nonRetryable('duplicate partner_transaction_id', DUPLICATE_PARTNER_TRANSACTION_ID);
          try {
            await deps.ledger.postPendingTransfer(
              { pending_transfer_id: row.pending_transfer_id, idempotency_key: input.idempotency_key },
              trx,
            );
          } catch (error) {
            if (error instanceof DomainError && error.reason === 'PENDING_TRANSFER_EXPIRED') {
              throw ApplicationFailure.nonRetryable('pre-transfer expired', PRE_TRANSFER_EXPIRED);
            }
            throw error;
          }
          await trx('pre_transfers').where({ id: row.id }).update({
            state: 'confirmed',
            partner_transaction_id: input.partner_transaction_id,
            fund_transfer_id: input.fund_transfer_id,
            confirmed_at: trx.fn.now(),
          });
          return { fund_transfer_id: input.fund_transfer_id };
        });
      } catch (error) {
        if (isUniqueViolation(error)) {
          throw ApplicationFailure.nonRetryable('duplicate partner_transaction_id', DUPLICATE_PARTNER_TRANSACTION_ID);
        }
        throw error;
      }
    },

    /** Voids the hold (the amount returns to the partner float) and marks the row expired. Repeats are no-ops. */
    async voidPreTransfer(input: { pre_transfer_id: string; idempotency_key: string }): Promise<void> {
      await deps.database.transaction(async (trx) => {
        const row = await trx('pre_transfers').where({ id: input.pre_transfer_id }).forUpdate().first();
        if (!row || row.state !== 'pending') return;
        try {
          await deps.ledger.voidPendingTransfer(
            { pending_transfer_id: row.pending_transfer_id, idempotency_key: input.idempotency_key },
            trx,
          );
        } catch (error) {
          if (!(error instanceof DomainError && error.reason === 'PENDING_TRANSFER_ALREADY_VOIDED')) throw error;
        }
        await trx('pre_transfers').where({ id: row.id }).update({ state: 'expired', expired_at: trx.fn.now() });
      });
    },
  };
}
