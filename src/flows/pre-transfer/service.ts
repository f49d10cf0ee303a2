/**
 * TransferService (Area A, platform decisions §6): partner access tokens, pre-transfers held on the partner float,
 * their confirmation through the PreTransferWorkflow's `confirm` Update, queries answered from the `pre_transfers`
 * table.
 *
 * Who may move a partner's money: the partner itself, through `Gateway` (gateway.ts verifies its access token and
 * RSA2 signature and answers with the platform's signature), or an internal service whose credential is bound to
 * that partner (`partner:<id>`), through the typed CreatePreTransfer / ConfirmPreTransfer / QueryTransfer. A confirm
 * is recorded (what was verified, by whom) before its Update is sent, and the activity that posts the hold moves
 * money only for a recorded one.
 *
 * Errors of the typed RPCs: the reasons of PRE_TRANSFER_REASONS (contract.ts), PERMISSION_DENIED (a caller not bound
 * to the partner), UNAUTHENTICATED (an inactive partner) and VALIDATION_FAILED. The gateway answers them as the
 * documented error_code / error_desc (area-a.ts).
 */
import { create } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { WorkflowExecutionAlreadyStartedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { createHash, randomBytes } from 'node:crypto';
import { COMMON_REASONS, DomainError, reasonError } from '../../errors';
import { PreTransferSchema, PreTransferState, type PreTransfer, type TransferService } from '../../gen/payments/transfer/v1/transfer_pb';
import { changeAwareCache } from '../../auth-changes';
import { isCurrency } from '../../money';
import { authenticatePartner, findUserByPhone, getPartner, getUser, normalizePhone, type Partner, type User } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { callerOf, mayActFor } from '../../rpc/caller';
import { clientAddressOf } from '../../rpc/client-address';
import { startWorkflow } from '../../temporal/client';
import { withRequestDeadline } from '../../temporal/deadline';
import { domainErrorFromFailure } from '../../temporal/failures';
import { preTransferWorkflow } from '../../../workflows/pre-transfer';
import { findReceiverWallet, holdPreTransfer, releaseUnstartedPreTransfer } from './activities';
import { confirmPreTransferUpdate, PRE_TRANSFER_REASONS, type PreTransferReason } from './contract';
import { accessTokenKey, createAccessTokenVerifier, issueAccessToken } from './partner-tokens';
import { createGateway, type PreTransferOperations } from './gateway';
import { findPreTransfer, insertPreTransfer, isExpired, markWorkflowStarted, recordConfirmRequest, type PreTransferRow } from './store';

const ALPHANUMERIC_64 = /^[A-Za-z0-9]{1,64}$/;
/** Most active partners kept in a process's partner cache. */
const PARTNER_CACHE_MAX = 10_000;
/** User ids are PostgreSQL bigserial values. */
const MAX_USER_ID = 9_223_372_036_854_775_807n;

const unauthenticated = () => reasonError(COMMON_REASONS, 'UNAUTHENTICATED', 'no valid partner credential');
const refuse = (reason: PreTransferReason, detail?: string, fields?: Record<string, string[]>) =>
  reasonError(PRE_TRANSFER_REASONS, reason, detail, fields);

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

  /** Starts the pre-transfer's workflow (a start that already happened counts), within the request deadline. */
  async function startPreTransferWorkflow(id: string, ttl_seconds: number): Promise<void> {
    try {
      await withRequestDeadline(deps, () =>
        startWorkflow(deps.temporal, preTransferWorkflow, {
          taskQueue: deps.temporal.taskQueue,
          workflowId: id,
          args: [{ pre_transfer_id: id, ttl_seconds }],
        }),
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
  async function ensureStarted(row: PreTransferRow): Promise<void> {
    if (row.workflow_started_at) return;
    // The workflow's timer ends at the row's expiry, not a full lifetime from now.
    const remaining_seconds = Math.max(1, Math.ceil((new Date(row.expires_at).getTime() - Date.now()) / 1000));
    try {
      await startPreTransferWorkflow(row.id, Math.min(row.ttl_seconds, remaining_seconds));
    } catch {
      throw reasonError(COMMON_REASONS, 'UNAVAILABLE', 'pre-transfer workflow not started');
    }
    if (!(await markWorkflowStarted(deps.database, row.id))) throw reasonError(COMMON_REASONS, 'UNAVAILABLE', 'pre-transfer released meanwhile');
  }

  /** The flow's operations, for a partner whose own proof (or a credential bound to it) was verified. */
  const operations: PreTransferOperations = {
    async partnerOfToken(token) {
      const partnerId = await partnerIdOfToken(token);
      return partnerId ? activePartner(partnerId) : undefined;
    },

    async create(partner, request) {
      const currency = request.currency;
      if (currency !== 'USD' || !isCurrency(currency)) throw refuse('CURRENCY_NOT_ALLOWED', 'only USD', { currency: ['only USD is allowed'] });
      const amountUnits = request.amount_units;
      const print = fingerprint({ receiver_id: request.receiver_id, sender_name: request.sender_name, amount_units: amountUnits, currency });
      const duplicate = () => refuse('DUPLICATE_OUT_TRADE_NO', 'out_trade_no sent before with other fields', { out_trade_no: ['duplicate'] });
      const existing = await findPreTransfer(deps.database, { partner_id: partner.id, out_trade_no: request.out_trade_no });
      if (existing) {
        if (existing.request_fingerprint !== print) throw duplicate();
        await ensureStarted(existing);
        return existing;
      }

      const receiver = await findReceiver(deps, request.receiver_id);
      if (!receiver || receiver.status !== 'active' || !receiver.eligible) throw refuse('RECEIVER_NOT_ELIGIBLE');
      // A USD user's own wallet (opened with the user) is the USD wallet: no ledger lookup for it.
      const walletAccountId =
        receiver.currency === 'USD' && receiver.wallet_account_id ? receiver.wallet_account_id : (await findReceiverWallet(deps, receiver.id))?.id;
      if (!walletAccountId) throw refuse('RECEIVER_NOT_ELIGIBLE', 'receiver has no USD wallet');

      const id = `PT${randomBytes(16).toString('hex').toUpperCase()}`;
      const ttl = deps.config.PRE_TRANSFER_TTL_SECONDS;
      let row: PreTransferRow;
      try {
        row = await deps.database.transaction(async (trx) => {
          const pending = await holdPreTransfer(deps, trx, {
            pre_transfer_id: id,
            partner_id: partner.id,
            out_trade_no: request.out_trade_no,
            float_account_id: partner.float_account_id,
            wallet_account_id: walletAccountId,
            amount_units: amountUnits,
            ttl_seconds: ttl,
          });
          return insertPreTransfer(trx, {
            id,
            partner_id: partner.id,
            out_trade_no: request.out_trade_no,
            request_fingerprint: print,
            receiver_id: request.receiver_id,
            receiver_user_id: receiver.id,
            receiver_name: receiver.full_name.slice(0, 96),
            sender_name: request.sender_name,
            amount_units: amountUnits,
            currency,
            pending_transfer_id: pending.id,
            ttl_seconds: ttl,
          });
        });
      } catch (error) {
        if ((error as { code?: string }).code === '23505') {
          // A concurrent create with the same out_trade_no won the race: answer as for a repeat.
          const winner = await findPreTransfer(deps.database, { partner_id: partner.id, out_trade_no: request.out_trade_no });
          if (winner && winner.request_fingerprint === print) {
            await ensureStarted(winner);
            return winner;
          }
          throw duplicate();
        }
        throw error;
      }
      // Started after the commit: no row lock or pool connection is held while Temporal is called. When the start
      // fails (Temporal down, the deadline passed), nothing would ever confirm or void the hold: it is released and
      // the row forgotten, so the partner's retry with the same out_trade_no creates the pre-transfer afresh.
      try {
        await startPreTransferWorkflow(id, ttl);
      } catch (error) {
        await releaseUnstartedPreTransfer(deps, id);
        deps.logger.warn({ pre_transfer_id: id, err: (error as Error).message }, 'pre-transfer workflow not started; hold released');
        throw reasonError(COMMON_REASONS, 'UNAVAILABLE', 'pre-transfer workflow not started');
      }
      if (!(await markWorkflowStarted(deps.database, id))) throw reasonError(COMMON_REASONS, 'UNAVAILABLE', 'pre-transfer released meanwhile');
      return row;
    },

    async confirm(partner, request) {
      if (!ALPHANUMERIC_64.test(request.pre_transfer_id)) throw refuse('PRE_TRANSFER_NOT_FOUND');
      // What was verified is recorded before the Update is sent (in the statement that reads the row): the activity
      // that posts the hold moves money only for a recorded confirm, so an Update sent to Temporal by anyone else
      // posts nothing.
      const row = await recordConfirmRequest(deps.database, {
        id: request.pre_transfer_id,
        partner_id: partner.id,
        partner_transaction_id: request.partner_transaction_id,
        body_sha256: request.body_sha256,
        credential_id: request.credential_id,
      });
      if (!row) throw refuse('PRE_TRANSFER_NOT_FOUND');
      // Answered from the row without a Temporal round trip; the workflow's validator owns both and re-checks them.
      if (row.state === 'confirmed') throw refuse('PRE_TRANSFER_USED');
      if (isExpired(row)) throw refuse('PRE_TRANSFER_EXPIRED');
      // A partner_transaction_id used before is refused by postPreTransfer (under the row lock and the unique index)
      // and comes back as the update's failure below: no query of its own on the way to every confirm.
      const handle = deps.temporal.client.workflow.getHandle(row.id);
      let confirmed: { fund_transfer_id: string };
      try {
        confirmed = await withRequestDeadline(deps, () =>
          handle.executeUpdate(confirmPreTransferUpdate, { args: [{ partner_transaction_id: request.partner_transaction_id }] }),
        );
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
      // The update answers once postPreTransfer committed; the row's other fields never change after creation.
      return { ...row, state: 'confirmed', fund_transfer_id: confirmed.fund_transfer_id };
    },

    async query(partner, request) {
      const row = await findPreTransfer(deps.database, { partner_id: partner.id, out_trade_no: request.out_trade_no });
      if (!row) throw refuse('TRANSFER_NOT_FOUND');
      if (row.state !== 'confirmed' && isExpired(row)) throw refuse('PRE_TRANSFER_EXPIRED');
      return row;
    },
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
    /**
     * A1. Failed attempts are counted per partner id and per client address (src/abuse): past the limit every
     * attempt, right or wrong, answers RATE_LIMITED until the window ends, for known and unknown ids alike.
     * @throws DomainError UNAUTHENTICATED, RATE_LIMITED
     */
    async issueAccessToken(request, context) {
      const address = clientAddressOf(context);
      const attempt = await deps.abuse.beginAttempt('partner_token', request.partnerId, address);
      let partner;
      try {
        partner =
          request.partnerId && request.partnerSecretKey && request.userName && request.password
            ? await deps.abuse.hashing(() =>
                authenticatePartner(deps.database, {
                  partner_id: request.partnerId,
                  partner_secret_key: request.partnerSecretKey,
                  user_name: request.userName,
                  password: request.password,
                }),
                context.signal,
              )
            : undefined;
      } catch (error) {
        await attempt.withdrawn();
        throw error;
      }
      if (!partner) {
        await attempt.failed();
        throw unauthenticated();
      }
      await attempt.succeeded();
      const expireIn = deps.config.ACCESS_TOKEN_TTL_SECONDS;
      return { accessToken: await issueAccessToken(key, partner.id, expireIn), expireInSeconds: BigInt(expireIn) };
    },

    /** A2, whole: see gateway.ts. Never throws for the partner's mistakes: they are answers. */
    gateway: createGateway(deps, operations),

    async createPreTransfer(request, context) {
      const partner = await boundPartner(context, request.partnerId);
      const row = await operations.create(partner, {
        out_trade_no: request.outTradeNo,
        receiver_id: request.receiverId,
        sender_name: request.senderName,
        amount_units: request.amountUnits,
        currency: request.currency,
      });
      return { preTransfer: toPreTransfer(row) };
    },

    async confirmPreTransfer(request, context) {
      const partner = await boundPartner(context, request.partnerId);
      const caller = callerOf(context)!;
      const row = await operations.confirm(partner, {
        pre_transfer_id: request.preTransferId,
        partner_transaction_id: request.partnerTransactionId,
        // No signed body on this path: the digest of what the bound caller sent, and who it was.
        body_sha256: createHash('sha256').update(JSON.stringify([request.partnerId, request.preTransferId, request.partnerTransactionId])).digest('hex'),
        credential_id: caller.id,
      });
      return { preTransfer: toPreTransfer(row) };
    },

    async queryTransfer(request, context) {
      const partner = await boundPartner(context, request.partnerId);
      return { preTransfer: toPreTransfer(await operations.query(partner, { out_trade_no: request.outTradeNo })) };
    },
  };
}
