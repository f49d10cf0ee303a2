/**
 * Admission control and slow clients, over real sockets: past the façade's in-flight and queue bounds a request is
 * answered at once with 503 in its area's envelope and Retry-After, nothing runs for it, probes still answer,
 * /readyz says the process is saturated, and the slot is given back; the RPC server refuses calls past its own
 * bounds with UNAVAILABLE. Slow request bodies (many connections, a byte at a time) cannot take the admission slots:
 * bodies are read before admission, one address holds FACADE_MAX_IN_FLIGHT_PER_ADDRESS requests at most, and a body
 * still arriving after FACADE_BODY_TIMEOUT_SECONDS is answered 408 and its connection closed. /healthz names a failing
 * check without its internal error text.
 */
import http from 'node:http';
import net from 'node:net';
import { Code } from '@connectrpc/connect';
import { request } from 'undici';
import { createMerchant } from '../../src/onboarding/merchants';
import { readRpcFailure } from '../../src/rpc/errors';
import { startTestPlatform, type TestPlatform } from '../support/platform';

async function post(url: string, path: string, body: string, headers: Record<string, string> = {}) {
  const response = await request(new URL(path, url), { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  return { status: response.statusCode, retryAfter: response.headers['retry-after'], body: (await response.body.json()) as Record<string, unknown> };
}

async function get(url: string, path: string) {
  const response = await request(new URL(path, url));
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

/** An upstream payin provider that holds every forwarded payin until `release()`, then answers 503. */
async function startHeldUpstream(): Promise<{ url: string; received: Promise<void>; release(): void; close(): Promise<void> }> {
  let arrived!: () => void;
  const received = new Promise<void>((resolve) => (arrived = resolve));
  const held: http.ServerResponse[] = [];
  let released = false;
  const server = http.createServer((req, res) => {
    req.resume();
    if (released) return void res.writeHead(503).end();
    held.push(res);
    arrived();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/payins`,
    received,
    release() {
      released = true;
      for (const res of held.splice(0)) res.writeHead(503).end();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('admission control', () => {
  let platform: TestPlatform;
  let upstream: Awaited<ReturnType<typeof startHeldUpstream>>;
  beforeAll(async () => {
    upstream = await startHeldUpstream();
    platform = await startTestPlatform({
      env: {
        FACADE_MAX_IN_FLIGHT: '1',
        FACADE_MAX_QUEUED: '0',
        RPC_MAX_IN_FLIGHT: '1',
        RPC_MAX_QUEUED: '0',
        UPSTREAM_PAYIN_URL: upstream.url,
        UPSTREAM_API_KEY: 'held-upstream-key',
        UPSTREAM_WEBHOOK_SECRET: 'held-upstream-secret',
        UPSTREAM_TIMEOUT_SECONDS: '60',
      },
    });
  });
  afterAll(async () => {
    await platform.stop();
    await upstream.close();
  });

  it('answers 503 in each area’s envelope at once while the façade is full, says so on /readyz, and admits again afterwards', async () => {
    const { credentials } = await createMerchant(platform.deps, { name: 'Held Payins', callback_url: 'https://held.example/hook' });
    expect(await get(platform.facadeUrl, '/readyz')).toEqual({ status: 200, body: { status: 'ready' } });
    // A payin creation waiting on its upstream holds the one admission slot.
    const held = post(platform.facadeUrl, '/api/v1/payins', JSON.stringify({ amount: 10, out_trade_no: 'HELD-1' }), { 'x-api-key': credentials.api_key });
    await upstream.received;
    const started = performance.now();
    const [areaA, areaB, areaC] = await Promise.all([
      post(platform.facadeUrl, '/partnerapi/v1/token', '{}'),
      post(platform.facadeUrl, '/api/v1/payins', '{}'),
      post(platform.facadeUrl, '/do-action', '{}'),
    ]);
    const health = await get(platform.facadeUrl, '/healthz');
    const readiness = await request(new URL('/readyz', platform.facadeUrl));
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(areaA).toEqual({ status: 503, retryAfter: '1', body: { success: false, error_code: 'SYSTEMERROR', error_desc: 'Server error or busy.' } });
    expect(areaB).toEqual({ status: 503, retryAfter: '1', body: { success: false, message: 'Service is busy. Please try again later.', errors: null } });
    expect(areaC).toEqual({
      status: 503,
      retryAfter: '1',
      body: { success: false, code: 503, message: 'Service Unavailable', error: { server: ['The service is busy. Please try again later.'] } },
    });
    expect(health.status).toBe(200);
    expect({ status: readiness.statusCode, retryAfter: readiness.headers['retry-after'], body: await readiness.body.json() }).toEqual({
      status: 503,
      retryAfter: '1',
      body: { status: 'saturated' },
    });

    // The held request answers once its upstream does, and its slot is given back.
    upstream.release();
    expect((await held).status).not.toBe(503);
    expect(await get(platform.facadeUrl, '/readyz')).toEqual({ status: 200, body: { status: 'ready' } });
    const after = await post(platform.facadeUrl, '/api/v1/payins', '{}');
    expect(after.status).toBe(401);
  });

  it('refuses RPC calls past the RPC server’s bounds with UNAVAILABLE and Retry-After 1 s', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, () =>
        platform.clients.admin.listServiceCredentials({}).then(
          () => 'ok',
          (error: unknown) => readRpcFailure(error),
        ),
      ),
    );
    const refused = outcomes.filter((outcome) => outcome !== 'ok');
    expect(outcomes.filter((outcome) => outcome === 'ok').length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const failure of refused) expect(failure).toMatchObject({ code: Code.Unavailable, reason: 'UNAVAILABLE', retryAfterSeconds: 1 });
    await expect(platform.clients.admin.listServiceCredentials({})).resolves.toBeDefined();
  });
});

/** A POST from local address `from` whose body of `length` bytes is sent one byte every `everyMs`; resolves with what the server answered and when the connection closed. */
function slowBody(url: string, from: string, length: number, everyMs: number): { answer: Promise<{ status: number | undefined; closed: boolean }> } {
  const target = new URL('/api/v1/payins', url);
  const socket = net.connect({ host: target.hostname, port: Number(target.port), localAddress: from });
  let text = '';
  let sent = 0;
  const timer = setInterval(() => {
    if (sent < length && socket.writable) {
      socket.write('x');
      sent += 1;
    }
  }, everyMs);
  socket.on('connect', () => socket.write(`POST ${target.pathname} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`));
  socket.on('data', (chunk) => (text += chunk.toString()));
  const answer = new Promise<{ status: number | undefined; closed: boolean }>((resolve) => {
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      resolve({ status: status ? Number(status) : undefined, closed: true });
    });
  });
  return { answer };
}

/** POST /api/v1/payins `{}` without an API key from local address `from`. */
function postFrom(url: string, from: string): Promise<{ status: number; retryAfter?: string; body: unknown }> {
  return new Promise((resolve, reject) => {
    const target = new URL('/api/v1/payins', url);
    const sent = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', localAddress: from, headers: { 'content-type': 'application/json' } }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode!, retryAfter: response.headers['retry-after'], body: JSON.parse(text) as unknown }));
    });
    sent.on('error', reject);
    sent.end('{}');
  });
}

describe('slow clients', () => {
  const LIMITS = {
    FACADE_MAX_IN_FLIGHT: '4',
    FACADE_MAX_QUEUED: '4',
    FACADE_MAX_IN_FLIGHT_PER_ADDRESS: '8',
    FACADE_HEADERS_TIMEOUT_SECONDS: '2',
    FACADE_BODY_TIMEOUT_SECONDS: '2',
  };
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ roles: ['api', 'facade'], env: LIMITS });
  });
  afterAll(() => platform.stop());

  it('cannot take the admission slots with bodies sent a byte at a time: a normal request still answers, each address holds its share, and every slow body is cut at its deadline', async () => {
    // Ten addresses × eight slow bodies: ten times the slots and the queue together.
    const addresses = Array.from({ length: 10 }, (_, index) => `127.0.0.${index + 10}`);
    const slow = addresses.flatMap((address) => Array.from({ length: 8 }, () => slowBody(platform.facadeUrl, address, 1000, 100)));
    // Once the eight slow bodies of an address are all in flight, its next request is refused at once, in its area's
    // envelope (until then a quick request of that address is answered as usual: 401, no API key).
    let overShare = await postFrom(platform.facadeUrl, addresses[0]!);
    for (let tries = 0; tries < 100 && overShare.status === 401; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      overShare = await postFrom(platform.facadeUrl, addresses[0]!);
    }
    expect(overShare).toEqual({ status: 503, retryAfter: '1', body: { success: false, message: 'Service is busy. Please try again later.', errors: null } });
    // Another client's request is admitted and answered while every slow body is still arriving.
    expect(await postFrom(platform.facadeUrl, '127.0.0.2')).toMatchObject({ status: 401 });
    expect(await get(platform.facadeUrl, '/readyz')).toEqual({ status: 200, body: { status: 'ready' } });
    // Every slow body is answered 408 and its connection closed once its deadline passed.
    const answers = await Promise.all(slow.map((one) => one.answer));
    expect(answers).toEqual(Array(slow.length).fill({ status: 408, closed: true }));
  });

  it('names a failing check on /healthz without its internal error text', async () => {
    const name = platform.databaseName;
    const admin = platform.deps.database;
    const other = await import('pg').then(({ default: pg }) => new pg.Client({ connectionString: `${process.env.PAYMENTS_TEST_PG_SERVER_URL}/postgres` }));
    await other.connect();
    try {
      await other.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await other.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
      let health = await get(platform.facadeUrl, '/healthz');
      for (let tries = 0; tries < 20 && health.status === 200; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        health = await get(platform.facadeUrl, '/healthz');
      }
      expect(health).toEqual({ status: 503, body: { status: 'degraded', checks: { database: 'failing', temporal: 'ok' } } });
      expect(await get(platform.facadeUrl, '/readyz')).toEqual({ status: 503, body: { status: 'degraded', checks: { database: 'failing', temporal: 'ok' } } });
    } finally {
      await other.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      await other.end();
    }
    // The pool reconnects: healthy again.
    let health = await get(platform.facadeUrl, '/healthz');
    for (let tries = 0; tries < 40 && health.status !== 200; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      health = await get(platform.facadeUrl, '/healthz');
    }
    expect(health).toEqual({ status: 200, body: { status: 'ok', checks: { database: 'ok', temporal: 'ok' } } });
    await admin.raw('select 1');
  });
});
