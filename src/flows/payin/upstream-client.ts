/**
 * The upstream payin provider client (platform decisions §4), undici. Forwards the merchant's body byte for byte
 * with `Content-Type`, `Authorization: Bearer {UPSTREAM_API_KEY}`, `X-Invoice-Reference` and `X-Notify-Url`.
 * A 200 answer must be `{"qrcode": {"content": string, "image"?: string}, "trx_ref"?: string}`; anything else,
 * a timeout (`UPSTREAM_TIMEOUT_SECONDS`) or a refused connection is `UpstreamUnavailableError`.
 */
import { Agent, request, type Dispatcher } from 'undici';

export class UpstreamUnavailableError extends Error {
  constructor(detail: string) {
    super(`upstream payin server unavailable: ${detail}`);
    this.name = 'UpstreamUnavailableError';
  }
}

export interface UpstreamPayinAnswer {
  qr_content: string;
  /** Base64 PNG when the upstream sent one. */
  qr_image?: string;
  trx_ref?: string;
}

/**
 * The connections to the upstream provider, shared by payin forwarding and refunds (./upstream-refunds.ts). Its URLs
 * are the operator's choice, so it is not the outbound policy's guarded dispatcher (docs/security.md "Outbound
 * requests"); live mode requires them to be https (src/config.ts liveModeProblem).
 */
export const upstreamAgent = new Agent({ keepAliveTimeout: 10_000, connections: 64 });

/**
 * POSTs a JSON `body` to the upstream over `upstreamAgent`, with `Authorization: Bearer {api_key}` when one is set,
 * `headers` beside it, and `timeout_seconds` (UPSTREAM_TIMEOUT_SECONDS) on the headers, the body and the whole call.
 * Shared by payin forwarding and refund requests. @throws undici's error when no answer came (refused, timed out)
 */
export function postToUpstream(
  url: string,
  body: string | Uint8Array,
  options: { api_key?: string; timeout_seconds: number; headers: Record<string, string> },
): Promise<Dispatcher.ResponseData> {
  const timeoutMs = Math.round(options.timeout_seconds * 1000);
  return request(url, {
    method: 'POST',
    body,
    dispatcher: upstreamAgent,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal: AbortSignal.timeout(timeoutMs),
    headers: { 'content-type': 'application/json', ...(options.api_key ? { authorization: `Bearer ${options.api_key}` } : {}), ...options.headers },
  });
}

/**
 * POSTs `body` (the raw bytes) to `url`.
 * @param options.timeout_seconds header and body timeout (UPSTREAM_TIMEOUT_SECONDS)
 * @throws UpstreamUnavailableError for any answer but a well-formed 200, a timeout or a network error
 */
export async function forwardPayin(
  url: string,
  body: Uint8Array,
  options: { api_key?: string; invoice_reference: string; notify_url: string; timeout_seconds: number },
): Promise<UpstreamPayinAnswer> {
  let response;
  try {
    response = await postToUpstream(url, body, {
      api_key: options.api_key,
      timeout_seconds: options.timeout_seconds,
      headers: { 'x-invoice-reference': options.invoice_reference, 'x-notify-url': options.notify_url },
    });
  } catch (error) {
    throw new UpstreamUnavailableError((error as Error).message);
  }
  let text: string;
  try {
    text = await response.body.text();
  } catch (error) {
    throw new UpstreamUnavailableError(`reading the answer: ${(error as Error).message}`);
  }
  if (response.statusCode !== 200) throw new UpstreamUnavailableError(`HTTP ${response.statusCode}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UpstreamUnavailableError('answer is not JSON');
  }
  const answer = parsed as { qrcode?: { content?: unknown; image?: unknown }; trx_ref?: unknown };
  const content = answer?.qrcode?.content;
  if (typeof content !== 'string' || content === '') throw new UpstreamUnavailableError('answer has no qrcode.content');
  const image = answer.qrcode?.image;
  return {
    qr_content: content,
    ...(typeof image === 'string' && image !== '' ? { qr_image: image } : {}),
    ...(typeof answer.trx_ref === 'string' && answer.trx_ref !== '' ? { trx_ref: answer.trx_ref } : {}),
  };
}
