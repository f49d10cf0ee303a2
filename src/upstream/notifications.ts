/**
 * The upstream provider's notifications (platform decisions §4; docs/refunds.md "Providers"): the one door
 * `POST /api/v1/upstream/notifications` reaches, as the PayinService's ApplyUpstreamNotification RPC. It verifies
 * `X-Upstream-Signature` (hex HMAC-SHA256 of the raw bytes under UPSTREAM_WEBHOOK_SECRET, compared in constant time)
 * before a single field is read, tells which kind of notification the verified body is, and hands it straight to that
 * kind's flow: a payin's to the payin flow (which reads it with its own rules), a refund's decision, read here, to the
 * refund flow (payouts add theirs). The flows are handed in by the composition root: this capability knows none.
 *
 * A refund notification: `{"refund_reference", "status": "refund_succeeded" | "refund_failed", "amount", "currency":
 * "USDT", "trx_ref"?, "refund_trx_ref"?, "failure_reason"?}`. Every body with a `refund_reference` member is one; every
 * other body is a payin notification. The statuses of the two kinds are disjoint as well.
 *
 * A payout notification (docs/payouts.md "Providers"): `{"payout_reference", "status": "payout_succeeded" |
 * "payout_failed", "amount", "currency": "USDT", "payout_trx_ref"?, "failure_reason"?}`: every body with a
 * `payout_reference` member (and none of `refund_reference`) is one, dispatched straight to the payout flow.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { verifyHmacSha256Hex } from '../crypto/hmac';
import { invalidFields, reasonError, type FieldViolations } from '../errors';
import { journaled } from '../events';
import type { ApplyUpstreamNotificationRequest } from '../gen/payments/payin/v1/payin_pb';
import { AmountError, isLosslessNumber, parseJsonObject, readAmount } from '../money';
import type { PlatformDeps } from '../platform-deps';
import { clientAddressOf } from '../rpc/client-address';
import { isReference, PAYOUT_LIMITS, providerText, REFUND_LIMITS } from './client';
import { UPSTREAM_REASONS } from './reasons';

declare const verified: unique symbol;

/** Bytes whose `X-Upstream-Signature` verified: only `verifyUpstreamBody` makes one. */
export type VerifiedUpstreamBody = Uint8Array & { readonly [verified]: true };

/**
 * The upstream's signature over the raw bytes, checked in constant time.
 * @param secret UPSTREAM_WEBHOOK_SECRET; unset refuses every notification
 * @throws DomainError UPSTREAM_SIGNATURE_INVALID
 */
export function verifyUpstreamBody(secret: string | undefined, signed_body: Uint8Array, signature: string | undefined | null): VerifiedUpstreamBody {
  if (!secret || !verifyHmacSha256Hex(secret, signed_body, signature)) throw reasonError(UPSTREAM_REASONS, 'UPSTREAM_SIGNATURE_INVALID', 'invalid upstream signature');
  return signed_body as VerifiedUpstreamBody;
}

/**
 * Which kind of upstream notification `signed_body` is: `refund` when it is a JSON object with a `refund_reference`
 * member (whatever its value; read by `readRefundNotification`), else `payin` (which the payin flow then accepts or
 * refuses).
 */
export function upstreamNotificationKind(signed_body: Uint8Array): 'payin' | 'refund' | 'payout' {
  const body = parseJsonObject(Buffer.from(signed_body).toString('utf8'));
  if (body && Object.hasOwn(body, 'refund_reference')) return 'refund';
  return body && Object.hasOwn(body, 'payout_reference') ? 'payout' : 'payin';
}

/** A payout notification's fields, read from verified bytes. */
export interface UpstreamPayoutNotification {
  payout_reference: string;
  status: 'payout_succeeded' | 'payout_failed';
  /** Minor units of USDT, exact. */
  amount_units: bigint;
  currency: 'USDT';
  /** The payout's transaction reference: always present on `payout_succeeded`. */
  payout_trx_ref?: string;
  /** On `payout_failed`: the provider's reason (bounded, control characters replaced), possibly empty. */
  failure_reason?: string;
}

/**
 * A money-out notification's `amount` in minor units of USDT (0 when it fails, its problem in `fields.amount`), and
 * its optional `currency`, which may only be USDT (`fields.currency`).
 */
