/**
 * Bank-account QR activation (docs/area-c.md "Tokenization"): a tokenized bank account stays
 * `pending_activation` until someone opens the activation URL its QR image encodes and presses "Activate account".
 *
 *   activation code  base64url HMAC-SHA256(dataKey, "bank-account-activation:" + token): derived, never stored;
 *                    the row keeps its SHA-256 hex for lookup (activation_code_sha256)
 *   activation URL   PUBLIC_BASE_URL + MERCHANT_PREFIX + /instruments/bank-accounts/activate/<code>
 *   QR image URL     PUBLIC_BASE_URL + MERCHANT_PREFIX + /instruments/bank-accounts/<token>/activation-qr.png
 *
 * Activating (once) announces `{"event":"bank_account.activated","token","bank_number":"<last 4>","user_id"}` to the
 * account's call_back through the platform's durable webhook sender (src/webhooks): recorded with the activation,
 * signed like Area B webhooks (the merchant's signature header, hex HMAC-SHA256 of the body under its hmac_secret,
 * X-Webhook-Id, X-Webhook-Attempt), retried with backoff and every attempt recorded (never the number).
 */
import { createHmac } from 'node:crypto';
import type { Knex } from '../db/knex';
import { sha256Hex } from '../crypto/secrets';
import type { PlatformDeps } from '../platform-deps';
import { recordWebhookEvent } from '../webhooks';
import type { Instrument } from './store';

export const ACTIVATED_EVENT = 'bank_account.activated';

const CODE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** The activation code of a bank account token (43 base64url characters). */
export function activationCode(dataKey: Buffer, token: string): string {
  return createHmac('sha256', dataKey).update(`bank-account-activation:${token}`, 'utf8').digest('base64url');
}

/** The stored lookup form of an activation code; undefined when the text cannot be a code. */
export function activationCodeSha256(code: string): string | undefined {
  return CODE_PATTERN.test(code) ? sha256Hex(code) : undefined;
}

function base(deps: Pick<PlatformDeps, 'config'>): string {
  return `${deps.config.PUBLIC_BASE_URL}${deps.config.MERCHANT_PREFIX}`;
}

export function activationUrl(deps: Pick<PlatformDeps, 'config'>, code: string): string {
  return `${base(deps)}/instruments/bank-accounts/activate/${code}`;
}

export function qrImageUrl(deps: Pick<PlatformDeps, 'config'>, token: string): string {
  return `${base(deps)}/instruments/bank-accounts/${token}/activation-qr.png`;
}

/** The stable webhook id of a bank account's activation call-back (one per account, ever). */
export function activationWebhookId(token: string): string {
  return `WH-ACT-${token}`;
}

/**
 * Records the activation call-back of `instrument` to `callBackUrl` inside the activation's transaction; returns the
 * webhook id whose delivery to start after the commit.
 */
export function recordActivationCallBack(trx: Knex.Transaction, instrument: Instrument, callBackUrl: string | null): Promise<string | null> {
  const body = JSON.stringify({
    event: ACTIVATED_EVENT,
    token: instrument.token,
    bank_number: instrument.last4,
    user_id: instrument.userId === null ? null : Number(instrument.userId),
  });
  return recordWebhookEvent(trx, {
    id: activationWebhookId(instrument.token),
    merchant_id: instrument.merchantId,
    subject_reference: instrument.token,
    event: ACTIVATED_EVENT,
    body,
    url: callBackUrl,
  });
}
