/**
 * Bank-account QR activation (issue 7; /tmp/area-c-instruments.md "Tokenize"): a tokenized bank account stays
 * `pending_activation` until someone opens the activation URL its QR image encodes and presses "Activate account".
 *
 *   activation code  base64url HMAC-SHA256(dataKey, "bank-account-activation:" + token): derived, never stored;
 *                    the row keeps its SHA-256 hex for lookup (activation_code_sha256)
 *   activation URL   PUBLIC_BASE_URL + MERCHANT_PREFIX + /instruments/bank-accounts/activate/<code>
 *   QR image URL     PUBLIC_BASE_URL + MERCHANT_PREFIX + /instruments/bank-accounts/<token>/activation-qr.png
 *
 * Activating (once) POSTs `{"event":"bank_account.activated","token","bank_number":"<last 4>","user_id"}` to the
 * account's call_back, best effort: one attempt, WEBHOOK_TIMEOUT_SECONDS, signed like Area B webhooks (the
 * merchant's signature header, hex HMAC-SHA256 of the body under its hmac_secret), outcome logged (never the
 * number); a failure changes nothing.
 */
import { createHmac } from 'node:crypto';
import { request } from 'undici';
import { hmacSha256Hex } from '../crypto/hmac';
import { sha256Hex } from '../crypto/secrets';
import { getMerchant, merchantHmacSecret } from '../onboarding';
import type { PlatformDeps } from '../platform';
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

/**
 * Notifies the account's call_back that it was activated. Never throws; resolves once the attempt is over.
 * @returns the HTTP status received, or undefined when the attempt failed.
 */
export async function notifyActivated(deps: PlatformDeps, instrument: Instrument, callBackUrl: string): Promise<number | undefined> {
  const body = JSON.stringify({ event: ACTIVATED_EVENT, token: instrument.token, bank_number: instrument.last4, user_id: instrument.userId === null ? null : Number(instrument.userId) });
  const timeoutMs = Math.round(deps.config.WEBHOOK_TIMEOUT_SECONDS * 1000);
  const log = { instrument_id: instrument.id, merchant_id: instrument.merchantId, bank_number_last4: instrument.last4 };
  try {
    const merchant = await getMerchant(deps.database, instrument.merchantId);
    const secret = await merchantHmacSecret(deps, instrument.merchantId);
    const response = await request(callBackUrl, {
      method: 'POST',
      body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        'content-type': 'application/json',
        [merchant?.signature_header ?? 'X-Signature']: hmacSha256Hex(secret, body),
        'x-webhook-event': ACTIVATED_EVENT,
      },
    });
    await response.body.dump();
    deps.logger.info({ ...log, status_code: response.statusCode }, 'bank account activation call_back sent');
    return response.statusCode;
  } catch (error) {
    deps.logger.warn({ ...log, error: ((error as Error).message || String(error)).slice(0, 200) }, 'bank account activation call_back failed');
    return undefined;
  }
}
