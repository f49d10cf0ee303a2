/**
 * TransferService (issue 4, Area A, platform decisions §6): partner access tokens, pre-transfers held on the
 * partner float, their confirmation through the PreTransferWorkflow's `confirm` Update, queries answered from the
 * `pre_transfers` table, and the platform's RSA2 signatures of gateway responses.
 *
 * Errors (DomainError reasons, mapped to Area A codes by src/transfers/contract.ts): UNAUTHENTICATED,
 * VALIDATION_FAILED, RECEIVER_NOT_ELIGIBLE, INSUFFICIENT_PARTNER_BALANCE, DUPLICATE_OUT_TRADE_NO,
 * DUPLICATE_PARTNER_TRANSACTION_ID, PRE_TRANSFER_NOT_FOUND, PRE_TRANSFER_USED, PRE_TRANSFER_EXPIRED,
 * TRANSFER_NOT_FOUND.
 */
import { create } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { signRsa2 } from '../crypto/rsa2';
import { canonicalJson } from '../crypto/rsa2-json';
import { DomainError, invalidFields } from '../errors';
import {
  PreTransferSchema,
  PreTransferState,
  type PreTransfer,
  type TransferService,
} from '../gen/payments/transfer/v1/transfer_pb';
import { isCurrency, parseJsonLossless, type Currency } from '../money';
import { authenticatePartner, findUserByPhone, getPartner, getUser, normalizePhone, type User } from '../onboarding';
import type { PlatformDeps } from '../platform';

const ALPHANUMERIC_64 = /^[A-Za-z0-9]{1,64}$/;
/** User ids are PostgreSQL bigserial values. */
const MAX_USER_ID = 9_223_372_036_854_775_807n;
const TOKEN_AUDIENCE = 'partnerapi';
const TOKEN_ISSUER = 'payments-platform';

/** A row of `pre_transfers` (migration 004). */
export interface PreTransferRow {
  id: string;
  partner_id: string;
  out_trade_no: string;
  request_fingerprint: string;
  receiver_id: string;
  receiver_user_id: string;
  receiver_name: string;
  sender_name: string;
  amount_units: string | bigint;
  currency: Currency;
  pending_transfer_id: string;
  state: 'pending' | 'confirmed' | 'expired';
  ttl_seconds: number;
  expires_at: Date;
  partner_transaction_id: string | null;
  fund_transfer_id: string | null;
  confirmed_at: Date | null;
  created_at: Date;
}

const unauthenticated = () => new DomainError('unauthenticated', 'UNAUTHENTICATED', 'Unauthorized');
const notFound = () => new DomainError('not_found', 'PRE_TRANSFER_NOT_FOUND', 'unknown pre_transfer_id');
const used = () => new DomainError('failed_precondition', 'PRE_TRANSFER_USED', 'pre-transfer already used');
const expired = () => new DomainError('failed_precondition', 'PRE_TRANSFER_EXPIRED', 'pre-transfer expired');

/** HS256 key of the access tokens, derived from the platform data-encryption key (HKDF-SHA256). */
function tokenKey(dataKey: Buffer): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', dataKey, Buffer.alloc(0), 'area-a-access-token', 32));
}

/** True when the pre-transfer is past its lifetime or voided. */
export function isExpired(row: Pick<PreTransferRow, 'state' | 'expires_at'>, now = new Date()): boolean {
  return row.state === 'expired' || (row.state === 'pending' && row.expires_at.getTime() <= now.getTime());
}

