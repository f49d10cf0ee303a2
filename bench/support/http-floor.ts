/**
 * The HTTP floor of the wallet bench: what a serving process of the façade's design spends on one signed Area C
 * `/do-action` request before any of the platform's own work. Node's HTTP server, Koa, the raw body read (the same
 * bound as the façade's), the JSON parse, the RSA2 signature checked against the merchant's public key (the
 * contract's own check, interface "Signature"), and a JSON answer of a transfer's size. No RPC, no database.
 *
 * Run by bench/wallet.ts as a process of its own, started like the measured one (`node --import tsx`):
 * `BENCH_FLOOR_PORT` (the port to listen on, 127.0.0.1), `BENCH_FLOOR_PUBLIC_KEY` (the merchant's public key, PEM).
 * A body whose signature fails is answered 401, so a floor that checks nothing cannot pass for one.
 */
import { createPublicKey } from 'node:crypto';
import http from 'node:http';
import Koa from 'koa';
import getRawBody from 'raw-body';
import { MAX_BODY_BYTES } from '../../rest-facade/app';
import { canonicalQueryString, verifyRsa2 } from '../../src/crypto/rsa2';

const port = Number(process.env.BENCH_FLOOR_PORT);
if (!Number.isInteger(port) || port <= 0) throw new Error('BENCH_FLOOR_PORT: a port number is required');
const publicKey = createPublicKey(process.env.BENCH_FLOOR_PUBLIC_KEY ?? '');

const app = new Koa();
app.use(async (ctx) => {
  const text = await getRawBody(ctx.req, { limit: MAX_BODY_BYTES, encoding: 'utf8' });
  const { sign, ...signed } = JSON.parse(text) as Record<string, unknown>;
  ctx.type = 'application/json';
  if (!verifyRsa2(canonicalQueryString(signed), sign, publicKey)) {
    ctx.status = 401;
    ctx.body = JSON.stringify({ success: false, code: 401, message: 'Unauthorized' });
    return;
  }
  ctx.body = JSON.stringify({ success: true, code: 200, message: 'Success', data: { reference: `TRF${String(signed.request_id)}` } });
});
http.createServer(app.callback()).listen(port, '127.0.0.1');
