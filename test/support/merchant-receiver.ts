/**
 * A merchant's webhook endpoint for tests: records every POST (raw body, headers), verifies the HMAC with the
 * merchant's hmac_secret under its signature header name (401 on mismatch, like a real receiver), and can answer
 * 500 for the first N attempts of each webhook id, or whenever `fail_when` says so.
 */
import http from 'node:http';
import type net from 'node:net';
import { verifyHmacSha256Hex } from '../../src/crypto/hmac';

export interface ReceivedWebhook {
  body: string;
  json: { success: boolean; code: number; event: string; data: Record<string, unknown> };
  headers: http.IncomingHttpHeaders;
  webhook_id: string;
  attempt: number;
  signature_valid: boolean;
  status: number;
  received_at: number;
}

/** Whether to answer 500 to this POST: its webhook id and which POST of that id it is (1, 2, …). */
export type FailWhen = (webhook_id: string, count: number) => boolean;

export interface MerchantReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Webhooks answered 2xx (what the merchant accepted). */
  accepted(): ReceivedWebhook[];
  /** Configures the secret and header used to verify signatures (after the merchant is created). */
  configure(options: { hmac_secret?: string; signature_header?: string; fail_first?: number; unavailable?: boolean; fail_when?: FailWhen | null }): void;
  /** Resolves once `predicate` holds for the received list (polls every 50 ms, up to `timeout_ms`). */
  waitFor(predicate: (received: ReceivedWebhook[]) => boolean, timeout_ms?: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

export async function startMerchantReceiver(
  options: { hmac_secret?: string; signature_header?: string; fail_first?: number } = {},
): Promise<MerchantReceiver> {
  const settings: { signature_header: string; fail_first: number; hmac_secret?: string; unavailable?: boolean; fail_when?: FailWhen | null } = {
    signature_header: 'X-Signature',
    fail_first: 0,
    ...options,
  };
  const received: ReceivedWebhook[] = [];
  const seen = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const webhook_id = String(req.headers['x-webhook-id'] ?? '');
      const count = (seen.get(webhook_id) ?? 0) + 1;
      seen.set(webhook_id, count);
      const signature = req.headers[settings.signature_header.toLowerCase()];
      const signature_valid =
        settings.hmac_secret !== undefined && verifyHmacSha256Hex(settings.hmac_secret, body, Array.isArray(signature) ? signature[0] : signature);
      const status = settings.unavailable ? 503 : !signature_valid ? 401 : count <= settings.fail_first || settings.fail_when?.(webhook_id, count) ? 500 : 200;
      let json: ReceivedWebhook['json'];
      try {
        json = JSON.parse(body);
      } catch {
        json = { success: false, code: 0, event: '', data: {} };
      }
      received.push({
        body,
        json,
        headers: req.headers,
        webhook_id,
        attempt: Number(req.headers['x-webhook-attempt'] ?? 0),
        signature_valid,
        status,
        received_at: Date.now(),
      });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status === 200 ? '{"ok":true}' : '{"ok":false}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/webhooks`,
    received,
    accepted: () => received.filter((item) => item.status === 200),
    configure(next) {
      Object.assign(settings, Object.fromEntries(Object.entries(next).filter(([, value]) => value !== undefined)));
    },
    async waitFor(predicate, timeout_ms = 30_000) {
      const deadline = Date.now() + timeout_ms;
      while (!predicate(received)) {
        if (Date.now() > deadline) throw new Error(`receiver condition not met within ${timeout_ms} ms (received ${received.length})`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return received;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
