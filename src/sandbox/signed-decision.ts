/**
 * The sandbox upstream's one way of telling the platform a decision (a refund's or a payout's): the body POSTed to
 * the notify URL the platform gave, signed as the provider signs (`X-Upstream-Signature`: hex HMAC-SHA256 of the body
 * under the upstream webhook secret, docs/refunds.md "Providers").
 */
import { request } from 'undici';
import { hmacSha256Hex } from '../crypto/hmac';
import { stringifyJson } from '../money';

/** What the portal answered one notification: its status (0 when none came) and body, or the transport error. */
export interface SentDecision {
  body: string;
  status: number;
  answer: string;
  error?: string;
}

/**
 * Sends `sent.body` to `url` signed under `secret`, and records the portal's answer in `sent`.
 * @returns what the sandbox's own decide route answers its caller: the portal's status and body, or 502 with the error
 */
export async function sendSignedDecision(url: string, secret: string, sent: SentDecision): Promise<{ status: number; body: string }> {
  try {
    const response = await request(url, {
      method: 'POST',
      body: sent.body,
      headers: { 'content-type': 'application/json', 'x-upstream-signature': hmacSha256Hex(secret, sent.body) },
    });
    sent.status = response.statusCode;
    sent.answer = await response.body.text();
  } catch (error) {
    sent.error = (error as Error).message;
  }
  return { status: sent.status || 502, body: sent.error ? stringifyJson({ error: sent.error }) : sent.answer };
}
