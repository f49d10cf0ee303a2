/**
 * LedgerService: the ledger over Connect. Translation only — every rule lives in the ledger's modules; its
 * DomainErrors (ACCOUNT_NOT_FOUND, INSUFFICIENT_FUNDS, IDEMPOTENCY_CONFLICT, …) reach the client through the
 * error interceptor as a ConnectError with an ErrorDetail `reason`.
 *
 * Amounts are int64 minor units; timestamps RFC 3339 strings; metadata JSON object text.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { invalidFields } from '../errors';
import type { GetBalancesRequest, LedgerService } from '../gen/payments/ledger/v1/ledger_pb';
import type { Account, AccountOwnerType, Ledger, LedgerTransaction, PendingTransfer } from './types';
import { OWNER_TYPES } from './validate';

function parseMetadata(text: string): Record<string, unknown> {
  if (text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalidFields({ metadata_json: ['must be a JSON object'] });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidFields({ metadata_json: ['must be a JSON object'] });
  }
  return value as Record<string, unknown>;
}

function metadataJson(metadata: Record<string, unknown>): string {
  return JSON.stringify(metadata, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
}

function accountMessage(account: Account) {
  return {
    id: account.id,
    ownerType: account.owner_type,
    ownerId: account.owner_id,
    currency: account.currency,
    kind: account.kind,
    allowsNegative: account.allows_negative,
    postedUnits: account.posted_units,
    heldUnits: account.held_units,
    availableUnits: account.available_units,
    createdAt: account.created_at.toISOString(),
  };
}

function transactionMessage(transaction: LedgerTransaction) {
  return {
    id: transaction.id,
    idempotencyKey: transaction.idempotency_key,
    description: transaction.description,
    postings: transaction.postings.map((posting) => ({
      accountId: posting.account_id,
      amountUnits: posting.amount_units,
      currency: posting.currency,
    })),
    metadataJson: metadataJson(transaction.metadata),
    createdAt: transaction.created_at.toISOString(),
  };
}

function pendingMessage(pending: PendingTransfer) {
  return {
    id: pending.id,
    idempotencyKey: pending.idempotency_key,
    debitAccountId: pending.debit_account_id,
    creditAccountId: pending.credit_account_id,
    currency: pending.currency,
    amountUnits: pending.amount_units,
    state: pending.state,
    expiresAt: pending.expires_at ? pending.expires_at.toISOString() : '',
    postedTransactionId: pending.posted_transaction_id ?? '',
    metadataJson: metadataJson(pending.metadata),
    createdAt: pending.created_at.toISOString(),
  };
}

/** Balances of the accounts named, or of one owner's accounts: exactly one of the two. */
async function getBalances(ledger: Ledger, request: GetBalancesRequest) {
  const byOwner = request.ownerType !== '' || request.ownerId !== '';
  if (byOwner === (request.accountIds.length > 0)) {
    throw invalidFields({ account_ids: ['give either account_ids or owner_type and owner_id'] });
  }
  if (!byOwner) return { accounts: (await Promise.all(request.accountIds.map((id) => ledger.getAccount(id)))).map(accountMessage) };
  if (!OWNER_TYPES.includes(request.ownerType as AccountOwnerType)) {
    throw invalidFields({ owner_type: [`must be one of ${OWNER_TYPES.join(', ')}`] });
  }
  if (request.ownerId === '') throw invalidFields({ owner_id: ['is required'] });
  return { accounts: (await ledger.accountsOf(request.ownerType as AccountOwnerType, request.ownerId)).map(accountMessage) };
}

/** Builds the LedgerService implementation over the platform's ledger. */
export function createLedgerService(deps: { ledger: Ledger }): ServiceImpl<typeof LedgerService> {
  const { ledger } = deps;
  const resolve = (request: { pendingTransferId: string; idempotencyKey: string }) => ({
    pending_transfer_id: request.pendingTransferId,
    idempotency_key: request.idempotencyKey,
  });
  return {
    async transfer(request) {
      const transaction = await ledger.transfer({
        idempotency_key: request.idempotencyKey,
        description: request.description,
        postings: request.postings.map((posting) => ({ account_id: posting.accountId, amount_units: posting.amountUnits })),
        metadata: parseMetadata(request.metadataJson),
      });
      return { transaction: transactionMessage(transaction) };
    },
    async createPendingTransfer(request) {
      const pending = await ledger.createPendingTransfer({
        idempotency_key: request.idempotencyKey,
        debit_account_id: request.debitAccountId,
        credit_account_id: request.creditAccountId,
        amount_units: request.amountUnits,
        timeout_seconds: request.timeoutSeconds === 0 ? undefined : request.timeoutSeconds,
        description: request.description,
        metadata: parseMetadata(request.metadataJson),
      });
      return { pendingTransfer: pendingMessage(pending) };
    },
    postPendingTransfer: async (request) => ({ pendingTransfer: pendingMessage(await ledger.postPendingTransfer(resolve(request))) }),
    voidPendingTransfer: async (request) => ({ pendingTransfer: pendingMessage(await ledger.voidPendingTransfer(resolve(request))) }),
    getBalances: (request) => getBalances(ledger, request),
    async listEntries(request) {
      const entries = await ledger.entriesOf(request.accountId, {
        limit: request.limit === 0 ? undefined : request.limit,
        before_transaction_id: request.beforeTransactionId === '' ? undefined : request.beforeTransactionId,
      });
      return {
        entries: entries.map((entry) => ({
          transactionId: entry.transaction_id,
          accountId: entry.account_id,
          amountUnits: entry.amount_units,
          currency: entry.currency,
          description: entry.description,
          createdAt: entry.created_at.toISOString(),
        })),
      };
    },
    async checkInvariants() {
      const result = await ledger.check();
      return { ok: result.ok, accounts: BigInt(result.accounts), entries: BigInt(result.entries), imbalances: result.imbalances };
    },
  };
}