function readUsdtAmount(body: Record<string, unknown>, fields: FieldViolations): bigint {
  let amount_units = 0n;
  if (!isLosslessNumber(body.amount)) {
    fields.amount = ['not_a_number'];
  } else {
    try {
      amount_units = readAmount(body.amount, 'USDT');
    } catch (error) {
      if (!(error instanceof AmountError)) throw error;
      fields.amount = [error.problem];
    }
  }
  if (body.currency !== undefined && body.currency !== 'USDT') fields.currency = ['invalid'];
  return amount_units;
}

/**
 * Reads a payout notification from its verified bytes, field by field, before anything is recorded.
 * @throws DomainError VALIDATION_FAILED (`body`, `payout_reference`, `status`, `amount`, `currency`, `payout_trx_ref`,
 *   `failure_reason`)
 */
export function readPayoutNotification(signed_body: Uint8Array): UpstreamPayoutNotification {
  const body = parseObject(signed_body);
  if (!body) throw invalidFields({ body: ['The request body must be a JSON object.'] });
  const fields: FieldViolations = {};
  const payout_reference = body.payout_reference;
  if (payout_reference === undefined || payout_reference === null || payout_reference === '') fields.payout_reference = ['required'];
  else if (!isReference(payout_reference, PAYOUT_LIMITS.payout_reference)) fields.payout_reference = ['invalid'];
  const status = body.status;
  if (status !== 'payout_succeeded' && status !== 'payout_failed') fields.status = ['invalid'];
  const amount_units = readUsdtAmount(body, fields);
  const payout_trx_ref = body.payout_trx_ref;
  if (payout_trx_ref !== undefined && !isReference(payout_trx_ref, PAYOUT_LIMITS.payout_trx_ref)) fields.payout_trx_ref = ['invalid'];
  if (status === 'payout_succeeded' && payout_trx_ref === undefined) fields.payout_trx_ref = ['required'];
  if (body.failure_reason !== undefined && typeof body.failure_reason !== 'string') fields.failure_reason = ['invalid'];
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
  return {
    payout_reference: payout_reference as string,
    status: status as UpstreamPayoutNotification['status'],
    amount_units,
    currency: 'USDT',
    ...(payout_trx_ref !== undefined ? { payout_trx_ref: payout_trx_ref as string } : {}),
    ...(status === 'payout_failed' ? { failure_reason: providerText(body.failure_reason) } : {}),
  };
}

/** A refund notification's fields, read from verified bytes. */
export interface UpstreamRefundNotification {
  refund_reference: string;
  status: 'refund_succeeded' | 'refund_failed';
  /** Minor units of USDT, exact (the JSON number read without a float). */
  amount_units: bigint;
  currency: 'USDT';
  /** The payment refunded, when the provider names it. */
  trx_ref?: string;
  /** The refund's own transaction reference: always present on `refund_succeeded`. */
  refund_trx_ref?: string;
  /** On `refund_failed`: the provider's reason (bounded, control characters replaced), possibly empty. */
  failure_reason?: string;
}

function parseObject(signed_body: Uint8Array): Record<string, unknown> | undefined {
  return parseJsonObject(Buffer.from(signed_body).toString('utf8'));
}

/** Checks an optional reference field; records its problem in `fields`. */
function optionalReference(body: Record<string, unknown>, field: 'trx_ref' | 'refund_trx_ref', fields: FieldViolations): string | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (!isReference(value, REFUND_LIMITS[field])) fields[field] = ['invalid'];
  return value as string;
}

/**
 * Reads a refund notification from its verified bytes (`verifyUpstreamBody`), field by field, before anything is
 * recorded.
 * @throws DomainError VALIDATION_FAILED (every failing field: `body`, `refund_reference`, `status`, `amount` with
 *   the money module's problem, `currency`, `trx_ref`, `refund_trx_ref`, `failure_reason`)
 */