function toPreTransfer(row: PreTransferRow): PreTransfer {
  const state =
    row.state === 'confirmed'
      ? PreTransferState.CONFIRMED
      : isExpired(row)
        ? PreTransferState.EXPIRED
        : PreTransferState.PENDING;
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

function failureType(error: unknown): string | undefined {
  let cause: unknown = error;
  for (let depth = 0; depth < 5 && cause; depth++) {
    if (cause instanceof ApplicationFailure && cause.type) return cause.type;
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

export function createTransferService(deps: PlatformDeps): ServiceImpl<typeof TransferService> {
  const key = tokenKey(deps.keys.dataKey);
  const ttlSeconds = () => deps.config.PRE_TRANSFER_TTL_SECONDS;

  async function findRow(where: Partial<PreTransferRow>): Promise<PreTransferRow | undefined> {
    return deps.database<PreTransferRow>('pre_transfers').where(where).first();
  }

  return {
    async issueAccessToken(request) {
      if (!request.partnerId || !request.partnerSecretKey || !request.userName || !request.password) throw unauthenticated();
      const partner = await authenticatePartner(deps.database, {
        partner_id: request.partnerId,
        partner_secret_key: request.partnerSecretKey,
        user_name: request.userName,
        password: request.password,
      });
      if (!partner) throw unauthenticated();
      const expireIn = deps.config.ACCESS_TOKEN_TTL_SECONDS;
      const accessToken = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(partner.id)
        .setIssuer(TOKEN_ISSUER)
        .setAudience(TOKEN_AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + expireIn)
        .setJti(randomBytes(12).toString('hex'))
        .sign(key);
      return { accessToken, expireInSeconds: BigInt(expireIn) };
    },

    async authorizeGatewayRequest(request) {
      if (!request.accessToken) throw unauthenticated();
      let partnerId: string | undefined;
      try {
        const verified = await jwtVerify(request.accessToken, key, {
          algorithms: ['HS256'],
          audience: TOKEN_AUDIENCE,
          issuer: TOKEN_ISSUER,
          requiredClaims: ['exp', 'sub'],
        });
        partnerId = verified.payload.sub;
      } catch {
        throw unauthenticated();
      }
      const partner = partnerId ? await getPartner(deps.database, partnerId) : undefined;
      if (!partner || partner.status !== 'active') throw unauthenticated();
      return { partnerId: partner.id, partnerPublicKeyPem: partner.public_key_pem };
    },

    async signGatewayResponse(request) {
      let body: unknown;
      try {
        body = parseJsonLossless(request.bodyJson);
      } catch {
        throw invalidFields({ body_json: ['must be JSON'] });
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalidFields({ body_json: ['must be an object'] });
      const keys = Object.keys(body).sort().join(',');
      if (keys !== 'code,data,message,success' && keys !== 'error_code,error_desc,success') {
        throw invalidFields({ body_json: ['must hold success, code, message, data or success, error_code, error_desc'] });
      }
      return { sign: signRsa2(canonicalJson(body as Record<string, unknown>), deps.keys.privateKey), signType: 'RSA2' };
    },

    async createPreTransfer(request) {
      const currency = request.currency;
      if (currency !== 'USD') throw invalidFields({ currency: ['only USD is allowed'] }, 'CURRENCY_NOT_ALLOWED');
      if (!isCurrency(currency)) throw invalidFields({ currency: ['unknown currency'] });
      const amountUnits = request.amountUnits;
      const print = fingerprint({ receiver_id: request.receiverId, sender_name: request.senderName, amount_units: amountUnits, currency });
      const existing = await findRow({ partner_id: request.partnerId, out_trade_no: request.outTradeNo });
      if (existing) {
        if (existing.request_fingerprint !== print) {
          throw new DomainError('already_exists', 'DUPLICATE_OUT_TRADE_NO', 'duplicate out_trade_no', { out_trade_no: ['duplicate out_trade_no'] });
        }
        return { preTransfer: toPreTransfer(existing) };
      }

      const receiver = await findReceiver(deps, request.receiverId);
      if (!receiver || receiver.status !== 'active' || !receiver.eligible) {
        throw new DomainError('failed_precondition', 'RECEIVER_NOT_ELIGIBLE', 'receiver not eligible');
      }
      const wallet = await deps.ledger.findAccount({ owner_type: 'user', owner_id: receiver.id, currency: 'USD', kind: 'wallet' });
      if (!wallet) throw new DomainError('failed_precondition', 'RECEIVER_NOT_ELIGIBLE', 'receiver has no USD wallet');
      const partner = await getPartner(deps.database, request.partnerId);
      if (!partner || partner.status !== 'active') throw unauthenticated();

      const id = `PT${randomBytes(16).toString('hex').toUpperCase()}`;
      const ttl = ttlSeconds();
      try {
        const row = await deps.database.transaction(async (trx) => {
          let pending;
          try {
            pending = await deps.ledger.createPendingTransfer(
              {
                idempotency_key: `${id}:hold`,
                debit_account_id: partner.float_account_id,
                credit_account_id: wallet.id,
                amount_units: amountUnits,
                timeout_seconds: ttl,
                description: `Area A pre-transfer ${id}`,
                metadata: { pre_transfer_id: id, partner_id: partner.id, out_trade_no: request.outTradeNo },
              },
              trx,
            );
          } catch (error) {
            if (error instanceof DomainError && error.reason === 'INSUFFICIENT_FUNDS') {
              throw new DomainError('failed_precondition', 'INSUFFICIENT_PARTNER_BALANCE', 'insufficient partner balance');
            }
            throw error;
          }
          const [inserted] = await trx<PreTransferRow>('pre_transfers')
            .insert({
              id,
              partner_id: partner.id,
              out_trade_no: request.outTradeNo,
              request_fingerprint: print,
              receiver_id: request.receiverId,
              receiver_user_id: receiver.id,
              receiver_name: receiver.full_name.slice(0, 96),
              sender_name: request.senderName,
              amount_units: amountUnits.toString(),
              currency,
              pending_transfer_id: pending.id,
              state: 'pending',
              ttl_seconds: ttl,
              expires_at: trx.raw(`now() + make_interval(secs => ?)`, [ttl]) as unknown as Date,
            })
            .returning('*');
          // Started inside the transaction: when the start fails nothing is written; when the commit fails the
          // workflow finds no row at expiry and its void is a no-op.
          await deps.temporal.client.workflow.start('preTransferWorkflow', {
            taskQueue: deps.temporal.taskQueue,
            workflowId: id,
            args: [{ pre_transfer_id: id, ttl_seconds: ttl }],
          });
          return inserted as PreTransferRow;
        });
        return { preTransfer: toPreTransfer(row) };
      } catch (error) {
        if ((error as { code?: string }).code === '23505') {
          // A concurrent create with the same out_trade_no won the race: answer as for a repeat.
          const winner = await findRow({ partner_id: request.partnerId, out_trade_no: request.outTradeNo });
          if (winner && winner.request_fingerprint === print) return { preTransfer: toPreTransfer(winner) };
          throw new DomainError('already_exists', 'DUPLICATE_OUT_TRADE_NO', 'duplicate out_trade_no', { out_trade_no: ['duplicate out_trade_no'] });
        }
        throw error;
      }
    },

    async confirmPreTransfer(request) {
      if (!ALPHANUMERIC_64.test(request.preTransferId)) throw notFound();
      const row = await findRow({ id: request.preTransferId, partner_id: request.partnerId });
      if (!row) throw notFound();
      if (row.state === 'confirmed') throw used();
      if (isExpired(row)) throw expired();
      const clash = await deps.database('pre_transfers')
        .where({ partner_id: request.partnerId, partner_transaction_id: request.partnerTransactionId })
        .first('id');
      if (clash) {
        throw new DomainError('already_exists', 'DUPLICATE_PARTNER_TRANSACTION_ID', 'duplicate partner_transaction_id', {
          partner_transaction_id: ['duplicate partner_transaction_id'],
        });
      }
      const handle = deps.temporal.client.workflow.getHandle(row.id);
      try {
        await handle.executeUpdate('confirm', { args: [{ partner_transaction_id: request.partnerTransactionId }] });
      } catch (error) {
        const type = failureType(error);
        if (type === 'PRE_TRANSFER_USED') throw used();
        if (type === 'PRE_TRANSFER_EXPIRED') throw expired();
        if (type === 'DUPLICATE_PARTNER_TRANSACTION_ID') {
          throw new DomainError('already_exists', 'DUPLICATE_PARTNER_TRANSACTION_ID', 'duplicate partner_transaction_id', {
            partner_transaction_id: ['duplicate partner_transaction_id'],
          });
        }
        if (!(error instanceof WorkflowUpdateFailedError)) {
          // The workflow may have completed meanwhile (confirmed by another call, or expired): answer from the row.
          const now = await findRow({ id: row.id });
          if (now?.state === 'confirmed') throw used();
          if (now && isExpired(now)) throw expired();
        }
        throw error;
      }
      const confirmed = await findRow({ id: row.id });
      if (!confirmed || confirmed.state !== 'confirmed') throw new Error(`pre-transfer ${row.id} not confirmed after its update`);
      return { preTransfer: toPreTransfer(confirmed) };
    },

    async queryTransfer(request) {
      const row = await findRow({ partner_id: request.partnerId, out_trade_no: request.outTradeNo });
      if (!row) throw new DomainError('not_found', 'TRANSFER_NOT_FOUND', 'unknown out_trade_no');
      if (row.state !== 'confirmed' && isExpired(row)) throw expired();
      return { preTransfer: toPreTransfer(row) };
    },
  };
}
