/**
 * Area B contract as data (interface "Errors / Area B", platform decisions §4, §8): the envelopes, the messages
 * table and the field limits of the payin portal. The façade maps RPC failure reasons through `payinErrorFor`;
 * tests check these strings against payment-services-interface.md.
 */
import type { FieldViolations } from '../errors';

/** Area B route names used in the messages table. */
export type PayinRoute = 'payins' | 'status' | 'balance' | 'notifications';

export const PAYIN_MESSAGES = {
  validationErrors: 'Validation errors',
  upstreamUnavailable: 'Payin service is unavailable. Please try again later.',
  payinFailed: 'Unable to process payin request. Please contact support.',
  unauthorized: 'Unauthorized',
  topUpNotFound: 'Top-up not found.',
  validationError: 'Validation error',
  unauthenticated: 'Unauthenticated. Please provide valid credentials.',
  suspended: 'Merchant account is suspended',
  invalidSignature: 'Invalid signature',
  internal: 'Internal server error',
} as const;

/** Field limits of B1 (interface "Limits"). */
export const PAYIN_LIMITS = {
  minAmountUnits: 10_000n, // 0.01 USDT (6 decimals)
  memoMaxLength: 255,
  outTradeNoMaxLength: 255,
  currency: 'USDT',
} as const;

/** `PAYIN-` + 20 uppercase letters and digits (platform decisions §4). */
export const INVOICE_REFERENCE_PATTERN = /^PAYIN-[A-Z0-9]{20}$/;

/** Area B failure body (platform decisions §8). */
export interface PayinErrorBody {
  success: false;
  message: string;
  errors: FieldViolations | null;
}

/** Reasons the PayinService throws (DomainError.reason). */
export const PAYIN_REASONS = {
  unauthenticated: 'UNAUTHENTICATED',
  suspended: 'MERCHANT_SUSPENDED',
  validation: 'VALIDATION_FAILED',
  upstreamUnavailable: 'UPSTREAM_UNAVAILABLE',
  payinFailed: 'PAYIN_FAILED',
  notFound: 'PAYIN_NOT_FOUND',
  invalidSignature: 'INVALID_SIGNATURE',
  webhookNotFound: 'WEBHOOK_NOT_FOUND',
} as const;

/**
 * The one Area B error table: RPC failure reason + route → HTTP status and body. Anything unknown is the route's
 * 500 (the payins route's documented message; the others a generic one), never an internal message.
 */
export function payinErrorFor(route: PayinRoute, reason: string, fields: FieldViolations): { status: number; body: PayinErrorBody } {
  const body = (status: number, message: string, errors: FieldViolations | null = null) => ({
    status,
    body: { success: false as const, message, errors },
  });
  switch (reason) {
    case PAYIN_REASONS.unauthenticated:
      return body(401, route === 'balance' ? PAYIN_MESSAGES.unauthenticated : PAYIN_MESSAGES.unauthorized);
    case PAYIN_REASONS.suspended:
      return body(403, PAYIN_MESSAGES.suspended);
    case PAYIN_REASONS.validation:
    case 'INVALID_AMOUNT':
      return body(422, route === 'status' ? PAYIN_MESSAGES.validationError : PAYIN_MESSAGES.validationErrors, fields);
    case PAYIN_REASONS.upstreamUnavailable:
      return body(502, PAYIN_MESSAGES.upstreamUnavailable);
    case PAYIN_REASONS.notFound:
      return body(404, PAYIN_MESSAGES.topUpNotFound);
    case PAYIN_REASONS.invalidSignature:
      return body(401, PAYIN_MESSAGES.invalidSignature);
    default:
      return body(500, route === 'payins' ? PAYIN_MESSAGES.payinFailed : PAYIN_MESSAGES.internal);
  }
}
