/**
 * TransferService (Area A, platform decisions §6): partner access tokens, pre-transfers held on the partner float,
 * their confirmation through the PreTransferWorkflow's `confirm` Update, queries answered from the `pre_transfers`
 * table. The service object wires each RPC to the flow's operations (./operations.ts) for the partner it acts for.
 *
 * Who may move a partner's money: the partner itself, through `Gateway` (gateway.ts verifies its access token and
 * RSA2 signature and answers with the platform's signature), or an internal service whose credential is bound to
 * that partner (`partner:<id>`), through the typed CreatePreTransfer / ConfirmPreTransfer / QueryTransfer. A confirm
 * is recorded (what was verified, by whom) before its Update is sent, and the activity that posts the hold moves
 * money only for a recorded one.
 *
 * Errors of the typed RPCs: TRANSFER_SERVICE_REASONS (./reasons.ts): the reasons of PRE_TRANSFER_REASONS
 * (contract.ts), PERMISSION_DENIED (a caller not bound to the partner), UNAUTHENTICATED (an inactive partner) and
 * VALIDATION_FAILED. The gateway answers them as the documented error_code / error_desc (area-a.ts).
 */
import { create } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { createHash } from 'node:crypto';
import { changeAwareCache } from '../../auth-changes';
import { COMMON_REASONS, reasonError } from '../../errors';
import { PreTransferSchema, PreTransferState, type IssueAccessTokenRequest, type PreTransfer, type TransferService } from '../../gen/payments/transfer/v1/transfer_pb';
import { authenticatePartner, getPartner, type Partner } from '../../onboarding';
import type { PlatformDeps } from '../../platform-deps';
import { callerOf, mayActFor } from '../../rpc/caller';
import { clientAddressOf } from '../../rpc/client-address';
import { createGateway, type PreTransferOperations } from './gateway';
import { confirmPreTransfer, createPreTransfer, queryPreTransfer } from './operations';
import { accessTokenKey, createAccessTokenVerifier, issueAccessToken } from './partner-tokens';
import { isExpired, type PreTransferRow } from './store';

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

/**
 * The partner whose four A1 credentials these are, checked at the hashing pool's pace; undefined for any wrong one.
 * A fault withdraws the attempt (it counts neither way).
 */
async function partnerOfCredentials(deps: PlatformDeps, request: IssueAccessTokenRequest, context: HandlerContext, attempt: { withdrawn(): Promise<void> }): Promise<Partner | undefined> {
  if (!request.partnerId || !request.partnerSecretKey || !request.userName || !request.password) return undefined;
  try {
    return await deps.abuse.hashing(
      () =>
        authenticatePartner(deps.database, {
          partner_id: request.partnerId,
          partner_secret_key: request.partnerSecretKey,
          user_name: request.userName,
          password: request.password,
        }),
      context.signal,
    );
  } catch (error) {
    await attempt.withdrawn();
    throw error;
  }
}

/**
 * A1. Failed attempts are counted per partner id and per client address (src/abuse): past the limit every attempt,
 * right or wrong, answers RATE_LIMITED until the window ends, for known and unknown ids alike.
 * @throws DomainError UNAUTHENTICATED, RATE_LIMITED
 */
async function issuePartnerToken(deps: PlatformDeps, key: Uint8Array, request: IssueAccessTokenRequest, context: HandlerContext) {
  const attempt = await deps.abuse.beginAttempt('partner_token', request.partnerId, clientAddressOf(context));
  const partner = await partnerOfCredentials(deps, request, context, attempt);
  if (!partner) {
    await attempt.failed();
    throw unauthenticated();
  }
  await attempt.succeeded();
  const expireIn = deps.config.ACCESS_TOKEN_TTL_SECONDS;
  return { accessToken: await issueAccessToken(key, partner.id, expireIn), expireInSeconds: BigInt(expireIn) };
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
    create: (partner, request) => createPreTransfer(deps, partner, request),
    confirm: (partner, request) => confirmPreTransfer(deps, partner, request),
    query: (partner, request) => queryPreTransfer(deps, partner, request),
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
      return { preTransfer: toPreTransfer(await operations.create(partner, { out_trade_no, receiver_id, sender_name, amount_units, currency })) };
    },
    async confirmPreTransfer(request, context) {
      const partner = await boundPartner(context, request.partnerId);
      const row = await operations.confirm(partner, {
        pre_transfer_id: request.preTransferId,
        partner_transaction_id: request.partnerTransactionId,
        // No signed body on this path: the digest of what the bound caller sent, and who it was.
        body_sha256: createHash('sha256').update(JSON.stringify([request.partnerId, request.preTransferId, request.partnerTransactionId])).digest('hex'),
        credential_id: callerOf(context)!.id,
      });
      return { preTransfer: toPreTransfer(row) };
    },
    async queryTransfer(request, context) {
      const partner = await boundPartner(context, request.partnerId);
      return { preTransfer: toPreTransfer(await operations.query(partner, { out_trade_no: request.outTradeNo })) };
    },
  };
}
