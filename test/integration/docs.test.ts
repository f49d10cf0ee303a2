/**
 * The reference documentation of the façade: every route the façade registers is in docs/openapi.yaml
 * (and every documented JSON route is registered), and /docs serves a Swagger UI page, rendered in Chromium, with
 * the document at /docs/openapi.yaml — from this host only (no CDN).
 */
import type Router from '@koa/router';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { chromiumPath } from '../support/chromium';
import { chromium } from 'playwright-core';
import { parse } from 'yaml';
import { createFacadeApp } from '../../rest-facade/app';
import type { FacadeState } from '../../rest-facade/context';
import { createAreaRouters } from '../../rest-facade/areas';
import { createLogger } from '../../src/logger';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const DOCUMENT_PATH = path.join(__dirname, '..', '..', 'docs', 'openapi.yaml');
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Routes of the façade that are the documentation itself, not part of the documented API. */
const UNDOCUMENTED_ROUTES = /^(GET|HEAD) \/docs(\/|$)/;

/** `/a/:token/b` and `/a/{pre_order_token}/b` → `/a/{}/b`. */
const normalize = (route: string) => route.replace(/:[A-Za-z0-9_]+/g, '{}').replace(/\{[^}]+\}/g, '{}');

let platform: TestPlatform;

beforeAll(async () => {
  platform = await startTestPlatform();
});

afterAll(async () => {
  await platform?.stop();
});

/** "METHOD /path" of every route registered on a façade built like the running one (HEAD left out). */
function registeredRoutes(): string[] {
  const app = createFacadeApp({
    clients: platform.clients,
    config: platform.config,
    logger: createLogger('silent', 'test'),
    areas: createAreaRouters(platform.config),
  });
  const routes = new Set<string>();
  for (const middleware of app.middleware as Array<{ router?: Router<FacadeState> }>) {
    for (const layer of middleware.router?.stack ?? []) {
      for (const method of layer.methods) if (method !== 'HEAD') routes.add(`${method} ${normalize(String(layer.path))}`);
    }
  }
  return [...routes].sort();
}

function documentedRoutes(): Array<{ route: string; tags: string[] }> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const document: any = parse(readFileSync(DOCUMENT_PATH, 'utf8'));
  const routes: Array<{ route: string; tags: string[] }> = [];
  for (const [route, item] of Object.entries<Record<string, { tags?: string[] }>>(document.paths)) {
    for (const method of HTTP_METHODS) {
      if (item[method]) routes.push({ route: `${method.toUpperCase()} ${normalize(route)}`, tags: item[method]!.tags ?? [] });
    }
  }
  return routes;
}

describe('docs/openapi.yaml against the façade', () => {
  it('documents every registered route (only /docs itself is exempt)', () => {
    const registered = registeredRoutes();
    expect(registered).toEqual(expect.arrayContaining(['POST /do-action', 'POST /partnerapi/v1/gateway', 'GET /api/v1/balance', 'GET /docs']));
    const documented = new Set(documentedRoutes().map((entry) => entry.route));
    const missing = registered.filter((route) => !UNDOCUMENTED_ROUTES.test(route) && !documented.has(route));
    expect(missing).toEqual([]);
  });

  it('registers every documented JSON route', () => {
    const registered = new Set(registeredRoutes());
    // The HTML pages of Area C are registered by the instruments capability; the route check above covers them
    // once registered (a page registered under another path is a missing route there).
    const json = documentedRoutes().filter((entry) => !entry.tags.includes('Area C pages'));
    expect(json.length).toBeGreaterThanOrEqual(9);
    expect(json.map((entry) => entry.route).filter((route) => !registered.has(route))).toEqual([]);
  });
});

describe('/docs', () => {
  it('serves the document as it is in the repository', async () => {
    const response = await fetch(`${platform.facadeUrl}/docs/openapi.yaml`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/yaml/);
    expect(await response.text()).toBe(readFileSync(DOCUMENT_PATH, 'utf8'));
  });

  it('serves the page and its assets locally, and nothing else under /docs/assets', async () => {
    const page = await fetch(`${platform.facadeUrl}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(sources.length).toBeGreaterThanOrEqual(4);
    for (const source of sources) {
      expect(source.startsWith('/docs/')).toBe(true);
      const asset = await fetch(`${platform.facadeUrl}${source}`);
      expect({ source, status: asset.status }).toEqual({ source, status: 200 });
      expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
    for (const bad of ['package.json', '..%2Fpackage.json', 'index.html', 'swagger-ui.js.map']) {
      expect((await fetch(`${platform.facadeUrl}/docs/assets/${bad}`)).status).toBe(404);
    }
  });

  it('renders the reference in a browser (offline: every request goes to the façade)', async () => {
    const browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
    try {
      const context = await browser.newContext();
      const requested: string[] = [];
      context.on('request', (request) => requested.push(request.url()));
      const page = await context.newPage();
      await page.goto(`${platform.facadeUrl}/docs`);
      await page.locator('.swagger-ui .info .title').filter({ hasText: 'Payments platform REST façade' }).waitFor({ timeout: 30_000 });
      await page.locator('.opblock-summary-path', { hasText: '/do-action' }).first().waitFor({ timeout: 30_000 });
      expect(await page.locator('.opblock').count()).toBeGreaterThanOrEqual(documentedRoutes().length);
      expect(requested.filter((url) => !url.startsWith(platform.facadeUrl) && !url.startsWith('data:'))).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