export function readRefundNotification(signed_body: Uint8Array): UpstreamRefundNotification {
  const body = parseObject(signed_body);
  if (!body) throw invalidFields({ body: ['The request body must be a JSON object.'] });
  const fields: FieldViolations = {};
  const refund_reference = body.refund_reference;
  if (refund_reference === undefined || refund_reference === null || refund_reference === '') fields.refund_reference = ['required'];
  else if (!isReference(refund_reference, REFUND_LIMITS.refund_reference)) fields.refund_reference = ['invalid'];
  const status = body.status;
  if (status !== 'refund_succeeded' && status !== 'refund_failed') fields.status = ['invalid'];
  const amount_units = readUsdtAmount(body, fields);
  const trx_ref = optionalReference(body, 'trx_ref', fields);
  const refund_trx_ref = optionalReference(body, 'refund_trx_ref', fields);
  if (status === 'refund_succeeded' && refund_trx_ref === undefined) fields.refund_trx_ref = ['required'];
  if (body.failure_reason !== undefined && typeof body.failure_reason !== 'string') fields.failure_reason = ['invalid'];
  if (Object.keys(fields).length > 0) throw invalidFields(fields);
  return {
    refund_reference: refund_reference as string,
    status: status as UpstreamRefundNotification['status'],
    amount_units,
    currency: 'USDT',
    ...(trx_ref !== undefined ? { trx_ref } : {}),
    ...(refund_trx_ref !== undefined ? { refund_trx_ref } : {}),
    ...(status === 'refund_failed' ? { failure_reason: providerText(body.failure_reason) } : {}),
  };
}

/**
 * The notification door for a refund alone: `verifyUpstreamBody`, then `readRefundNotification`.
 * @throws DomainError UPSTREAM_SIGNATURE_INVALID, then VALIDATION_FAILED
 */
export function openRefundNotification(secret: string | undefined, signed_body: Uint8Array, signature: string | undefined | null): UpstreamRefundNotification {
  return readRefundNotification(verifyUpstreamBody(secret, signed_body, signature));
}

/** What the door answers (ApplyUpstreamNotificationResponse): whether this notification changed anything, and of what. */
export interface UpstreamNotificationAnswer {
  applied: boolean;
  /** The payin concerned ('' for a refund the platform does not know); a payout's notification: the payout reference. */
  invoiceReference: string;
  status: string;
}

/** Where each kind of verified notification goes: its flow, handed in by the composition root. */
export interface UpstreamNotificationHandlers {
  /** A payin's notification, its bytes verified (the payin flow reads, records and hands it to its run). */
  payin(body: VerifiedUpstreamBody): Promise<UpstreamNotificationAnswer>;
  /** A refund's decision, read (the refund flow records it as the decision's authority and tells its run). */
  refund(notification: UpstreamRefundNotification, raw_body: string): Promise<UpstreamNotificationAnswer>;
  /** A payout's decision, read (the payout flow records it as the decision's authority and tells its run). */
  payout(notification: UpstreamPayoutNotification, raw_body: string): Promise<UpstreamNotificationAnswer>;
}

/**
 * The ApplyUpstreamNotification RPC: journaled as the upstream's request, its signature verified, then dispatched by
 * kind to its flow.
 * @throws DomainError UPSTREAM_SIGNATURE_INVALID (nothing read, nothing recorded), VALIDATION_FAILED, and what the
 *   flow's handler throws
 */
export function createUpstreamNotifications(
  deps: PlatformDeps,
  handlers: UpstreamNotificationHandlers,
): (request: ApplyUpstreamNotificationRequest, context: HandlerContext) => Promise<UpstreamNotificationAnswer> {
  const dispatch = (request: ApplyUpstreamNotificationRequest): Promise<UpstreamNotificationAnswer> => {
    const body = verifyUpstreamBody(deps.config.UPSTREAM_WEBHOOK_SECRET, request.signedBody, request.signature);
    const kind = upstreamNotificationKind(body);
    if (kind === 'payin') return handlers.payin(body);
    if (kind === 'payout') return handlers.payout(readPayoutNotification(body), Buffer.from(body).toString('utf8'));
    return handlers.refund(readRefundNotification(body), Buffer.from(body).toString('utf8'));
  };
  return (request, context) =>
    journaled(
      deps,
      { owner_kind: 'upstream', action: 'area-b.upstream_notification', client_address: clientAddressOf(context) },
      () => dispatch(request),
      (answer) => answer.invoiceReference,
    );
}
