/**
 * Admission control: past the façade's in-flight and queue bounds a request is answered at once with 503 in its
 * area's envelope and Retry-After, nothing runs for it, health checks still answer, and the slot is given back;
 * the RPC server refuses calls past its own bounds with UNAVAILABLE.
 */
import http from 'node:http';
import { Code } from '@connectrpc/connect';
import { request } from 'undici';
import { readRpcFailure } from '../../src/rpc/errors';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** A POST whose body is only half sent: it holds its admission slot until `finish()`. */
function heldRequest(url: string, path: string): { finish(): Promise<number> } {
  const target = new URL(path, url);
  const body = '{"hold":"' + 'x'.repeat(64) + '"}';
  const pending = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(body.length) } });
  const status = new Promise<number>((resolve, reject) => {
    pending.on('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    pending.on('error', reject);
  });
  pending.write(body.slice(0, 10));
  return {
    async finish() {
      pending.end(body.slice(10));
      return status;
    },
  };
}

async function post(url: string, path: string, body: string) {
  const response = await request(new URL(path, url), { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  return { status: response.statusCode, retryAfter: response.headers['retry-after'], body: (await response.body.json()) as Record<string, unknown> };
}

describe('admission control', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({
      env: { FACADE_MAX_IN_FLIGHT: '1', FACADE_MAX_QUEUED: '0', RPC_MAX_IN_FLIGHT: '1', RPC_MAX_QUEUED: '0' },
    });
  });
  afterAll(() => platform.stop());

  it('answers 503 in each area’s envelope at once while the façade is full, and admits again afterwards', async () => {
    const held = heldRequest(platform.facadeUrl, '/api/v1/payins');
    // Wait until the held request owns the one slot (its headers have reached the façade).
    for (let tries = 0; tries < 100; tries += 1) {
      const probe = await post(platform.facadeUrl, '/login', '{}');
      if (probe.status === 503) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const started = performance.now();
    const [areaA, areaB, areaC] = await Promise.all([
      post(platform.facadeUrl, '/partnerapi/v1/token', '{}'),
      post(platform.facadeUrl, '/api/v1/payins', '{}'),
      post(platform.facadeUrl, '/do-action', '{}'),
    ]);
    const health = await request(new URL('/healthz', platform.facadeUrl));
    await health.body.dump();
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(areaA).toEqual({ status: 503, retryAfter: '1', body: { success: false, error_code: 'SYSTEMERROR', error_desc: 'Server error or busy.' } });
    expect(areaB).toEqual({ status: 503, retryAfter: '1', body: { success: false, message: 'Service is busy. Please try again later.', errors: null } });
    expect(areaC).toEqual({
      status: 503,
      retryAfter: '1',
      body: { success: false, code: 503, message: 'Service Unavailable', error: { server: ['The service is busy. Please try again later.'] } },
    });
    expect(health.statusCode).toBe(200);

    // The held request runs when its body arrives (401: no API key), and its slot is given back.
    expect(await held.finish()).toBe(401);
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
