/**
 * TransferService (Area A, platform decisions §6): who a call acts for, and the pre-transfer flow's operations.
 * create holds the amount on the partner float and starts the PreTransferWorkflow, confirm records the verified
 * request and sends the workflow's `confirm` Update, query answers from the `pre_transfers` table.
 *
 * Who may move a partner's money: the partner itself, through `Gateway` (gateway.ts verifies its access token and
 * RSA2 signature and answers with the platform's signature; this module gives it the active partner of a token), or
 * an internal service whose credential is bound to that partner (`partner:<id>`), through the typed
 * CreatePreTransfer / ConfirmPreTransfer / QueryTransfer. A confirm is recorded (what was verified, by whom) before
 * its Update is sent, and the activity that posts the hold moves money only for a recorded one.
 *
 * Errors of the typed RPCs: TRANSFER_SERVICE_REASONS (./reasons.ts): the reasons of PRE_TRANSFER_REASONS
 * (contract.ts), PERMISSION_DENIED (a caller not bound to the partner), UNAUTHENTICATED (an inactive partner),
 * VALIDATION_FAILED, UNAVAILABLE and DEADLINE_EXCEEDED (Temporal). The gateway answers them as the documented
 * error_code / error_desc (area-a.ts).
 */
import { create } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { WorkflowExecutionAlreadyStartedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { createHash, randomBytes } from 'node:crypto';
import { changeAwareCache } from '../../auth-changes';
import { journaled, listEvents, type RequestJournal } from '../../events';
import { COMMON_REASONS, DomainError, reasonError, type FieldViolations } from '../../errors';
import { problem } from '../../field-problems';
import { PreTransferSchema, PreTransferState, type PreTransfer, type TransferService } from '../../gen/payments/transfer/v1/transfer_pb';
import { isCurrency } from '../../money';
import { findUserByPhone, getPartner, getUser, normalizePhone, type Partner, type User } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { callerOf, mayActFor } from '../../rpc/caller';
import { clientAddressOf } from '../../rpc/client-address';
import { startWorkflow } from '../../temporal/client';
import { withRequestDeadline } from '../../temporal/deadline';
import { paymentSearchAttributes } from '../../temporal/search-attributes';
import { domainErrorFromFailure } from '../../temporal/failures';
import { preTransferWorkflow } from '../../../workflows/pre-transfer';
import { findReceiverWallet, holdPreTransfer, releaseUnstartedPreTransfer } from './activities';
import { confirmPreTransferUpdate, PRE_TRANSFER_REASONS, type PreTransferReason } from './contract';
import { accessTokenKey, createAccessTokenVerifier, createGateway, issuePartnerToken, type PreTransferOperations } from './gateway';
import { findPreTransfer, insertPreTransfer, isExpired, markWorkflowStarted, recordConfirmRequest, type PreTransferRow } from './store';

// ---- The operations ----

const ALPHANUMERIC_64 = /^[A-Za-z0-9]{1,64}$/;
/** User ids are PostgreSQL bigserial values. */
const MAX_USER_ID = 9_223_372_036_854_775_807n;

const refuse = (reason: PreTransferReason, detail?: string, fields?: FieldViolations) => reasonError(PRE_TRANSFER_REASONS, reason, detail, fields);
const unavailable = (detail: string) => reasonError(COMMON_REASONS, 'UNAVAILABLE', detail);
const duplicate = () => refuse('DUPLICATE_OUT_TRADE_NO', 'out_trade_no sent before with other fields', { out_trade_no: [problem('taken', 'out_trade_no')] });

/** A create's fields (amount in minor units). */
export interface CreateInput {
  out_trade_no: string;
  receiver_id: string;
  sender_name: string;
  amount_units: bigint;
  currency: string;
}

/** A confirm's fields, and what was verified: `body_sha256`, and the bound credential on the typed path. */
export interface ConfirmInput {
  pre_transfer_id: string;
  partner_transaction_id: string;
  body_sha256: string;
  credential_id?: string;
}

function fingerprint(input: { receiver_id: string; sender_name: string; amount_units: bigint; currency: string }): string {
  return createHash('sha256')
    .update(JSON.stringify([input.receiver_id, input.sender_name, input.amount_units.toString(), input.currency]))
    .digest('hex');
}

/** Receiver by platform user id, else by phone in local or international form (§6). */
async function findReceiver(deps: PlatformDeps, receiver_id: string): Promise<User | undefined> {
  if (/^[1-9]\d{0,18}$/.test(receiver_id) && BigInt(receiver_id) <= MAX_USER_ID) {
    const user = await getUser(deps.database, receiver_id);
    if (user) return user;
  }
  const phone = normalizePhone(receiver_id);
  return phone ? findUserByPhone(deps.database, phone) : undefined;
}

/**
 * The eligible receiver and its USD wallet account.
 * @throws DomainError RECEIVER_NOT_ELIGIBLE (unknown, inactive, marked not eligible, or without a USD wallet)
 */
async function eligibleReceiver(deps: PlatformDeps, receiver_id: string): Promise<{ receiver: User; wallet_account_id: string }> {
  const receiver = await findReceiver(deps, receiver_id);
  if (!receiver || receiver.status !== 'active' || !receiver.eligible) throw refuse('RECEIVER_NOT_ELIGIBLE');
  // A USD user's own wallet (opened with the user) is the USD wallet: no ledger lookup for it.
  const wallet_account_id =
    receiver.currency === 'USD' && receiver.wallet_account_id ? receiver.wallet_account_id : (await findReceiverWallet(deps, receiver.id))?.id;
  if (!wallet_account_id) throw refuse('RECEIVER_NOT_ELIGIBLE', 'receiver has no USD wallet');
  return { receiver, wallet_account_id };
}

/**
 * Starts the pre-transfer's workflow (a start that already happened counts), within the request deadline, with the
 * payment's search attributes (owner, kind, amount, currency, status `pending`) from its start.
 */
async function startPreTransferWorkflow(
  deps: PlatformDeps,
  transfer: { id: string; partner_id: string; amount_units: bigint | string; currency: string },
  ttl_seconds: number,
): Promise<void> {
  const { id } = transfer;
  const search = paymentSearchAttributes({ owner: { partner_id: transfer.partner_id }, kind: 'pre_transfer', amount_units: BigInt(transfer.amount_units), currency: transfer.currency, status: 'pending' });
  try {
    await withRequestDeadline(deps, () =>
      startWorkflow(deps.temporal, preTransferWorkflow, { taskQueue: deps.temporal.taskQueue, workflowId: id, args: [{ pre_transfer_id: id, ttl_seconds }], ...search }),
    );
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/**
 * A repeat of a create answers its pre-transfer only once its workflow runs: it starts the workflow itself when the
 * first request has not (yet), so the answer never names a pre-transfer that a failed first start then releases.
 * @throws DomainError UNAVAILABLE when the workflow cannot be started or the first request released the row
 */
async function ensureStarted(deps: PlatformDeps, row: PreTransferRow): Promise<PreTransferRow> {
  if (row.workflow_started_at) return row;
  // The workflow's timer ends at the row's expiry, not a full lifetime from now.
  const remaining_seconds = Math.max(1, Math.ceil((new Date(row.expires_at).getTime() - Date.now()) / 1000));
  try {
    await startPreTransferWorkflow(deps, row, Math.min(row.ttl_seconds, remaining_seconds));
  } catch {
    throw unavailable('pre-transfer workflow not started');
  }
  if (!(await markWorkflowStarted(deps.database, row.id))) throw unavailable('pre-transfer released meanwhile');
  return row;
}

/**
 * The answer to a create whose out_trade_no the partner used before: its pre-transfer when the fields are the same.
 * @throws DomainError DUPLICATE_OUT_TRADE_NO (other fields), UNAVAILABLE (see ensureStarted)
 */
async function repeatOf(deps: PlatformDeps, existing: PreTransferRow, print: string): Promise<PreTransferRow> {
  if (existing.request_fingerprint !== print) throw duplicate();
  return ensureStarted(deps, existing);
}

/** The hold on the partner float and the pre_transfers row, in one database transaction. */
function holdAndRecord(
  deps: PlatformDeps,
  partner: Partner,
  request: CreateInput & { currency: 'USD' },
  row: { id: string; print: string; receiver: User; wallet_account_id: string; ttl: number },
): Promise<PreTransferRow> {
  return deps.database.transaction(async (trx) => {
    const pending = await holdPreTransfer(deps, trx, {
      pre_transfer_id: row.id,
      partner_id: partner.id,
      out_trade_no: request.out_trade_no,
      float_account_id: partner.float_account_id,
      wallet_account_id: row.wallet_account_id,
      amount_units: request.amount_units,
      ttl_seconds: row.ttl,
    });
    return insertPreTransfer(trx, {
      id: row.id,
      partner_id: partner.id,
      out_trade_no: request.out_trade_no,
      request_fingerprint: row.print,
      receiver_id: request.receiver_id,
      receiver_user_id: row.receiver.id,
      receiver_name: row.receiver.full_name.slice(0, 96),
      sender_name: request.sender_name,
      amount_units: request.amount_units,
      currency: request.currency,
      pending_transfer_id: pending.id,
      ttl_seconds: row.ttl,
    });
  });
}

/**
 * create.unified.fundTransfer / CreatePreTransfer: holds the amount on the partner float for the receiver and starts
 * the pre-transfer's workflow. A repeat with the same fields answers the same pre-transfer.
 * @throws DomainError CURRENCY_NOT_ALLOWED, DUPLICATE_OUT_TRADE_NO, RECEIVER_NOT_ELIGIBLE, INSUFFICIENT_PARTNER_BALANCE,
 *   UNAVAILABLE (the workflow did not start: the hold is released, and a retry creates the pre-transfer afresh)
 */
export async function createPreTransfer(deps: PlatformDeps, partner: Partner, request: CreateInput): Promise<PreTransferRow> {
  const { currency } = request;
  if (currency !== 'USD' || !isCurrency(currency)) throw refuse('CURRENCY_NOT_ALLOWED', 'only USD', { currency: [problem('currency')] });
  const print = fingerprint(request);
  const byOutTradeNo = { partner_id: partner.id, out_trade_no: request.out_trade_no };
  const existing = await findPreTransfer(deps.database, byOutTradeNo);
  if (existing) return repeatOf(deps, existing, print);
  const { receiver, wallet_account_id } = await eligibleReceiver(deps, request.receiver_id);
  const id = `PT${randomBytes(16).toString('hex').toUpperCase()}`;
  const ttl = deps.config.PRE_TRANSFER_TTL_SECONDS;
  let row: PreTransferRow;
  try {
    row = await holdAndRecord(deps, partner, { ...request, currency }, { id, print, receiver, wallet_account_id, ttl });
  } catch (error) {
    if ((error as { code?: string }).code !== '23505') throw error;
    // A concurrent create with the same out_trade_no won the race: answer as for a repeat.
    const winner = await findPreTransfer(deps.database, byOutTradeNo);
    if (!winner) throw duplicate();
    return repeatOf(deps, winner, print);
  }
  // Started after the commit: no row lock or pool connection is held while Temporal is called. When the start
  // fails (Temporal down, the deadline passed), nothing would ever confirm or void the hold: it is released and
  // the row forgotten, so the partner's retry with the same out_trade_no creates the pre-transfer afresh.
  try {
    await startPreTransferWorkflow(deps, { id, partner_id: partner.id, amount_units: request.amount_units, currency }, ttl);
  } catch (error) {
    await releaseUnstartedPreTransfer(deps, id);
    deps.logger.warn({ pre_transfer_id: id, err: (error as Error).message }, 'pre-transfer workflow not started; hold released');
    throw unavailable('pre-transfer workflow not started');
  }
  if (!(await markWorkflowStarted(deps.database, id))) throw unavailable('pre-transfer released meanwhile');
  return row;
}

/**
 * Sends the `confirm` Update of a recorded confirm request within the request deadline. A refused post comes back as
 * the activity's failure, read as the flow's DomainError.
 * @throws DomainError of PRE_TRANSFER_REASONS, DEADLINE_EXCEEDED; the Temporal client's error otherwise
 */
async function sendConfirm(deps: PlatformDeps, row: PreTransferRow, partner_transaction_id: string): Promise<{ fund_transfer_id: string }> {
  const handle = deps.temporal.client.workflow.getHandle(row.id);
  try {
    return await withRequestDeadline(deps, () => handle.executeUpdate(confirmPreTransferUpdate, { args: [{ partner_transaction_id }] }));
  } catch (error) {
    const refused = domainErrorFromFailure(error, PRE_TRANSFER_REASONS);
    if (refused) throw refused;
    // The deadline passed: the partner retries; a confirm that went through meanwhile answers USED and
    // query.fundTransfer then tells SUCCESS.
    if (error instanceof DomainError && error.reason === 'DEADLINE_EXCEEDED') throw error;
    if (!(error instanceof WorkflowUpdateFailedError)) {
      // The workflow may have completed meanwhile (confirmed by another call, or expired): answer from the row.
      const now = await findPreTransfer(deps.database, { id: row.id });
      if (now?.state === 'confirmed') throw refuse('PRE_TRANSFER_USED');
      if (now && isExpired(now)) throw refuse('PRE_TRANSFER_EXPIRED');
    }
    throw error;
  }
}

/**
 * confirm.fundTransfer / ConfirmPreTransfer: records what was verified (in the statement that reads the row), then
 * sends the workflow's `confirm` Update; the activity that posts the hold moves money only for a recorded confirm, so
 * an Update sent to Temporal by anyone else posts nothing.
 * @throws DomainError PRE_TRANSFER_NOT_FOUND, PRE_TRANSFER_USED, PRE_TRANSFER_EXPIRED, DUPLICATE_PARTNER_TRANSACTION_ID,
 *   DEADLINE_EXCEEDED
 */
export async function confirmPreTransfer(deps: PlatformDeps, partner: Partner, request: ConfirmInput, journal?: RequestJournal): Promise<PreTransferRow> {
  if (!ALPHANUMERIC_64.test(request.pre_transfer_id)) throw refuse('PRE_TRANSFER_NOT_FOUND');
  const row = await recordConfirmRequest(deps.database, {
    id: request.pre_transfer_id,
    partner_id: partner.id,
    partner_transaction_id: request.partner_transaction_id,
    body_sha256: request.body_sha256,
    credential_id: request.credential_id,
  });
  if (!row) throw refuse('PRE_TRANSFER_NOT_FOUND');
  // The pre-transfer is the partner's own (recordConfirmRequest found it by partner): from here on this request,
  // refused or not, is filed under it.
  if (journal) journal.reference = row.id;
  // Answered from the row without a Temporal round trip; the workflow's validator owns both and re-checks them.
  if (row.state === 'confirmed') throw refuse('PRE_TRANSFER_USED');
  if (isExpired(row)) throw refuse('PRE_TRANSFER_EXPIRED');
  // A partner_transaction_id used before is refused by postPreTransfer (under the row lock and the unique index)
  // and comes back as the update's failure: no query of its own on the way to every confirm.
  const confirmed = await sendConfirm(deps, row, request.partner_transaction_id);
  // The update answers once postPreTransfer committed; the row's other fields never change after creation.
  return { ...row, state: 'confirmed', fund_transfer_id: confirmed.fund_transfer_id };
}

/**
 * query.fundTransfer / QueryTransfer: the partner's pre-transfer of this out_trade_no.
 * @throws DomainError TRANSFER_NOT_FOUND, PRE_TRANSFER_EXPIRED (expired before it was confirmed)
 */
export async function queryPreTransfer(deps: PlatformDeps, partner: Partner, request: { out_trade_no: string }): Promise<PreTransferRow> {
  const row = await findPreTransfer(deps.database, { partner_id: partner.id, out_trade_no: request.out_trade_no });
  if (!row) throw refuse('TRANSFER_NOT_FOUND');
  if (row.state !== 'confirmed' && isExpired(row)) throw refuse('PRE_TRANSFER_EXPIRED');
  return row;
}

// ---- The service ----

/** Most active partners kept in a process's partner cache. */
const PARTNER_CACHE_MAX = 10_000;

const unauthenticated = () => reasonError(COMMON_REASONS, 'UNAUTHENTICATED', 'no valid partner credential');

function toPreTransfer(row: PreTransferRow): PreTransfer {
  const state =
    row.state === 'confirmed' ? PreTransferState.CONFIRMED : isExpired(row) ? PreTransferState.EXPIRED : PreTransferState.PENDING;
  return create(PreTransferSchema, {
    preTransferId: row.id,
    outTradeNo: row.out_trade_no,
    receiverId: row.receiver_id,
    receiverName: row.receiver_name,
    amountUnits: BigInt(row.amount_units),
    currency: row.currency,
    expireInSeconds: BigInt(row.ttl_seconds),
    fundTransferId: row.fund_transfer_id ?? '',
    state,
  });
}

export function createTransferService(deps: PlatformDeps): ServiceImpl<typeof TransferService> {
  const key = accessTokenKey(deps.keys.dataKey);
  const partnerIdOfToken = createAccessTokenVerifier(key);
  // Active partners by id, for AUTH_CACHE_SECONDS: a gateway call reads its partner once, at its token. A
  // suspension announced through `authChanges` empties the cache at once in every process, so it still applies on
  // the partner's very next request.
  const partners = changeAwareCache<Partner>(deps.authChanges, { ttlSeconds: deps.config.AUTH_CACHE_SECONDS, max: PARTNER_CACHE_MAX });
  const activePartner = async (partner_id: string): Promise<Partner | undefined> => {
    const partner = await partners.get(partner_id, () => getPartner(deps.database, partner_id), (found) => found.status === 'active');
    return partner?.status === 'active' ? partner : undefined;
  };
  /** The flow's operations, for a partner whose own proof (or a credential bound to it) was verified. */
  const operations: PreTransferOperations = {
    partnerOfToken: async (token) => {
      const partnerId = await partnerIdOfToken(token);
      return partnerId ? activePartner(partnerId) : undefined;
    },
    create: (partner, request, context) =>
      journaled(
        deps,
        { owner_kind: 'partner', owner_id: partner.id, action: 'area-a.create_pre_transfer', idempotency_key: request.out_trade_no, client_address: context && clientAddressOf(context) },
        () => createPreTransfer(deps, partner, request),
        (row) => row.id,
      ),
    confirm: (partner, request, context) =>
      journaled(
        deps,
        {
          owner_kind: 'partner',
          owner_id: partner.id,
          action: 'area-a.confirm_pre_transfer',
          idempotency_key: request.partner_transaction_id,
          client_address: context && clientAddressOf(context),
          names: request.pre_transfer_id,
        },
        (journal) => confirmPreTransfer(deps, partner, request, journal),
      ),
    query: (partner, request) => queryPreTransfer(deps, partner, request),
    events: (partner, request) => listEvents(deps.database, { owner: { type: 'partner', id: partner.id }, after: request.after, limit: request.limit }),
  };
  /**
   * The partner a typed call acts for: only a caller whose credential is bound to it (never the façade's or an
   * operator's), and only while the partner is active.
   * @throws DomainError PERMISSION_DENIED, UNAUTHENTICATED
   */
  async function boundPartner(context: HandlerContext, partner_id: string): Promise<Partner> {
    if (!mayActFor(callerOf(context), { kind: 'partner', id: partner_id })) {
      throw reasonError(COMMON_REASONS, 'PERMISSION_DENIED', 'the credential is not bound to this partner');
    }
    const partner = await activePartner(partner_id);
    if (!partner) throw unauthenticated();
    return partner;
  }

  return {
    issueAccessToken: (request, context) => issuePartnerToken(deps, key, request, context),
    /** A2, whole: see gateway.ts. Never throws for the partner's mistakes: they are answers. */
    gateway: createGateway(deps, operations),
    async createPreTransfer(request, context) {
      const partner = await boundPartner(context, request.partnerId);
      const { outTradeNo: out_trade_no, receiverId: receiver_id, senderName: sender_name, amountUnits: amount_units, currency } = request;
      return { preTransfer: toPreTransfer(await operations.create(partner, { out_trade_no, receiver_id, sender_name, amount_units, currency }, context)) };
    },
    async confirmPreTransfer(request, context) {
      const partner = await boundPartner(context, request.partnerId);
      const row = await operations.confirm(partner, {
        pre_transfer_id: request.preTransferId,
        partner_transaction_id: request.partnerTransactionId,
        // No signed body on this path: the digest of what the bound caller sent, and who it was.
        body_sha256: createHash('sha256').update(JSON.stringify([request.partnerId, request.preTransferId, request.partnerTransactionId])).digest('hex'),
        credential_id: callerOf(context)!.id,
      }, context);
      return { preTransfer: toPreTransfer(row) };
    },
    async queryTransfer(request, context) {
      const partner = await boundPartner(context, request.partnerId);
      return { preTransfer: toPreTransfer(await operations.query(partner, { out_trade_no: request.outTradeNo })) };
    },
  };
}
