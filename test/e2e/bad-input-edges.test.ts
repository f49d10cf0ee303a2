/**
 * The façade's own answers stay in each area's envelope: a body over the limit is 413 in the area's envelope and the
 * connection closes cleanly (the next request on a pooled client is answered at once); a wrong method on a
 * documented route is 405 with Allow; an unknown route is 404 in the envelope of the area whose path it is; hosted
 * pages answer HTML. Nothing answers plain text or a generic shape.
 */
import { Agent, request } from 'undici';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const OVERSIZED = 'x'.repeat(1_048_576 + 10);

describe('façade edges', () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startTestPlatform({ roles: ['api', 'facade'] });
  });
  afterAll(() => platform.stop());

  const json = async (path: string, init: { method?: string; body?: string } = {}) => {
    const response = await fetch(`${platform.facadeUrl}${path}`, { method: init.method ?? 'POST', body: init.body, headers: { 'content-type': 'application/json' } });
    const text = await response.text();
    return { status: response.status, type: response.headers.get('content-type') ?? '', allow: response.headers.get('allow'), text, body: text ? JSON.parse(text) : undefined };
  };

  it.each([
    ['/partnerapi/v1/gateway', { success: false, error_code: 'VALIDATIONERROR', error_desc: 'the request body is too large' }],
    ['/api/v1/payins', { success: false, message: 'Payload Too Large.', errors: null }],
    ['/do-action', { success: false, code: 413, message: 'Payload Too Large', error: { body: ['The request body may not be greater than 1048576 bytes.'] } }],
  ])('answers an oversized body on %s with 413 in the area envelope', async (path, body) => {
    const reply = await json(path, { body: OVERSIZED });
    expect(reply.status).toBe(413);
    expect(reply.body).toEqual(body);
  });

  it('closes the connection cleanly after a 413: the next request on the same pooled client is answered', async () => {
    const agent = new Agent({ connections: 1, keepAliveTimeout: 10_000 });
    try {
      const big = await request(`${platform.facadeUrl}/api/v1/payins`, { method: 'POST', body: OVERSIZED, dispatcher: agent, headers: { 'content-type': 'application/json' } });
      expect(big.statusCode).toBe(413);
      expect(big.headers.connection).toBe('close');
      await big.body.text();
      const next = await request(`${platform.facadeUrl}/api/v1/balance`, { dispatcher: agent, headersTimeout: 3_000 });
      expect(next.statusCode).toBe(401);
      expect(await next.body.json()).toMatchObject({ success: false });
    } finally {
      await agent.close();
    }
  });

  it('answers 50 oversized requests in a row, each with its 413 envelope', async () => {
    for (let index = 0; index < 50; index += 1) {
      const reply = await json('/api/v1/payins', { body: OVERSIZED });
      expect(reply.status).toBe(413);
      expect(reply.body).toMatchObject({ success: false, message: 'Payload Too Large.' });
    }
  });

  it.each([
    ['GET', '/partnerapi/v1/gateway', 'POST', { success: false, error_code: 'VALIDATIONERROR', error_desc: 'method not allowed' }],
    ['PUT', '/api/v1/payins', 'POST', { success: false, message: 'Method Not Allowed.', errors: null }],
    ['POST', '/api/v1/balance', 'HEAD, GET', { success: false, message: 'Method Not Allowed.', errors: null }],
    ['GET', '/do-action', 'POST', { success: false, code: 405, message: 'Method Not Allowed', error: { method: ['The method is not allowed on this route.'] } }],
  ])('answers %s %s with 405, Allow and the area envelope', async (method, path, allow, body) => {
    const reply = await json(path, { method });
    expect(reply.status).toBe(405);
    expect(reply.allow).toBe(allow);
    expect(reply.body).toEqual(body);
  });

  it('answers HEAD on a POST route with 405 and Allow, no body', async () => {
    const response = await fetch(`${platform.facadeUrl}/do-action`, { method: 'HEAD' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
  });

  it.each([
    ['/partnerapi/v2/unknown', { success: false, error_code: 'NOTEXIST', error_desc: 'No such route.' }],
    ['/api/v1/unknown', { success: false, message: 'Not Found.', errors: null }],
    ['/login/extra', { success: false, code: 404, message: 'Not Found', error: { route: ['The route does not exist.'] } }],
    ['/nowhere', { success: false, code: 404, message: 'Not Found' }],
  ])('answers an unknown route %s with 404 in its area envelope', async (path, body) => {
    const reply = await json(path);
    expect(reply.status).toBe(404);
    expect(reply.type).toMatch(/^application\/json/);
    expect(reply.body).toEqual(body);
  });

  it('answers HTML on the hosted pages: an unknown page, a wrong method, a body too large', async () => {
    for (const [method, path, status, body] of [
      ['GET', '/pre-order/unknown/extra/segments', 404, undefined],
      ['PUT', '/pre-order/PO123', 405, undefined],
      ['POST', '/pre-order/PO123/pay', 413, OVERSIZED],
    ] as const) {
      const response = await fetch(`${platform.facadeUrl}${path}`, { method, body });
      expect({ path, status: response.status }).toEqual({ path, status });
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    }
  });
});
